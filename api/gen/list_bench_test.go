package gen

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"testing"
	"time"

	"github.com/vfxrender/vfx/queue"
)

// BenchmarkListGenerations reads GET /v1/vfx/generations?limit=20 over
// loopback HTTP, one page per operation, walking the pages of an account
// that holds 100 or 5,000 jobs (records in the queue's bucket, indexed as
// create indexes them; back to the first page after the last). A page's
// cost should not grow with the account's job count.
func BenchmarkListGenerations(b *testing.B) {
	for _, n := range []int{100, 5000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			e := newBenchAPI(b)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			base := time.Now().UTC().Add(-time.Hour)
			for i := range n {
				t := base.Add(time.Duration(i) * time.Millisecond)
				id := api.NewJobID()
				if _, err := e.Q.Create(ctx, queue.Record{ID: id, Kind: queue.KindGeneration, Owner: e.Owner, CreatedAt: t, ModifiedAt: t,
					Request: []byte(`{"generation_type":"image","alpha_mode":"fill"}`)}); err != nil {
					b.Fatal(err)
				}
				if err := e.gen.indexAdd(ctx, e.Owner, t, id); err != nil {
					b.Fatal(err)
				}
			}
			token, pages, seen := "", 0, 0
			start := time.Now()
			for b.Loop() {
				p := "/v1/vfx/generations?limit=20"
				if token != "" {
					p += "&page_token=" + token
				}
				status, body := e.Do(b, "GET", p, nil)
				var page struct {
					Jobs []json.RawMessage `json:"jobs"`
					Next *string           `json:"next_page_token"`
				}
				if status != 200 || json.Unmarshal(body, &page) != nil || len(page.Jobs) == 0 {
					b.Fatalf("list: %d %s", status, body)
				}
				pages++
				seen += len(page.Jobs)
				token = ""
				if page.Next != nil {
					token = *page.Next
				}
			}
			el := time.Since(start)
			b.ReportMetric(float64(pages)/el.Seconds(), "pages/s")
			b.ReportMetric(float64(el.Microseconds())/1000/float64(pages), "ms/page")
			if seen < pages {
				b.Fatalf("%d jobs over %d pages", seen, pages)
			}
		})
	}
}
