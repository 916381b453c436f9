package product

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/queue"
)

// TestProductSubmitQueueDown: the product API's answer while VFX_JOBS is
// gone for longer than SubmitRetryFor is the generation API's: 503
// SERVICE_UNAVAILABLE with Retry-After (in the detail shape), the credits
// reserved are given back, and no job is left queued without a message.
func TestProductSubmitQueueDown(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true, Mut: func(c *api.Config) { c.SubmitRetryFor = 300 * time.Millisecond }})
	o := e.newOrg(1000, nil)
	before := e.credits(o.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.JS.DeleteStream(ctx, queue.StreamJobs); err != nil {
		t.Fatal(err)
	}
	r := e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("down", dataPNG(t, 64, 64)))
	wantDetail(t, r, 503, api.CodeUnavailable)
	if r.Header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After: %v", r.Header)
	}
	if c := e.credits(o.ID); c.Reserved != before.Reserved || c.Balance != before.Balance {
		t.Errorf("credits after a refused submission: %+v, before %+v", c, before)
	}
	kv, err := e.JS.KeyValue(ctx, queue.BucketJobs)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		t.Fatal(err)
	}
	for _, k := range keys {
		if rec, _, err := e.Q.Get(ctx, k); err != nil || rec.Status != queue.StatusFailed {
			t.Errorf("job %s is %s (%v): an abandoned submission must not stay unfinished", k, rec.Status, err)
		}
	}
}

// TestProductSubmitQueueBack: VFX_JOBS comes back while a product
// submission retries: the request answers 202 and the job is queued once.
func TestProductSubmitQueueBack(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true, Mut: func(c *api.Config) { c.SubmitRetryFor = time.Minute }})
	o := e.newOrg(1000, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := e.JS.Stream(ctx, queue.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.CachedInfo().Config
	if err := e.JS.DeleteStream(ctx, queue.StreamJobs); err != nil {
		t.Fatal(err)
	}
	back := make(chan error, 1)
	go func() {
		// Longer than the retries of a single JetStream publish (2 x
		// 250 ms on no responders): only the API's own retry loop can
		// bridge it.
		time.Sleep(1500 * time.Millisecond)
		_, err := e.JS.CreateStream(ctx, cfg)
		back <- err
	}()
	r := e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("back", dataPNG(t, 64, 64)))
	if err := <-back; err != nil {
		t.Fatal(err)
	}
	if r.Status != 202 {
		t.Fatalf("submit while the queue comes back: %d %s, want 202", r.Status, r.Body)
	}
	id := productJob(t, r).ID
	s, err := e.JS.Stream(ctx, queue.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.GetLastMsgForSubject(ctx, "vfx.jobs.>")
	if err != nil || string(msg.Data) != id {
		t.Fatalf("VFX_JOBS last message %v (%v), want job %s", msg, err, id)
	}
	if st, _ := s.Info(ctx); st.State.Msgs != 1 {
		t.Errorf("VFX_JOBS holds %d messages, want 1", st.State.Msgs)
	}
}
