package kvcas

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/internal/retry"
)

// newKV starts an embedded NATS server with JetStream and returns a bucket.
func newKV(t *testing.T) jetstream.KeyValue {
	t.Helper()
	ns, err := server.NewServer(&server.Options{JetStream: true, StoreDir: t.TempDir(), Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "cas"})
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

type counter struct{ N int }

func TestJSON(t *testing.T) {
	kv := newKV(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Concurrent increments, the first of them creating the key: none is
	// lost.
	const writers, each = 8, 20
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				if _, err := JSON(ctx, kv, "c", func(c *counter, _ bool) (bool, error) { c.N++; return true, nil }); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := JSON(ctx, kv, "c", func(*counter, bool) (bool, error) { return false, nil })
	if err != nil || got.N != writers*each {
		t.Fatalf("counter %d (%v), want %d", got.N, err, writers*each)
	}

	// No write when mutate says so; its error comes back as it is.
	e, _ := kv.Get(ctx, "c")
	boom := errors.New("boom")
	if _, err := JSON(ctx, kv, "c", func(c *counter, _ bool) (bool, error) { c.N = -1; return true, boom }); err != boom {
		t.Fatalf("mutate error: %v", err)
	}
	if e2, _ := kv.Get(ctx, "c"); e2.Revision() != e.Revision() {
		t.Fatal("a refused mutation wrote")
	}
	if _, err := JSON(ctx, kv, "absent", func(_ *counter, exists bool) (bool, error) { return false, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, "absent"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("absent key written: %v", err)
	}

	// A writer that always loses gives up with ErrConflict.
	n := 0
	_, err = JSONWith(ctx, Options{MaxAttempts: 3}, kv, "c", func(c *counter, _ bool) (bool, error) {
		n++
		if _, err := kv.Put(ctx, "c", []byte(`{"N":0}`)); err != nil { // someone else gets there first
			return false, err
		}
		c.N++
		return true, nil
	})
	if !errors.Is(err, ErrConflict) || n != 3 {
		t.Fatalf("always losing: %v after %d attempts", err, n)
	}
	// Losing a create race counts as a conflict too.
	_, err = JSONWith(ctx, Options{MaxAttempts: 1}, kv, "new", func(c *counter, exists bool) (bool, error) {
		if _, err := kv.Create(ctx, "new", []byte(`{"N":5}`)); err != nil {
			return false, err
		}
		return true, nil
	})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("lost create: %v", err)
	}
}

func TestBytes(t *testing.T) {
	kv := newKV(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A get-or-create whose first create loses to a concurrent writer:
	// the loop reads again and returns the writer's value, unchanged.
	calls := 0
	got, err := Bytes(ctx, kv, "secret", func(v *[]byte, exists bool) (bool, error) {
		calls++
		if exists {
			return false, nil
		}
		if calls == 1 {
			if _, err := kv.Create(ctx, "secret", []byte("theirs")); err != nil {
				return false, err
			}
		}
		*v = []byte("mine")
		return true, nil
	})
	if err != nil || string(got) != "theirs" || calls != 2 {
		t.Fatalf("lost create: %q %v after %d calls, want \"theirs\" after 2", got, err, calls)
	}
	if e, _ := kv.Get(ctx, "secret"); string(e.Value()) != "theirs" {
		t.Fatalf("stored %q", e.Value())
	}
	// An update is compared and set too, and the stored bytes are kept as
	// they are (no JSON).
	got, err = Bytes(ctx, kv, "secret", func(v *[]byte, _ bool) (bool, error) {
		*v = append(*v, '!')
		return true, nil
	})
	if e, _ := kv.Get(ctx, "secret"); err != nil || string(got) != "theirs!" || string(e.Value()) != "theirs!" {
		t.Fatalf("update: %q %v, stored %q", got, err, e.Value())
	}
}

func TestRetry(t *testing.T) {
	ctx := context.Background()
	// Done on the third try.
	n := 0
	if err := Retry(ctx, Options{}, "k", func() (bool, error) { n++; return n == 3, nil }); err != nil || n != 3 {
		t.Fatalf("done on try 3: %v after %d", err, n)
	}
	// Never done: exactly MaxAttempts tries, then ErrConflict naming the key.
	n = 0
	err := Retry(ctx, Options{MaxAttempts: 4}, "k", func() (bool, error) { n++; return false, nil })
	if !errors.Is(err, ErrConflict) || n != 4 || !strings.Contains(err.Error(), "k: ") {
		t.Fatalf("never done: %v after %d tries, want ErrConflict after 4", err, n)
	}
	// try's error ends the loop as it is, even when not done.
	boom := errors.New("boom")
	n = 0
	if err := Retry(ctx, Options{}, "k", func() (bool, error) { n++; return false, boom }); err != boom || n != 1 {
		t.Fatalf("error: %v after %d", err, n)
	}
	// An ended context stops the loop with its error.
	cctx, cancel := context.WithCancel(ctx)
	n = 0
	err = Retry(cctx, Options{Backoff: retry.Backoff{Initial: time.Millisecond}}, "k", func() (bool, error) {
		if n++; n == 2 {
			cancel()
		}
		return false, nil
	})
	if !errors.Is(err, context.Canceled) || n != 2 {
		t.Fatalf("cancelled: %v after %d", err, n)
	}
}
