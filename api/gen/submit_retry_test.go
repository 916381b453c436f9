package gen

import (
	"context"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"testing"
	"time"

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
	e := newEnv(t, envOpts{Mut: func(c *api.Config) { c.SubmitRetryFor = 300 * time.Millisecond }})
	acct, key := e.NewAccount(account.KindOrganization, account.AccountInput{})
	src := e.Upload(key, "src.png", apitest.PNGBytes(t, 64, 48, false))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.JS.DeleteStream(ctx, queue.StreamJobs); err != nil {
		t.Fatal(err)
	}
	r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(src))
	if r.Status != 503 || r.Code() != api.CodeUnavailable {
		t.Fatalf("submit with the queue down: %d %s, want 503 %s", r.Status, r.Body, api.CodeUnavailable)
	}
	list := e.Do("GET", "/v1/vfx/generations", key, nil).JSON(t)
	jobs, _ := list["jobs"].([]any)
	for _, j := range jobs {
		if st := j.(map[string]any)["status"]; st != "failed" {
			t.Errorf("listed job %v is %v: an abandoned submission must not stay unfinished", j.(map[string]any)["id"], st)
		}
	}
	if n, err := e.Acc.InFlight(ctx, acct.ID); err != nil || n != 0 {
		t.Errorf("in flight %d (%v): the reservation must be released", n, err)
	}
}

// TestSubmitQueueBack: VFX_JOBS comes back while the request retries: the
// request answers 201 and the job is queued once.
func TestSubmitQueueBack(t *testing.T) {
	e := newEnv(t, envOpts{Mut: func(c *api.Config) { c.SubmitRetryFor = time.Minute }})
	key := e.OrgKey()
	src := e.Upload(key, "src.png", apitest.PNGBytes(t, 64, 48, false))
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
		time.Sleep(300 * time.Millisecond)
		_, err := e.JS.CreateStream(ctx, cfg)
		back <- err
	}()
	r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(src))
	if err := <-back; err != nil {
		t.Fatal(err)
	}
	if r.Status != 201 {
		t.Fatalf("submit while the queue comes back: %d %s, want 201", r.Status, r.Body)
	}
	id := r.JSON(t)["id"].(string)
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
