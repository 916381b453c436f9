package gen

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/store"
)

// deadGeneration leaves behind what a generation submission holds when its
// process dies after reserving and storing its inline source: the
// idempotency claim (not renewed), the pending record, the stored input,
// the in-flight reservation, meta and index entries. It returns the job id.
func deadGeneration(t *testing.T, e *env, a account.Account, ikey string, body map[string]any) string {
	t.Helper()
	ctx := context.Background()
	raw, _ := json.Marshal(body)
	g, err := decodeGenRequest(raw)
	if err != nil {
		t.Fatal(err)
	}
	id, created := api.NewJobID(), time.Now().UTC()
	if err := e.Srv.BeginPending(ctx, api.PendingSub{JobID: id, Kind: api.PendingGeneration, Owner: a.ID, CreatedAt: created}); err != nil {
		t.Fatal(err)
	}
	in := store.JobInputKey("jobs", id, "source.png")
	if err := e.Srv.PendingInput(ctx, id, in); err != nil {
		t.Fatal(err)
	}
	if _, err := e.St.Put(ctx, in, strings.NewReader("png"), 3, "image/png"); err != nil {
		t.Fatal(err)
	}
	if err := e.Acc.Reserve(ctx, a, id, 0.5, true); err != nil {
		t.Fatal(err)
	}
	mv, _ := json.Marshal(genMeta{JobID: id, Owner: a.ID, CreatedAt: created})
	if _, err := e.gen.meta.Put(ctx, id, mv); err != nil {
		t.Fatal(err)
	}
	if err := e.gen.indexAdd(ctx, a.ID, created, id); err != nil {
		t.Fatal(err)
	}
	if ikey != "" {
		v, _ := json.Marshal(api.IdemEntry{JobID: id, BodyHash: g.hash(), Holder: "crashed/req", ClaimedAt: created})
		if _, err := e.gen.idem.Put(ctx, api.IdemKey(a.ID, ikey), v); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// TestIdemTakeoverRecoversGeneration: a resend of a submission whose
// process died gets its job once the claim's lease runs out, and the same
// recovery gives back what the dead submission held: its in-flight slot,
// its stored inline input, its meta, index entry and pending record.
func TestIdemTakeoverRecoversGeneration(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, envOpts{NoRun: true, StoreDir: dir, Mut: func(c *api.Config) { c.IdemClaimLease = 300 * time.Millisecond }})
	ctx := context.Background()
	a, key := e.NewAccount(account.KindPersonal, account.AccountInput{})
	body := apitest.With(apitest.ValidGeneration(apitest.DataURI("image/png", apitest.PNGBytes(t, 64, 48, false))), "idempotency_key", "crash-1")
	dead := deadGeneration(t, e, a, "crash-1", body)
	if n, _ := e.Acc.InFlight(ctx, a.ID); n != 1 {
		t.Fatalf("in flight before: %d", n)
	}
	r := e.Do("POST", "/v1/vfx/generations", key, body)
	if r.Status != 201 {
		t.Fatalf("resend: %d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["id"].(string)
	if id == dead {
		t.Fatal("the dead job id was reused")
	}
	if n, err := e.Acc.InFlight(ctx, a.ID); n != 1 || err != nil {
		t.Fatalf("in flight after: %d %v, want the new job only", n, err)
	}
	if got := apitest.InputObjects(t, dir); len(got) != 1 || !strings.Contains(got[0], id) {
		t.Fatalf("input objects %v, want only the new job's", got)
	}
	if _, err := e.gen.meta.Get(ctx, dead); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("meta of the dead job: %v", err)
	}
	if l := e.Do("GET", "/v1/vfx/generations", key, nil).JSON(t); len(l["jobs"].([]any)) != 1 {
		t.Fatalf("list: %v", l)
	}
	if n := e.PendingCount(api.BucketPending); n != 0 {
		t.Fatalf("%d pending records left", n)
	}
	r2 := e.Do("POST", "/v1/vfx/generations", key, body)
	if r2.Status != 200 || r2.JSON(t)["id"] != id {
		t.Fatalf("second resend: %d %s", r2.Status, r2.Body)
	}
}

// TestSweepPending: a dead submission without an idempotency key (or whose
// key is never resent) is recovered by the sweeper once its record is
// older than PendingGrace: its slot and its stored inline input are
// given back; a younger record is left alone.
func TestSweepPending(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, envOpts{NoRun: true, StoreDir: dir})
	ctx := context.Background()
	a, _ := e.NewAccount(account.KindPersonal, account.AccountInput{})
	dead := deadGeneration(t, e, a, "", apitest.ValidGeneration(apitest.DataURI("image/png", apitest.PNGBytes(t, 64, 48, false))))
	if n, err := e.Srv.SweepPending(ctx); n != 0 || err != nil {
		t.Fatalf("a young record was swept: %d %v", n, err)
	}
	e.Srv.Cfg.PendingGrace = 50 * time.Millisecond
	time.Sleep(100 * time.Millisecond)
	if n, err := e.Srv.SweepPending(ctx); n != 1 || err != nil {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if n, err := e.Acc.InFlight(ctx, a.ID); n != 0 || err != nil {
		t.Fatalf("in flight: %d %v", n, err)
	}
	if got := apitest.InputObjects(t, dir); len(got) != 0 {
		t.Fatalf("input objects left: %v", got)
	}
	if _, _, err := e.Srv.GetPending(ctx, dead); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("pending record: %v", err)
	}
}

// TestIdemResendRequeues: a job whose record was created but whose queue
// message a crash lost (queue.Submit died between the two) is queued again
// when its key is resent, and the resend answers the job (200).
func TestIdemResendRequeues(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	ctx := context.Background()
	a, key := e.NewAccount(account.KindOrganization, account.AccountInput{})
	body := apitest.With(apitest.ValidGeneration(apitest.DataURI("image/png", apitest.PNGBytes(t, 64, 48, false))), "idempotency_key", "lost-msg")
	raw, _ := json.Marshal(body)
	g, err := decodeGenRequest(raw)
	if err != nil {
		t.Fatal(err)
	}
	id, now := api.NewJobID(), time.Now().UTC()
	jr, _ := json.Marshal(map[string]any{"generation_type": "image", "alpha_mode": "fill", "prompt": "warm sunset light"})
	if _, err := e.Q.Create(ctx, queue.Record{ID: id, Kind: queue.KindGeneration, Owner: a.ID, Request: jr, CreatedAt: now, ModifiedAt: now}); err != nil {
		t.Fatal(err)
	}
	v, _ := json.Marshal(api.IdemEntry{JobID: id, BodyHash: g.hash(), Holder: "crashed/req", ClaimedAt: now})
	if _, err := e.gen.idem.Put(ctx, api.IdemKey(a.ID, "lost-msg"), v); err != nil {
		t.Fatal(err)
	}
	stream, err := e.JS.Stream(ctx, queue.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	subject := queue.SubjectJobsPrefix + queue.KindGeneration + "." + id
	if _, err := stream.GetLastMsgForSubject(ctx, subject); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("message before the resend: %v", err)
	}
	r := e.Do("POST", "/v1/vfx/generations", key, body)
	if r.Status != 200 || r.JSON(t)["id"] != id {
		t.Fatalf("resend: %d %s", r.Status, r.Body)
	}
	if _, err := stream.GetLastMsgForSubject(ctx, subject); err != nil {
		t.Fatalf("message after the resend: %v", err)
	}
}
