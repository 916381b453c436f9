package product

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/store"
)

// admin sends one operator request and returns the decoded JSON answer;
// a status other than want fails the benchmark.
func admin(e *apitest.Bench, b *testing.B, method, path string, body any, want int) map[string]any {
	b.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest(method, e.URL+path, bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+apitest.BenchAdminToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := e.Client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		b.Fatalf("%s %s: %d %s", method, path, res.StatusCode, out)
	}
	var m map[string]any
	_ = json.Unmarshal(out, &m)
	return m
}

// BenchmarkProductSubmit measures POST /v1/products/vfx/jobs with a
// team-bound organisation key: apitest.BenchClients clients submit image jobs
// (a small data: PNG source, each with its own idempotency key), so every
// submission validates the inputs against the model's JSON Schema,
// probes the source, reserves credits in the ledger (entry, team and
// organisation aggregates) and queues the job.
func BenchmarkProductSubmit(b *testing.B) {
	e := apitest.NewBench(b, func(ctx context.Context, in apitest.BenchInfra) (http.Handler, func(context.Context)) {
		srv, err := api.New(ctx, api.Config{Queue: in.Q, JetStream: in.JS, Store: in.St, Accounts: in.Acc, AdminToken: apitest.BenchAdminToken})
		if err != nil {
			b.Fatal(err)
		}
		p, err := New(ctx, srv, Config{})
		if err != nil {
			b.Fatal(err)
		}
		srv.Mount(store.FilesPath, in.St.Handler())
		return srv.Handler(), func(ctx context.Context) { _ = runBackground(ctx, p, dispatch.Config{Queue: in.Q}) }
	})
	org := admin(e, b, "POST", "/admin/v1/orgs", map[string]any{"name": "Bench"}, http.StatusCreated)["id"].(string)
	admin(e, b, "POST", "/admin/v1/orgs/"+org+"/credits", map[string]any{"amount": 1 << 40}, http.StatusOK)
	admin(e, b, "PUT", "/admin/v1/orgs/"+org+"/products/vfx", map[string]any{"enabled": true}, http.StatusOK)
	admin(e, b, "PUT", "/admin/v1/orgs/"+org+"/models/vfx-2.0/consent", map[string]any{"granted": true}, http.StatusOK)
	team := admin(e, b, "POST", "/admin/v1/orgs/"+org+"/teams", map[string]any{"name": "Post"}, http.StatusCreated)["id"].(string)
	e.Key = admin(e, b, "POST", "/admin/v1/orgs/"+org+"/keys", map[string]any{"team_id": team}, http.StatusCreated)["key"].(string)
	var gen map[string]any
	if err := json.Unmarshal(e.Source, &gen); err != nil {
		b.Fatal(err)
	}
	src := gen["source_uri"].(string)
	var run atomic.Int64
	b.Run(fmt.Sprintf("clients=%d", apitest.BenchClients), func(b *testing.B) {
		r := run.Add(1)
		apitest.Parallel(b, "submissions/s", func(i int64) {
			body, _ := json.Marshal(map[string]any{"model_id": "vfx-2.0", "idempotency_key": fmt.Sprintf("b%d-%d", r, i),
				"inputs": map[string]any{"source": src, "alpha_mode": "fill", "prompt": "golden hour"}})
			if status, raw := e.Do(b, "POST", "/v1/products/vfx/jobs", body); status != http.StatusAccepted {
				b.Errorf("POST: %d %s", status, raw)
			}
		})
	})
}
