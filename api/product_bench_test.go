package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
)

// admin sends one operator request and returns the decoded JSON answer;
// a status other than want fails the benchmark.
func (e *benchAPI) admin(b *testing.B, method, path string, body any, want int) map[string]any {
	b.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest(method, e.url+path, bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer admintoken-0123456789")
	req.Header.Set("Content-Type", "application/json")
	res, err := e.client.Do(req)
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
// team-bound organisation key: benchClients clients submit image jobs
// (a small data: PNG source, each with its own idempotency key), so every
// submission validates the inputs against the model's JSON Schema,
// probes the source, reserves credits in the ledger (entry, team and
// organisation aggregates) and queues the job.
func BenchmarkProductSubmit(b *testing.B) {
	e := newBenchAPI(b)
	org := e.admin(b, "POST", "/admin/v1/orgs", map[string]any{"name": "Bench"}, http.StatusCreated)["id"].(string)
	e.admin(b, "POST", "/admin/v1/orgs/"+org+"/credits", map[string]any{"amount": 1 << 40}, http.StatusOK)
	e.admin(b, "PUT", "/admin/v1/orgs/"+org+"/products/vfx", map[string]any{"enabled": true}, http.StatusOK)
	e.admin(b, "PUT", "/admin/v1/orgs/"+org+"/models/vfx-2.0/consent", map[string]any{"granted": true}, http.StatusOK)
	team := e.admin(b, "POST", "/admin/v1/orgs/"+org+"/teams", map[string]any{"name": "Post"}, http.StatusCreated)["id"].(string)
	e.key = e.admin(b, "POST", "/admin/v1/orgs/"+org+"/keys", map[string]any{"team_id": team}, http.StatusCreated)["key"].(string)
	var gen map[string]any
	if err := json.Unmarshal(e.source, &gen); err != nil {
		b.Fatal(err)
	}
	src := gen["source_uri"].(string)
	var run atomic.Int64
	b.Run(fmt.Sprintf("clients=%d", benchClients), func(b *testing.B) {
		r := run.Add(1)
		parallel(b, "submissions/s", func(i int64) {
			body, _ := json.Marshal(map[string]any{"model_id": "vfx-2.0", "idempotency_key": fmt.Sprintf("b%d-%d", r, i),
				"inputs": map[string]any{"source": src, "alpha_mode": "fill", "prompt": "golden hour"}})
			if status, raw := e.do(b, "POST", "/v1/products/vfx/jobs", body); status != http.StatusAccepted {
				b.Errorf("POST: %d %s", status, raw)
			}
		})
	})
}
