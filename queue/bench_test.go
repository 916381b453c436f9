package queue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkQueueThroughput measures jobs/s from VFX_JOBS through Run (pull
// one, heartbeat, empty handler, DoubleAck) with 1, 2 and 4 workers, each
// on its own connection with one slot, against an embedded file-store
// server. Publishing the jobs is not timed.
func BenchmarkQueueThroughput(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			e := newEnv(b, Config{})
			queues := make([]*Queue, workers)
			for i := range queues {
				nc, err := Connect(testCtx(b, 5*time.Second), ConnConfig{URL: e.srv.ClientURL(), Name: fmt.Sprintf("w%d", i)})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(nc.Close)
				if queues[i], err = Open(testCtx(b, 5*time.Second), nc, Config{}); err != nil {
					b.Fatal(err)
				}
			}
			ctx := testCtx(b, 5*time.Minute)
			for i := range b.N {
				if err := e.q.publishJob(ctx, KindGeneration, fmt.Sprintf("bench_%d_%d", b.N, i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()

			var done atomic.Int64
			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			var wg sync.WaitGroup
			start := time.Now()
			for _, q := range queues {
				c, err := q.Consumer(ctx)
				if err != nil {
					b.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := c.Run(runCtx, RunConfig{Slots: 1, Drain: 5 * time.Second}, func(context.Context, *Delivery) error {
						if done.Add(1) == int64(b.N) {
							cancel()
						}
						return nil
					})
					if err != nil {
						b.Error(err)
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if n := done.Load(); n != int64(b.N) {
				b.Fatalf("handled %d of %d", n, b.N)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
		})
	}
}

// BenchmarkSubmit measures Submit (KV create + deduplicated publish), one
// caller at a time.
func BenchmarkSubmit(b *testing.B) {
	e := newEnv(b, Config{})
	ctx := testCtx(b, 5*time.Minute)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if _, _, err := e.q.Submit(ctx, Record{ID: fmt.Sprintf("sub_%d_%d", b.N, i), Kind: KindGeneration}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}
