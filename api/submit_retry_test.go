package api

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/queue"
)

// TestSubmitQueueDown: VFX_JOBS is gone (as while NATS restarts) for
// longer than SubmitRetryFor: the request answers 503 SERVICE_UNAVAILABLE,
// the reservation is released, and the account's list holds no job left
// in_queue with no message to run it (the drill saw such a ghost before
// the fix: the record stayed in_queue while the client's retry made a
// second job).
func TestSubmitQueueDown(t *testing.T) {
	e := newEnv(t, envOpts{mut: func(c *Config) { c.SubmitRetryFor = 300 * time.Millisecond }})
	acct, key := e.newAccount(account.KindOrganization, account.AccountInput{})
	src := e.upload(key, "src.png", pngBytes(t, 64, 48, false))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.js.DeleteStream(ctx, queue.StreamJobs); err != nil {
		t.Fatal(err)
	}
	r := e.do("POST", "/v1/vfx/generations", key, validReq(src))
	if r.status != 503 || r.code() != CodeUnavailable {
		t.Fatalf("submit with the queue down: %d %s, want 503 %s", r.status, r.body, CodeUnavailable)
	}
	list := e.do("GET", "/v1/vfx/generations", key, nil).json(t)
	jobs, _ := list["jobs"].([]any)
	for _, j := range jobs {
		if st := j.(map[string]any)["status"]; st != "failed" {
			t.Errorf("listed job %v is %v: an abandoned submission must not stay unfinished", j.(map[string]any)["id"], st)
		}
	}
	if n, err := e.acc.InFlight(ctx, acct.ID); err != nil || n != 0 {
		t.Errorf("in flight %d (%v): the reservation must be released", n, err)
	}
}

// TestSubmitQueueBack: VFX_JOBS comes back while the request retries: the
// request answers 201 and the job is queued once.
func TestSubmitQueueBack(t *testing.T) {
	e := newEnv(t, envOpts{mut: func(c *Config) { c.SubmitRetryFor = time.Minute }})
	key := e.orgKey()
	src := e.upload(key, "src.png", pngBytes(t, 64, 48, false))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := e.js.Stream(ctx, queue.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.CachedInfo().Config
	if err := e.js.DeleteStream(ctx, queue.StreamJobs); err != nil {
		t.Fatal(err)
	}
	back := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, err := e.js.CreateStream(ctx, cfg)
		back <- err
	}()
	r := e.do("POST", "/v1/vfx/generations", key, validReq(src))
	if err := <-back; err != nil {
		t.Fatal(err)
	}
	if r.status != 201 {
		t.Fatalf("submit while the queue comes back: %d %s, want 201", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	s, err := e.js.Stream(ctx, queue.StreamJobs)
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

// TestProductSubmitQueueDown: the product API's answer while VFX_JOBS is
// gone for longer than SubmitRetryFor is the generation API's: 503
// SERVICE_UNAVAILABLE with Retry-After (in the detail shape), the credits
// reserved are given back, and no job is left queued without a message.
func TestProductSubmitQueueDown(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true, mut: func(c *Config) { c.SubmitRetryFor = 300 * time.Millisecond }})
	o := e.newOrg(1000, nil)
	before := e.credits(o.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.js.DeleteStream(ctx, queue.StreamJobs); err != nil {
		t.Fatal(err)
	}
	r := e.do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("down", dataPNG(t, 64, 64)))
	wantDetail(t, r, 503, CodeUnavailable)
	if r.header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After: %v", r.header)
	}
	if c := e.credits(o.ID); c.Reserved != before.Reserved || c.Balance != before.Balance {
		t.Errorf("credits after a refused submission: %+v, before %+v", c, before)
	}
	kv, err := e.js.KeyValue(ctx, queue.BucketJobs)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		t.Fatal(err)
	}
	for _, k := range keys {
		if rec, _, err := e.q.Get(ctx, k); err != nil || rec.Status != queue.StatusFailed {
			t.Errorf("job %s is %s (%v): an abandoned submission must not stay unfinished", k, rec.Status, err)
		}
	}
}

// TestProductSubmitQueueBack: VFX_JOBS comes back while a product
// submission retries: the request answers 202 and the job is queued once.
func TestProductSubmitQueueBack(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true, mut: func(c *Config) { c.SubmitRetryFor = time.Minute }})
	o := e.newOrg(1000, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := e.js.Stream(ctx, queue.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.CachedInfo().Config
	if err := e.js.DeleteStream(ctx, queue.StreamJobs); err != nil {
		t.Fatal(err)
	}
	back := make(chan error, 1)
	go func() {
		// Longer than the retries of a single JetStream publish (2 x
		// 250 ms on no responders): only the API's own retry loop can
		// bridge it.
		time.Sleep(1500 * time.Millisecond)
		_, err := e.js.CreateStream(ctx, cfg)
		back <- err
	}()
	r := e.do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("back", dataPNG(t, 64, 64)))
	if err := <-back; err != nil {
		t.Fatal(err)
	}
	if r.status != 202 {
		t.Fatalf("submit while the queue comes back: %d %s, want 202", r.status, r.body)
	}
	id := productJob(t, r).ID
	s, err := e.js.Stream(ctx, queue.StreamJobs)
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
