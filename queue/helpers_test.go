package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// testEnv is one embedded server, one connection and one opened queue.
type testEnv struct {
	srv *Embedded
	nc  *nats.Conn
	q   *Queue
	cfg Config
}

// fastConfig keeps the real structure but shrinks every delay.
func fastConfig() Config {
	return Config{
		AckWait:        2 * time.Second,
		MaxDeliver:     5,
		MaxJobDuration: time.Minute,
		RetryDelays:    []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond, 100 * time.Millisecond},
		PollWait:       500 * time.Millisecond,
		EventAckWait:   2 * time.Second,
	}
}

func newEnv(t testing.TB, cfg Config) *testEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv, err := StartEmbedded(ctx, EmbeddedConfig{StoreDir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatalf("start embedded: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := Connect(ctx, ConnConfig{URL: srv.ClientURL(), Name: t.Name()})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	q, err := Open(ctx, nc, cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return &testEnv{srv: srv, nc: nc, q: q, cfg: cfg}
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond every 20 ms until it holds or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, detail := cond()
		if ok {
			return
		}
		last = detail
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s (last: %s)", timeout, what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *testEnv) streamInfo(t testing.TB, name string) *jetstream.StreamInfo {
	t.Helper()
	ctx := testCtx(t, 5*time.Second)
	s, err := e.q.js.Stream(ctx, name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("stream %s info: %v", name, err)
	}
	return info
}

func (e *testEnv) consumerInfo(t testing.TB) *jetstream.ConsumerInfo {
	t.Helper()
	ctx := testCtx(t, 5*time.Second)
	c, err := e.q.js.Consumer(ctx, StreamJobs, ConsumerWorkers)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatalf("consumer info: %v", err)
	}
	return info
}

func (e *testEnv) record(t testing.TB, id string) Record {
	t.Helper()
	rec, _, err := e.q.Get(testCtx(t, 5*time.Second), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return rec
}

func (e *testEnv) submit(t testing.TB, id string) Record {
	t.Helper()
	rec, created, err := e.q.Submit(testCtx(t, 5*time.Second), Record{ID: id, Kind: KindGeneration, Owner: "acct_1"})
	if err != nil || !created {
		t.Fatalf("submit %s: created=%v err=%v", id, created, err)
	}
	return rec
}

func (e *testEnv) consumer(t testing.TB) *Consumer {
	t.Helper()
	c, err := e.q.Consumer(testCtx(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *testEnv) next(t testing.TB, c *Consumer, wait time.Duration) *Delivery {
	t.Helper()
	d, err := c.Next(testCtx(t, wait))
	if err != nil {
		t.Fatalf("next: %v", err)
	}
	return d
}

// dlq returns the dead letters in VFX_DLQ.
func (e *testEnv) dlq(t testing.TB) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := testCtx(t, 5*time.Second)
	s, err := e.q.js.Stream(ctx, StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("dlq seq %d: %v", seq, err)
		}
		out = append(out, m)
	}
	return out
}

func jobID(i int) string { return fmt.Sprintf("gen_%04d", i) }
