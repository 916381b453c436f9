package gen

import (
	"context"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vfxrender/vfx/api/apitest"
	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/store"
)

// benchAPI is the generation API on apitest's bench harness.
type benchAPI struct {
	*apitest.Bench
	srv *api.Server
	gen *API
}

func newBenchAPI(b *testing.B) *benchAPI {
	e := &benchAPI{}
	e.Bench = apitest.NewBench(b, func(ctx context.Context, in apitest.BenchInfra) (http.Handler, func(context.Context)) {
		srv, err := api.New(ctx, api.Config{Queue: in.Q, JetStream: in.JS, Store: in.St, Accounts: in.Acc, AdminToken: apitest.BenchAdminToken})
		if err != nil {
			b.Fatal(err)
		}
		if e.gen, err = New(ctx, srv); err != nil {
			b.Fatal(err)
		}
		srv.Mount(store.FilesPath, in.St.Handler())
		e.srv = srv
		return srv.Handler(), func(ctx context.Context) { _ = runBackground(ctx, srv, dispatch.Config{Queue: in.Q}) }
	})
	return e
}

// The bench harness of apitest under the names the benchmarks use.
var (
	BenchClients = apitest.BenchClients
	Parallel     = apitest.Parallel
)

type Latencies = apitest.Latencies

// BenchmarkSubmit measures POST /v1/vfx/generations with an organisation
// key: benchClients clients submit image jobs whose source is a small
// inline data: PNG (decoded and checked by the API, as in production).
func BenchmarkSubmit(b *testing.B) {
	e := newBenchAPI(b)
	b.Run(fmt.Sprintf("clients=%d", BenchClients), func(b *testing.B) {
		Parallel(b, "submissions/s", func(int64) { e.Submit(b) })
	})
}

// BenchmarkGet measures GET /v1/vfx/generations/{id} of existing jobs
// (with fresh signed output URLs computed on every read).
func BenchmarkGet(b *testing.B) {
	e := newBenchAPI(b)
	ids := make([]string, 64)
	for i := range ids {
		if ids[i] = e.Submit(b); ids[i] == "" {
			b.FailNow()
		}
	}
	b.Run(fmt.Sprintf("clients=%d", BenchClients), func(b *testing.B) {
		Parallel(b, "reads/s", func(i int64) { e.Get(b, ids[int(i)%len(ids)]) })
	})
}

// BenchmarkSubmitThenGet is the combined report: each operation is one
// submission followed by one read of the new job, from benchClients
// clients at once; it reports submissions/s and the p50/p99 latency of
// the POSTs and of the GETs separately.
func BenchmarkSubmitThenGet(b *testing.B) {
	e := newBenchAPI(b)
	b.Run(fmt.Sprintf("clients=%d", BenchClients), func(b *testing.B) {
		var post, get Latencies
		var next atomic.Int64
		b.ResetTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for range BenchClients {
			wg.Go(func() {
				var lp, lg []time.Duration
				for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
					t0 := time.Now()
					id := e.Submit(b)
					t1 := time.Now()
					if id != "" {
						e.Get(b, id)
					}
					lp, lg = append(lp, t1.Sub(t0)), append(lg, time.Since(t1))
				}
				post.Add(lp)
				get.Add(lg)
			})
		}
		wg.Wait()
		b.StopTimer()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "submissions/s")
		post.Report(b, "post-")
		get.Report(b, "get-")
	})
}
