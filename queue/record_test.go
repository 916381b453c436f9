package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestOpenIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	ctx := testCtx(t, 10*time.Second)
	// A second Open over the same assets (as a second process would do).
	if _, err := Open(ctx, e.nc, fastConfig()); err != nil {
		t.Fatalf("second open: %v", err)
	}

	jobs := e.streamInfo(t, StreamJobs)
	if jobs.Config.Retention != jetstream.WorkQueuePolicy || jobs.Config.Duplicates != 10*time.Minute ||
		jobs.Config.Storage != jetstream.FileStorage || jobs.Config.Subjects[0] != "vfx.jobs.>" {
		t.Errorf("VFX_JOBS config = %+v", jobs.Config)
	}
	events := e.streamInfo(t, StreamEvents)
	if events.Config.Retention != jetstream.LimitsPolicy || events.Config.MaxAge != 7*24*time.Hour {
		t.Errorf("VFX_EVENTS config = %+v", events.Config)
	}
	dlq := e.streamInfo(t, StreamDLQ)
	if dlq.Config.Retention != jetstream.LimitsPolicy || dlq.Config.MaxAge != 30*24*time.Hour {
		t.Errorf("VFX_DLQ config = %+v", dlq.Config)
	}
	adv := e.streamInfo(t, StreamAdvisories)
	if adv.Config.Subjects[0] != "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.VFX_JOBS.>" {
		t.Errorf("VFX_ADVISORIES subjects = %v", adv.Config.Subjects)
	}
	ci := e.consumerInfo(t)
	if ci.Config.AckPolicy != jetstream.AckExplicitPolicy || ci.Config.AckWait != 2*time.Second ||
		ci.Config.MaxDeliver != 5 || ci.Config.MaxAckPending != 10000 || len(ci.Config.BackOff) != 0 {
		t.Errorf("workers consumer config = %+v", ci.Config)
	}
	kv, err := e.q.js.KeyValue(ctx, BucketJobs)
	if err != nil {
		t.Fatalf("bucket: %v", err)
	}
	st, err := kv.Status(ctx)
	if err != nil || st.History() != 1 {
		t.Errorf("bucket status: history=%d err=%v", st.History(), err)
	}
}

func TestCreateGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	ctx := testCtx(t, 10*time.Second)
	rec := Record{ID: "gen_1", Kind: KindGeneration, Owner: "acct", Request: json.RawMessage(`{"prompt":"dusk"}`), Seed: 42}
	rev, err := e.q.Create(ctx, rec)
	if err != nil || rev == 0 {
		t.Fatalf("create: rev=%d err=%v", rev, err)
	}
	if _, err := e.q.Create(ctx, rec); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	got, rev2, err := e.q.Get(ctx, "gen_1")
	if err != nil || rev2 != rev {
		t.Fatalf("get: rev=%d err=%v", rev2, err)
	}
	if got.Status != StatusInQueue || got.Seed != 42 || string(got.Request) != `{"prompt":"dusk"}` || got.CreatedAt.IsZero() {
		t.Errorf("get = %+v", got)
	}
	if _, _, err := e.q.Get(ctx, "gen_missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("get missing: %v, want ErrNotFound", err)
	}
	for _, bad := range []Record{
		{ID: "a.b", Kind: KindGeneration},
		{ID: "", Kind: KindGeneration},
		{ID: "ok", Kind: "video"},
		{ID: "ok", Kind: KindProduct, Status: StatusCompleted},
	} {
		if _, err := e.q.Create(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("create %+v: %v, want ErrInvalid", bad, err)
		}
	}
}

func TestUpdateTransitions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	ctx := testCtx(t, 20*time.Second)

	set := func(s Status) func(*Record) error {
		return func(r *Record) error { r.Status = s; return nil }
	}
	tests := []struct {
		name  string
		path  []Status // applied in order; the last one is checked against want
		want  error
		final Status
	}{
		{"queue to processing", []Status{StatusProcessing}, nil, StatusProcessing},
		{"processing to completed", []Status{StatusProcessing, StatusCompleted}, nil, StatusCompleted},
		{"processing to failed", []Status{StatusProcessing, StatusFailed}, nil, StatusFailed},
		{"queue to failed", []Status{StatusFailed}, nil, StatusFailed},
		{"processing to processing", []Status{StatusProcessing, StatusProcessing}, nil, StatusProcessing},
		{"queue to completed", []Status{StatusCompleted}, ErrIllegalTransition, StatusInQueue},
		{"processing back to queue", []Status{StatusProcessing, StatusInQueue}, ErrIllegalTransition, StatusProcessing},
		{"unknown status", []Status{"paused"}, ErrIllegalTransition, StatusInQueue},
		{"completed never changes", []Status{StatusProcessing, StatusCompleted, StatusFailed}, ErrTerminal, StatusCompleted},
		{"failed never changes", []Status{StatusFailed, StatusProcessing}, ErrTerminal, StatusFailed},
		{"failed to failed", []Status{StatusFailed, StatusFailed}, ErrTerminal, StatusFailed},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("tr_%d", i)
			if _, err := e.q.Create(ctx, Record{ID: id, Kind: KindProduct}); err != nil {
				t.Fatal(err)
			}
			var err error
			for j, s := range tc.path {
				_, err = e.q.Update(ctx, id, set(s))
				if j < len(tc.path)-1 && err != nil {
					t.Fatalf("step %d (%s): %v", j, s, err)
				}
			}
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("last step: err=%v, want %v", err, tc.want)
			}
			rec := e.record(t, id)
			if rec.Status != tc.final {
				t.Errorf("status = %s, want %s", rec.Status, tc.final)
			}
			if rec.Status == StatusProcessing && rec.StartedAt == nil {
				t.Error("StartedAt not set on processing")
			}
			if rec.Status.Terminal() && (rec.CompletedAt == nil || rec.CompletedAt.Before(rec.CreatedAt)) {
				t.Errorf("CompletedAt = %v on terminal record", rec.CompletedAt)
			}
		})
	}

	t.Run("terminal does not call fn", func(t *testing.T) {
		if _, err := e.q.Create(ctx, Record{ID: "term_fn", Kind: KindGeneration}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.q.Update(ctx, "term_fn", set(StatusFailed)); err != nil {
			t.Fatal(err)
		}
		called := false
		got, err := e.q.Update(ctx, "term_fn", func(r *Record) error { called = true; r.Progress = 99; return nil })
		if !errors.Is(err, ErrTerminal) || called || got.Status != StatusFailed {
			t.Errorf("err=%v called=%v status=%s", err, called, got.Status)
		}
	})

	t.Run("immutable fields, clamp, modified_at, no-op", func(t *testing.T) {
		created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
		if _, err := e.q.Create(ctx, Record{ID: "imm", Kind: KindGeneration, Owner: "o1", CreatedAt: created}); err != nil {
			t.Fatal(err)
		}
		got, err := e.q.Update(ctx, "imm", func(r *Record) error {
			r.ID, r.Kind, r.Owner, r.CreatedAt = "other", KindProduct, "o2", time.Now()
			r.Status, r.Progress = StatusProcessing, 140
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != "imm" || got.Kind != KindGeneration || got.Owner != "o1" || !got.CreatedAt.Equal(created) || got.Progress != 100 {
			t.Errorf("got %+v", got)
		}
		if !got.ModifiedAt.After(created) {
			t.Errorf("ModifiedAt %v did not move", got.ModifiedAt)
		}
		_, rev, _ := e.q.Get(ctx, "imm")
		if _, err := e.q.Update(ctx, "imm", func(r *Record) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if _, rev2, _ := e.q.Get(ctx, "imm"); rev2 != rev {
			t.Errorf("no-op update wrote a revision: %d → %d", rev, rev2)
		}
		sentinel := errors.New("nope")
		if _, err := e.q.Update(ctx, "imm", func(r *Record) error { return sentinel }); !errors.Is(err, sentinel) {
			t.Errorf("fn error not returned: %v", err)
		}
		if _, err := e.q.Update(ctx, "missing", set(StatusFailed)); !errors.Is(err, ErrNotFound) {
			t.Errorf("update missing: %v", err)
		}
	})
}

// TestUpdateConcurrent: 20 writers each add one to Progress and one output;
// the CAS loop must not lose any of them.
func TestUpdateConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	ctx := testCtx(t, 20*time.Second)
	if _, err := e.q.Create(ctx, Record{ID: "race", Kind: KindGeneration}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.Update(ctx, "race", func(r *Record) error { r.Status = StatusProcessing; return nil }); err != nil {
		t.Fatal(err)
	}
	const writers = 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.q.Update(ctx, "race", func(r *Record) error {
				r.Progress++
				if r.Outputs == nil {
					r.Outputs = map[string]string{}
				}
				r.Outputs[fmt.Sprintf("w%02d", i)] = "k"
				return nil
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("update: %v", err)
		}
	}
	rec := e.record(t, "race")
	if rec.Progress != writers || len(rec.Outputs) != writers {
		t.Errorf("progress=%d outputs=%d, want %d each", rec.Progress, len(rec.Outputs), writers)
	}
}

// TestUpdateConflictBound: a writer that always loses gives up with
// ErrConflict after UpdateRetries attempts.
func TestUpdateConflictBound(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.UpdateRetries = 3
	e := newEnv(t, cfg)
	ctx := testCtx(t, 10*time.Second)
	if _, err := e.q.Create(ctx, Record{ID: "lose", Kind: KindGeneration}); err != nil {
		t.Fatal(err)
	}
	calls := 0
	_, err := e.q.Update(ctx, "lose", func(r *Record) error {
		calls++
		// Another writer sneaks in between our read and our write.
		if _, err := e.q.Update(context.Background(), "lose", func(o *Record) error { o.Progress++; return nil }); err != nil {
			return err
		}
		r.Worker = "me"
		return nil
	})
	if !errors.Is(err, ErrConflict) || calls != 3 {
		t.Errorf("err=%v calls=%d, want ErrConflict after 3", err, calls)
	}
}
