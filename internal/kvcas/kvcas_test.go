package kvcas

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
