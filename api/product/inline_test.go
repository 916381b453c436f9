package product

import (
	"bytes"
	"context"
	"encoding/base64"
	"github.com/vfxrender/vfx/api/apitest"
	"testing"
	"time"

	"github.com/vfxrender/vfx/api"
)

// TestInlineDataByReference: a 49 MB data: source is stored as an input
// object of its job, the queue record carries only its vfx:// reference,
// and the job renders, through both APIs; 51 MB is refused with
// SOURCE_TOO_LARGE and stores nothing.
func TestInlineDataByReference(t *testing.T) {
	if testing.Short() {
		t.Skip("renders real jobs from 49 MB inputs (-short)")
	}
	dir := t.TempDir()
	e := newEnv(t, envOpts{Workers: true, StoreDir: dir})
	key := e.OrgKey()
	o := e.newOrg(10000, nil)
	ok := "data:image/png;base64," + base64.StdEncoding.EncodeToString(apitest.PaddedPNG(t, 49_000_000))
	over := "data:image/png;base64," + base64.StdEncoding.EncodeToString(apitest.PaddedPNG(t, 51_000_000))

	t.Run("generation", func(t *testing.T) {
		if r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(over)); r.Status != 400 || r.Code() != api.CodeSourceTooLarge {
			t.Fatalf("51 MB: %d %.300s", r.Status, r.Body)
		}
		r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(ok))
		if r.Status != 201 {
			t.Fatalf("49 MB: %d %.300s", r.Status, r.Body)
		}
		id := r.JSON(t)["id"].(string)
		rec, _, err := e.Q.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Request) > 4096 || !bytes.Contains(rec.Request, []byte(`"vfx://jobs/`+id+`/inputs/source.png"`)) {
			t.Fatalf("queue record of %d bytes: %.300s", len(rec.Request), rec.Request)
		}
		var job map[string]any
		apitest.Eventually(t, 120*time.Second, "job "+id, func() bool {
			job = e.Do("GET", "/v1/vfx/generations/"+id, key, nil).JSON(t)
			return job["status"] == "completed" || job["status"] == "failed"
		})
		if job["status"] != "completed" {
			t.Fatalf("job %v", job)
		}
	})
	t.Run("product", func(t *testing.T) {
		wantDetail(t, e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("over", over)), 400, api.CodeSourceTooLarge)
		r := e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("ok", ok))
		if r.Status != 202 {
			t.Fatalf("49 MB: %d %.300s", r.Status, r.Body)
		}
		pj := productJob(t, r)
		rec, _, err := e.Q.Get(context.Background(), pj.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Request) > 4096 || !bytes.Contains(rec.Request, []byte(`"vfx://product-jobs/`+pj.ID+`/inputs/source.png"`)) {
			t.Fatalf("queue record of %d bytes: %.300s", len(rec.Request), rec.Request)
		}
		if j := e.waitProduct(o.Key, pj.ID); j.Status != ProductSuccess {
			t.Fatalf("job %+v", j)
		}
	})
	if got := apitest.InputObjects(t, dir); len(got) != 2 {
		t.Fatalf("input objects %v, want the two accepted jobs' sources", got)
	}
}
