package worker

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/queue"
)

// TestValidateOncePerPickup counts the job contract's field rules
// (job.Validate, through the daemon's hook) per job a worker picks up:
// once for a generation job that completes, once for one they refuse
// (failed with their code, nothing fetched), once for a product job whose
// generation type follows its source (validated after the probe), and
// once for a generation record without a type (refused).
func TestValidateOncePerPickup(t *testing.T) {
	e := startQueue(t)
	st := localStore(t)
	fx := fixture(t, 64, 48, 4)
	still := putFile(t, st, fx.Still, "still.png")

	var total atomic.Int64
	calls := map[string]*atomic.Int64{}
	for _, id := range []string{"ok", "bad", "prod", "notype"} {
		calls[id] = new(atomic.Int64)
	}
	dm := &Daemon{Queue: e.q, Store: st, Pipeline: &Pipeline{Device: kernels.NewCPU(2)}, Name: "count", TempDir: t.TempDir(),
		Preset: "ultrafast", ProgressInterval: 100 * time.Millisecond, Logger: zaptest.NewLogger(t, zaptest.Level(zapcore.ErrorLevel))}
	dm.validateJob = func(r job.JobRequest) (job.Valid, error) {
		total.Add(1)
		if c, ok := calls[r.Prompt]; ok {
			c.Add(1)
		}
		return job.Validate(r)
	}
	startDaemon(t, e, dm, 1)

	// The prompt names the job, so that the hook can tell them apart.
	e.submit(t, "ok", job.JobRequest{GenerationType: "image", SourceURI: still, AlphaMode: "fill", Prompt: "ok", Seed: 1})
	e.submit(t, "bad", job.JobRequest{GenerationType: "image", SourceURI: still, AlphaMode: "magic", Prompt: "bad", Seed: 1})
	e.submit(t, "notype", job.JobRequest{SourceURI: still, AlphaMode: "fill", Prompt: "notype", Seed: 1})
	raw, err := json.Marshal(job.ProductRequest{Product: job.ProductVFX, ModelID: "vfx-2.0", Mode: job.ModeStandard,
		Generation: &job.JobRequest{SourceURI: still, AlphaMode: "fill", Prompt: "prod", Seed: 1, MaxResolution: 720}})
	if err != nil {
		t.Fatal(err)
	}
	if _, created, err := e.q.Submit(tctx(t, 10*time.Second), queue.Record{ID: "prod", Kind: queue.KindProduct, Owner: "org_test", Request: raw, Seed: 1}); err != nil || !created {
		t.Fatalf("submit prod: created %v, %v", created, err)
	}

	for _, c := range []struct {
		id     string
		status queue.Status
		code   job.Code
	}{
		{"ok", queue.StatusCompleted, ""},
		{"bad", queue.StatusFailed, job.CodeInvalidAlphaMode},
		{"notype", queue.StatusFailed, job.CodeInvalidGenerationType},
		{"prod", queue.StatusCompleted, ""},
	} {
		rec := e.waitTerminal(t, c.id, 60*time.Second)
		if rec.Status != c.status || rec.ErrorCode != c.code || rec.Attempt != 1 {
			t.Errorf("%s: %s %s %q (attempt %d), want %s %s", c.id, rec.Status, rec.ErrorCode, rec.Error, rec.Attempt, c.status, c.code)
		}
		if n := calls[c.id].Load(); n != 1 {
			t.Errorf("%s: job.Validate ran %d times for the job, want 1", c.id, n)
		}
	}
	if n := total.Load(); n != 4 {
		t.Errorf("job.Validate ran %d times for 4 jobs, want 4", n)
	}
}
