package account

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/queue"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// env is one embedded NATS server and a JetStream handle on it.
type env struct {
	js    jetstream.JetStream
	clock *clock
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv, err := queue.StartEmbedded(ctx, queue.EmbeddedConfig{StoreDir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatalf("start embedded nats: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	return &env{js: connect(t, srv.ClientURL()), clock: newClock(time.Date(2026, 3, 14, 12, 0, 10, 0, time.UTC))}
}

func connect(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	return js
}

// service opens a Service (a "replica") on the env's server with its clock.
func (e *env) service(t testing.TB) *Service {
	t.Helper()
	s, err := Open(testCtx(t), e.js, Config{Now: e.clock.Now})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func ptr[T any](v T) *T { return &v }

func mustAccount(t testing.TB, s *Service, in AccountInput) Account {
	t.Helper()
	a, err := s.CreateAccount(testCtx(t), in)
	if err != nil {
		t.Fatalf("create account: %v", err)
	}
	return a
}

func approx(a, b float64) bool {
	d := a - b
	return d < 1e-9 && d > -1e-9
}
