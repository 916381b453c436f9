package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/vfxrender/vfx/internal/retry"
	"github.com/vfxrender/vfx/job"
)

func TestConnect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	nc, err := Connect(testCtx(t, 5*time.Second), ConnConfig{URL: e.srv.ClientURL(), Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()

	// Nothing listens here: Connect keeps retrying until ctx ends.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = Connect(ctx, ConnConfig{URL: "nats://127.0.0.1:1", ReconnectWait: 50 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("connect to nothing: %v, want deadline exceeded", err)
	}
}

func TestSubmitTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	ctx := testCtx(t, 10*time.Second)
	first, created, err := e.q.Submit(ctx, Record{ID: "gen_a", Kind: KindGeneration, Owner: "acct"})
	if err != nil || !created || first.Status != StatusInQueue {
		t.Fatalf("first submit: %+v created=%v err=%v", first, created, err)
	}
	second, created, err := e.q.Submit(ctx, Record{ID: "gen_a", Kind: KindGeneration, Owner: "acct", Seed: 7})
	if err != nil || created || second.Seed != 0 || !second.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("second submit: %+v created=%v err=%v", second, created, err)
	}
	if n := e.streamInfo(t, StreamJobs).State.Msgs; n != 1 {
		t.Errorf("VFX_JOBS holds %d messages, want 1", n)
	}
	// A finished job is returned as is and not queued again.
	if _, err := e.q.Update(ctx, "gen_a", func(r *Record) error { r.Status = StatusFailed; return nil }); err != nil {
		t.Fatal(err)
	}
	third, created, err := e.q.Submit(ctx, Record{ID: "gen_a", Kind: KindGeneration})
	if err != nil || created || third.Status != StatusFailed {
		t.Fatalf("third submit: %+v created=%v err=%v", third, created, err)
	}
}

func TestSubmitConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	ctx := testCtx(t, 20*time.Second)
	const n = 50
	var wg sync.WaitGroup
	var createdN atomic.Int32
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, created, err := e.q.Submit(ctx, Record{ID: "gen_same", Kind: KindGeneration, Owner: "acct"})
			if created {
				createdN.Add(1)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("submit: %v", err)
		}
	}
	if got := createdN.Load(); got != 1 {
		t.Errorf("%d submits created the record, want 1", got)
	}
	if n := e.streamInfo(t, StreamJobs).State.Msgs; n != 1 {
		t.Errorf("VFX_JOBS holds %d messages, want 1", n)
	}
	keys, err := e.q.kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for range keys.Keys() {
		count++
	}
	if count != 1 {
		t.Errorf("%d records, want 1", count)
	}
}

// TestSubmitRepublishes: the record was created but its message never
// published (crash in between); submitting again queues it.
func TestSubmitRepublishes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	ctx := testCtx(t, 10*time.Second)
	if _, err := e.q.Create(ctx, Record{ID: "gen_orphan", Kind: KindGeneration}); err != nil {
		t.Fatal(err)
	}
	if n := e.streamInfo(t, StreamJobs).State.Msgs; n != 0 {
		t.Fatalf("VFX_JOBS holds %d messages before submit", n)
	}
	if _, created, err := e.q.Submit(ctx, Record{ID: "gen_orphan", Kind: KindGeneration}); err != nil || created {
		t.Fatalf("submit: created=%v err=%v", created, err)
	}
	if _, _, err := e.q.Submit(ctx, Record{ID: "gen_orphan", Kind: KindGeneration}); err != nil {
		t.Fatal(err)
	}
	if n := e.streamInfo(t, StreamJobs).State.Msgs; n != 1 {
		t.Errorf("VFX_JOBS holds %d messages, want 1", n)
	}
	d := e.next(t, e.consumer(t), 5*time.Second)
	if d.JobID != "gen_orphan" || d.Kind != KindGeneration {
		t.Errorf("delivery %+v", d)
	}
}

func TestNextPullsOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	for i := range 3 {
		e.submit(t, jobID(i))
	}
	c := e.consumer(t)
	d := e.next(t, c, 5*time.Second)
	if d.JobID != jobID(0) || d.Attempt != 1 {
		t.Errorf("delivery %s attempt %d, want %s attempt 1", d.JobID, d.Attempt, jobID(0))
	}
	// The server updates NumPending asynchronously: poll for it.
	eventually(t, 5*time.Second, "one ack pending, two pending", func() (bool, string) {
		ci := e.consumerInfo(t)
		return ci.NumAckPending == 1 && ci.NumPending == 2,
			fmt.Sprintf("ack pending %d, pending %d; want 1 and 2", ci.NumAckPending, ci.NumPending)
	})
	if err := d.Done(testCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := d.Done(testCtx(t, 5*time.Second)); !errors.Is(err, ErrSettled) {
		t.Errorf("second Done: %v, want ErrSettled", err)
	}
	eventually(t, 5*time.Second, "after Done: none ack pending, two pending", func() (bool, string) {
		ci := e.consumerInfo(t)
		return ci.NumAckPending == 0 && ci.NumPending == 2,
			fmt.Sprintf("ack pending %d, pending %d; want 0 and 2", ci.NumAckPending, ci.NumPending)
	})
	if n := e.streamInfo(t, StreamJobs).State.Msgs; n != 2 {
		t.Errorf("VFX_JOBS holds %d messages, want 2", n)
	}
	// Next honours ctx while nothing is there.
	for range 2 {
		e.next(t, c, 5*time.Second)
	}
	start := time.Now()
	_, err := c.Next(testCtx(t, 200*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Errorf("empty Next: %v after %v", err, time.Since(start))
	}
}

func TestKeepAlive(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.AckWait = time.Second
	e := newEnv(t, cfg)
	e.submit(t, "gen_keep")
	e.submit(t, "gen_lapse")
	c := e.consumer(t)

	kept := e.next(t, c, 5*time.Second)
	stop := kept.KeepAlive(testCtx(t, 30*time.Second))
	defer stop()
	lapsed := e.next(t, c, 5*time.Second)
	if kept.JobID != "gen_keep" || lapsed.JobID != "gen_lapse" {
		t.Fatalf("deliveries %s, %s", kept.JobID, lapsed.JobID)
	}

	// Without heartbeats gen_lapse comes back after AckWait, as attempt 2;
	// gen_keep must not, even 3 AckWaits later.
	again := e.next(t, c, 5*time.Second)
	if again.JobID != "gen_lapse" || again.Attempt != 2 {
		t.Errorf("redelivery %s attempt %d, want gen_lapse attempt 2", again.JobID, again.Attempt)
	}
	if err := again.Done(testCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if d, err := c.Next(testCtx(t, 3*time.Second)); err == nil {
		t.Fatalf("got %s attempt %d while it was kept alive", d.JobID, d.Attempt)
	}
	if time.Since(kept.Received) < 3*cfg.AckWait {
		t.Fatalf("test did not outlast AckWait: %v", time.Since(kept.Received))
	}
	ci := e.consumerInfo(t)
	if ci.NumAckPending != 1 {
		t.Errorf("ack pending %d, want 1", ci.NumAckPending)
	}
	stop()
	if err := kept.Done(testCtx(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// TestKeepAliveCap: past MaxJobDuration the heartbeats stop and the job is
// redelivered.
func TestKeepAliveCap(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.AckWait = time.Second
	cfg.MaxJobDuration = 1500 * time.Millisecond
	e := newEnv(t, cfg)
	e.submit(t, "gen_stuck")
	c := e.consumer(t)
	d := e.next(t, c, 5*time.Second)
	stop := d.KeepAlive(testCtx(t, 30*time.Second))
	defer stop()
	again := e.next(t, c, 10*time.Second)
	if again.JobID != "gen_stuck" || again.Attempt != 2 {
		t.Fatalf("redelivery %s attempt %d", again.JobID, again.Attempt)
	}
	if el := time.Since(d.Received); el < cfg.MaxJobDuration {
		t.Errorf("redelivered after %v, before MaxJobDuration %v", el, cfg.MaxJobDuration)
	}
}

func TestRetry(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.RetryDelays = []time.Duration{300 * time.Millisecond}
	e := newEnv(t, cfg)
	e.submit(t, "gen_retry")
	c := e.consumer(t)
	d := e.next(t, c, 5*time.Second)
	if _, err := d.Claim(testCtx(t, 5*time.Second), "w1"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := d.Retry(testCtx(t, 5*time.Second), errors.New("gpu busy")); err != nil {
		t.Fatal(err)
	}
	again := e.next(t, c, 5*time.Second)
	if again.JobID != "gen_retry" || again.Attempt != 2 {
		t.Errorf("redelivery %s attempt %d, want attempt 2", again.JobID, again.Attempt)
	}
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Errorf("redelivered after %v, before the retry delay", el)
	}
	rec := e.record(t, "gen_retry")
	if rec.Status != StatusProcessing || rec.LastError != "gpu busy" || rec.Error != "" {
		t.Errorf("record after retry: status=%s last_error=%q error=%q", rec.Status, rec.LastError, rec.Error)
	}
	rec, err := again.Claim(testCtx(t, 5*time.Second), "w2")
	if err != nil || rec.Attempt != 2 || rec.Worker != "w2" {
		t.Errorf("reclaim: %+v %v", rec, err)
	}
}

// TestFailErrorCode: Fail records the code of a reason's *job.InputError
// as the record's ErrorCode and the reason's text without that code as its
// Error (job.Failure); a reason without one leaves ErrorCode empty.
func TestFailErrorCode(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	e.submit(t, "gen_coded")
	e.submit(t, "gen_plain")
	c := e.consumer(t)
	for range 2 {
		d := e.next(t, c, 5*time.Second)
		reason := error(Permanent(fmt.Errorf("worker: %w", job.Errorf(job.CodeSourceTooLarge, "source: 3000000 pixels"))))
		if d.JobID == "gen_plain" {
			reason = Permanent(errors.New("worker: disk full"))
		}
		if err := d.Fail(testCtx(t, 5*time.Second), reason); err != nil {
			t.Fatal(err)
		}
	}
	if rec := e.record(t, "gen_coded"); rec.ErrorCode != job.CodeSourceTooLarge || rec.Error != "worker: source: 3000000 pixels" {
		t.Errorf("coded: error %q code %q", rec.Error, rec.ErrorCode)
	}
	if rec := e.record(t, "gen_plain"); rec.ErrorCode != "" || rec.Error != "worker: disk full" {
		t.Errorf("plain: error %q code %q", rec.Error, rec.ErrorCode)
	}
}

// TestRecordMigration reads failed records as older code stored them: with
// the code only as the "CODE: " prefix of error (before error_code), and
// with both (before the prefix went). Each reads as today's record (code in
// ErrorCode, no prefix in Error), through Get and through Update's
// compare-and-swap read; an error without a code stays as it is.
func TestRecordMigration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	ctx := testCtx(t, 10*time.Second)
	for _, c := range []struct {
		id, stored string
		code       job.Code
		msg        string
	}{
		{"old_prefix", `"error":"INVALID_FILE_FORMAT: source: not an image"`, job.CodeInvalidFileFormat, "source: not an image"},
		{"old_both", `"error":"SOURCE_TOO_LARGE: source: 3000000 pixels","error_code":"SOURCE_TOO_LARGE"`, job.CodeSourceTooLarge, "source: 3000000 pixels"},
		{"old_cancel", `"error":"CANCELLED: cancelled by the client"`, "CANCELLED", "cancelled by the client"},
		{"today", `"error":"source: 404","error_code":"SOURCE_UNREACHABLE"`, job.CodeSourceUnreachable, "source: 404"},
		{"internal", `"error":"worker: gave up after 5 delivery attempts (last error: SOURCE_UNREACHABLE: x)"`, "", "worker: gave up after 5 delivery attempts (last error: SOURCE_UNREACHABLE: x)"},
		{"lowercase", `"error":"store: timeout"`, "", "store: timeout"},
	} {
		raw := `{"id":"` + c.id + `","kind":"generation","owner":"acct_x","status":"failed","progress":0,"seed":1,` + c.stored +
			`,"attempt":1,"created_at":"2026-01-02T03:04:05Z","modified_at":"2026-01-02T03:04:06Z","completed_at":"2026-01-02T03:04:06Z"}`
		if _, err := e.q.kv.Create(ctx, c.id, []byte(raw)); err != nil {
			t.Fatal(err)
		}
		rec, _, err := e.q.Get(ctx, c.id)
		if err != nil || rec.ErrorCode != c.code || rec.Error != c.msg {
			t.Errorf("%s: get: code %q error %q (%v), want %q %q", c.id, rec.ErrorCode, rec.Error, err, c.code, c.msg)
		}
		// Update reads it too (and leaves a terminal record alone).
		rec, err = e.q.Update(ctx, c.id, func(*Record) error { return nil })
		if !errors.Is(err, ErrTerminal) || rec.ErrorCode != c.code || rec.Error != c.msg {
			t.Errorf("%s: update: code %q error %q (%v), want %q %q", c.id, rec.ErrorCode, rec.Error, err, c.code, c.msg)
		}
		// The job APIs show what an old record's error said.
		var stored struct{ Error string }
		if err := json.Unmarshal([]byte(raw), &stored); err != nil {
			t.Fatal(err)
		}
		if shown := job.FailureText(rec.ErrorCode, rec.Error); c.id != "today" && shown != stored.Error {
			t.Errorf("%s: shown as %q, stored %q", c.id, shown, stored.Error)
		}
	}
}

// TestFailLongReason: a long reason of multi-byte characters is cut for
// the dead letter's header without splitting a character.
func TestFailLongReason(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	e.submit(t, "gen_long")
	d := e.next(t, e.consumer(t), 5*time.Second)
	reason := "x" + strings.Repeat("é", 1000)
	if err := d.Fail(testCtx(t, 5*time.Second), Permanent(errors.New(reason))); err != nil {
		t.Fatal(err)
	}
	if rec := e.record(t, "gen_long"); rec.Error != reason {
		t.Errorf("record error cut: %d bytes", len(rec.Error))
	}
	dl := e.dlq(t)
	if len(dl) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dl))
	}
	h := dl[0].Header.Get(HeaderReason)
	if !utf8.ValidString(h) || len(h) > 1024+len("…") || !strings.HasSuffix(h, "é…") {
		t.Errorf("reason header: %d bytes, valid UTF-8 %v, ends %q", len(h), utf8.ValidString(h), h[max(0, len(h)-8):])
	}
}

func TestFail(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	e.submit(t, "gen_bad")
	c := e.consumer(t)
	d := e.next(t, c, 5*time.Second)
	reason := Permanent(job.Errorf(job.CodeInvalidFileFormat, "source is not a video"))
	if err := d.Fail(testCtx(t, 5*time.Second), reason); err != nil {
		t.Fatal(err)
	}
	rec := e.record(t, "gen_bad")
	if rec.Status != StatusFailed || rec.ErrorCode != job.CodeInvalidFileFormat || rec.Error != "source is not a video" || rec.CompletedAt == nil {
		t.Errorf("record: status=%s code=%q error=%q", rec.Status, rec.ErrorCode, rec.Error)
	}
	eventually(t, 5*time.Second, "job message deleted", func() (bool, string) {
		n := e.streamInfo(t, StreamJobs).State.Msgs
		return n == 0, fmt.Sprintf("%d messages", n)
	})
	dl := e.dlq(t)
	if len(dl) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dl))
	}
	if dl[0].Header.Get(HeaderJobID) != "gen_bad" || dl[0].Header.Get(HeaderAttempt) != "1" ||
		!strings.Contains(dl[0].Header.Get(HeaderReason), "INVALID_FILE_FORMAT") {
		t.Errorf("dead letter headers %v", dl[0].Header)
	}
	var body DeadLetter
	if err := json.Unmarshal(dl[0].Data, &body); err != nil || body.JobID != "gen_bad" || string(body.Data) != "gen_bad" {
		t.Errorf("dead letter body %+v %v", body, err)
	}
	if d, err := c.Next(testCtx(t, 2500*time.Millisecond)); err == nil {
		t.Errorf("failed job redelivered: %s attempt %d", d.JobID, d.Attempt)
	}
}

// TestMaxDeliveries: a job that is always retried is delivered MaxDeliver
// times, then the advisory watchers (two, racing) fail it.
func TestMaxDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	e.submit(t, "gen_flaky")
	e.submit(t, "gen_fine")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.q.WatchMaxDeliveries(ctx, nil); err != nil {
				t.Errorf("watch: %v", err)
			}
		}()
	}
	var calls atomic.Int32
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := e.consumer(t).Run(ctx, RunConfig{Slots: 1}, func(ctx context.Context, d *Delivery) error {
			if _, err := d.Claim(ctx, "w1"); err != nil {
				return err
			}
			if d.JobID == "gen_fine" {
				_, err := e.q.Update(ctx, d.JobID, func(r *Record) error { r.Status = StatusCompleted; return nil })
				return err
			}
			calls.Add(1)
			return fmt.Errorf("encoder crashed (attempt %d)", d.Attempt)
		})
		if err != nil {
			t.Errorf("run: %v", err)
		}
	}()

	eventually(t, 20*time.Second, "gen_flaky failed", func() (bool, string) {
		rec := e.record(t, "gen_flaky")
		return rec.Status == StatusFailed, string(rec.Status)
	})
	rec := e.record(t, "gen_flaky")
	want := "worker: gave up after 5 delivery attempts (last error: encoder crashed (attempt 5))"
	if rec.Error != want {
		t.Errorf("error = %q, want %q", rec.Error, want)
	}
	eventually(t, 10*time.Second, "VFX_JOBS empty", func() (bool, string) {
		n := e.streamInfo(t, StreamJobs).State.Msgs
		return n == 0, fmt.Sprintf("%d messages", n)
	})
	if got := e.record(t, "gen_fine").Status; got != StatusCompleted {
		t.Errorf("gen_fine is %s", got)
	}
	dl := e.dlq(t)
	if len(dl) != 1 || dl[0].Header.Get(HeaderJobID) != "gen_flaky" || dl[0].Header.Get(HeaderAttempt) != "5" {
		t.Errorf("dead letters: %d %v", len(dl), dl)
	}
	if n := calls.Load(); n != 5 {
		t.Errorf("handler ran %d times on gen_flaky, want 5", n)
	}
	// Exactly one failed event for the exhausted job (two watchers ran).
	eventually(t, 10*time.Second, "failed event", func() (bool, string) {
		n := 0
		for seq := uint64(1); seq <= e.streamInfo(t, StreamEvents).State.LastSeq; seq++ {
			m, err := e.q.js.Stream(context.Background(), StreamEvents)
			if err != nil {
				return false, err.Error()
			}
			raw, err := m.GetMsg(context.Background(), seq)
			if err != nil {
				continue
			}
			var ev Event
			if json.Unmarshal(raw.Data, &ev) == nil && ev.JobID == "gen_flaky" {
				if ev.Status != StatusFailed {
					return false, "event status " + string(ev.Status)
				}
				n++
			}
		}
		return n == 1, fmt.Sprintf("%d events for gen_flaky", n)
	})
	eventually(t, 10*time.Second, "advisory acked", func() (bool, string) {
		c, err := e.q.js.Consumer(context.Background(), StreamAdvisories, ConsumerMaxDeliveries)
		if err != nil {
			return false, err.Error()
		}
		ci, err := c.Info(context.Background())
		if err != nil {
			return false, err.Error()
		}
		return ci.NumAckPending == 0 && ci.NumPending == 0 && ci.Delivered.Stream >= 1,
			fmt.Sprintf("ack pending %d pending %d", ci.NumAckPending, ci.NumPending)
	})
	cancel()
	wg.Wait()
}

// TestMaxDeliveriesTimeout: a worker that dies on the last attempt (no
// settle, no heartbeat) still ends with a failed record.
func TestMaxDeliveriesTimeout(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.AckWait = time.Second
	cfg.MaxDeliver = 2
	e := newEnv(t, cfg)
	e.submit(t, "gen_dies")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.q.WatchMaxDeliveries(ctx, nil) }()

	c := e.consumer(t)
	for attempt := 1; attempt <= 2; attempt++ {
		d := e.next(t, c, 5*time.Second)
		if d.Attempt != attempt {
			t.Fatalf("attempt %d, want %d", d.Attempt, attempt)
		}
		if _, err := d.Claim(testCtx(t, 5*time.Second), "w-dead"); err != nil {
			t.Fatal(err)
		}
		// Then the worker "dies": nothing settles d.
	}
	// The server only notices the last delivery's expiry (and sends the
	// advisory) when a pull request is waiting, as an idle worker's is.
	idleCtx, idleCancel := context.WithCancel(context.Background())
	idle := make(chan *Delivery, 1)
	go func() {
		d, _ := c.Next(idleCtx)
		idle <- d
	}()
	eventually(t, 10*time.Second, "gen_dies failed", func() (bool, string) {
		rec := e.record(t, "gen_dies")
		return rec.Status == StatusFailed, string(rec.Status)
	})
	idleCancel()
	if d := <-idle; d != nil {
		t.Errorf("job delivered past MaxDeliver: %s attempt %d", d.JobID, d.Attempt)
	}
	rec := e.record(t, "gen_dies")
	if !strings.HasPrefix(rec.Error, "worker: gave up after 2 delivery attempts") || !strings.Contains(rec.Error, "w-dead") {
		t.Errorf("error = %q", rec.Error)
	}
	eventually(t, 5*time.Second, "VFX_JOBS empty", func() (bool, string) {
		n := e.streamInfo(t, StreamJobs).State.Msgs
		return n == 0, fmt.Sprintf("%d messages", n)
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("watch: %v", err)
	}
}

// TestRunSlots: never more than Slots handlers at once, and every job done.
func TestRunSlots(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	const jobs = 12
	for i := range jobs {
		e.submit(t, jobID(i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var inFlight, peak, finished atomic.Int32
	errc := make(chan error, 1)
	go func() {
		errc <- e.consumer(t).Run(ctx, RunConfig{Slots: 2, Drain: 5 * time.Second}, func(ctx context.Context, d *Delivery) error {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			if _, err := d.Claim(ctx, "w"); err != nil {
				return err
			}
			// Pretend to work a little, so that slots overlap.
			if err := retry.Sleep(ctx, 30*time.Millisecond); err != nil {
				return err
			}
			// Work ahead of the record: the pull loop must still wait for a
			// free slot rather than the consumer's pending count.
			if ci := e.consumerInfo(t); ci.NumAckPending > 2 {
				t.Errorf("server shows %d jobs pending ack with 2 slots", ci.NumAckPending)
			}
			_, err := e.q.Update(ctx, d.JobID, func(r *Record) error { r.Status = StatusCompleted; return nil })
			if err == nil {
				finished.Add(1)
			}
			return err
		})
	}()
	eventually(t, 20*time.Second, "all jobs done", func() (bool, string) {
		n := e.streamInfo(t, StreamJobs).State.Msgs
		return n == 0 && finished.Load() == jobs, fmt.Sprintf("%d left, %d finished", n, finished.Load())
	})
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("run: %v", err)
	}
	if p := peak.Load(); p > 2 || p < 1 {
		t.Errorf("peak in flight %d, want 1..2", p)
	}
	for i := range jobs {
		if s := e.record(t, jobID(i)).Status; s != StatusCompleted {
			t.Errorf("%s is %s", jobID(i), s)
		}
	}
}

// TestRunDrain: on cancel Run stops pulling, lets handlers finish within
// Drain, and releases the ones that do not.
func TestRunDrain(t *testing.T) {
	t.Parallel()

	t.Run("finish within drain", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, fastConfig())
		for i := range 3 {
			e.submit(t, jobID(i))
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		started := make(chan string, 3)
		release := make(chan struct{})
		errc := make(chan error, 1)
		go func() {
			errc <- e.consumer(t).Run(ctx, RunConfig{Slots: 2, Drain: 10 * time.Second}, func(hctx context.Context, d *Delivery) error {
				started <- d.JobID
				<-release
				if hctx.Err() != nil {
					return hctx.Err()
				}
				_, err := e.q.Update(hctx, d.JobID, func(r *Record) error { r.Status = StatusFailed; r.Error = "x"; return nil })
				return err
			})
		}()
		<-started
		<-started
		cancel() // stop pulling; both handlers are still running
		select {
		case err := <-errc:
			t.Fatalf("Run returned before its handlers: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		close(release)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if n := e.streamInfo(t, StreamJobs).State.Msgs; n != 1 {
			t.Errorf("VFX_JOBS holds %d, want 1 (the job never pulled)", n)
		}
		ci := e.consumerInfo(t)
		if ci.NumAckPending != 0 {
			t.Errorf("ack pending %d after drain", ci.NumAckPending)
		}
	})

	t.Run("release after drain", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, fastConfig())
		e.submit(t, "gen_slow")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		started := make(chan struct{}, 1)
		errc := make(chan error, 1)
		go func() {
			errc <- e.consumer(t).Run(ctx, RunConfig{Slots: 2, Drain: 200 * time.Millisecond}, func(hctx context.Context, d *Delivery) error {
				started <- struct{}{}
				<-hctx.Done() // a long render that only stops when told
				return hctx.Err()
			})
		}()
		<-started
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		// Released at once: another worker gets it well before AckWait.
		d := e.next(t, e.consumer(t), 1500*time.Millisecond)
		if d.JobID != "gen_slow" || d.Attempt != 2 {
			t.Errorf("after release: %s attempt %d", d.JobID, d.Attempt)
		}
	})
}

func TestRunOutcomes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	e.submit(t, "gen_perm")
	e.submit(t, "gen_panic")
	e.submit(t, "gen_done_already")
	if _, err := e.q.Update(testCtx(t, 5*time.Second), "gen_done_already", func(r *Record) error { r.Status = StatusFailed; return nil }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var panics atomic.Int32
	errc := make(chan error, 1)
	go func() {
		errc <- e.consumer(t).Run(ctx, RunConfig{Slots: 3}, func(ctx context.Context, d *Delivery) error {
			switch d.JobID {
			case "gen_perm":
				return Permanent(job.Errorf(job.CodeMissingAlpha, "no matte given"))
			case "gen_panic":
				if panics.Add(1) == 1 {
					panic("boom")
				}
				_, err := d.Claim(ctx, "w")
				if err == nil {
					_, err = e.q.Update(ctx, d.JobID, func(r *Record) error { r.Status = StatusCompleted; return nil })
				}
				return err
			default:
				_, err := d.Claim(ctx, "w") // ErrTerminal: acked, not retried
				return err
			}
		})
	}()
	eventually(t, 10*time.Second, "all settled", func() (bool, string) {
		n := e.streamInfo(t, StreamJobs).State.Msgs
		return n == 0, fmt.Sprintf("%d left", n)
	})
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if r := e.record(t, "gen_perm"); r.Status != StatusFailed || r.ErrorCode != job.CodeMissingAlpha || r.Error != "no matte given" {
		t.Errorf("gen_perm: %s %q %q", r.Status, r.ErrorCode, r.Error)
	}
	if r := e.record(t, "gen_panic"); r.Status != StatusCompleted || !strings.Contains(r.LastError, "boom") {
		t.Errorf("gen_panic: %s last error %q", r.Status, r.LastError)
	}
	if dl := e.dlq(t); len(dl) != 1 || dl[0].Header.Get(HeaderJobID) != "gen_perm" {
		t.Errorf("dead letters: %d", len(dl))
	}
}

func TestMalformedJobMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	ctx := testCtx(t, 10*time.Second)
	if _, err := e.q.js.Publish(ctx, "vfx.jobs.generation", []byte("not a valid id!")); err != nil {
		t.Fatal(err)
	}
	e.submit(t, "gen_ok")
	d := e.next(t, e.consumer(t), 5*time.Second)
	if d.JobID != "gen_ok" {
		t.Errorf("got %s", d.JobID)
	}
	if dl := e.dlq(t); len(dl) != 1 || !strings.Contains(dl[0].Header.Get(HeaderReason), "malformed") {
		t.Errorf("dead letters %d", len(dl))
	}
}

func TestEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	ctx := testCtx(t, 20*time.Second)
	ev := Event{JobID: "gen_e", Kind: KindGeneration, Status: StatusCompleted}
	for range 3 {
		if err := e.q.PublishEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.q.PublishEvent(ctx, Event{JobID: "gen_f", Kind: KindGeneration, Status: StatusFailed}); err != nil {
		t.Fatal(err)
	}
	if err := e.q.PublishEvent(ctx, Event{JobID: "gen_g", Status: "weird"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad status: %v", err)
	}
	if n := e.streamInfo(t, StreamEvents).State.Msgs; n != 2 {
		t.Errorf("VFX_EVENTS holds %d, want 2 (duplicates dropped)", n)
	}
	if _, err := e.q.Events(ctx, "bad.name"); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad durable: %v", err)
	}
	ec, err := e.q.Events(ctx, "webhooks")
	if err != nil {
		t.Fatal(err)
	}
	// Nak the first delivery of gen_e: it comes back as attempt 2 (maybe
	// after gen_f); ack everything else.
	seen := map[string][]int{}
	for len(seen["gen_e"]) < 2 || len(seen["gen_f"]) < 1 {
		d, err := ec.Next(ctx)
		if err != nil {
			t.Fatalf("next event (seen %v): %v", seen, err)
		}
		if d.Event.At.IsZero() || d.Event.Kind != KindGeneration {
			t.Errorf("event %+v", d.Event)
		}
		seen[d.Event.JobID] = append(seen[d.Event.JobID], d.Attempt)
		if d.Event.JobID == "gen_e" && d.Attempt == 1 {
			if d.Event.Status != StatusCompleted {
				t.Errorf("gen_e status %s", d.Event.Status)
			}
			if err := d.Nak(ctx, 0); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(seen["gen_e"]) != "[1 2]" || fmt.Sprint(seen["gen_f"]) != "[1]" {
		t.Errorf("deliveries %v", seen)
	}
	// A second process using the same durable shares the cursor.
	ec2, err := e.q.Events(ctx, "webhooks")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := ec2.Next(testCtx(t, 300*time.Millisecond)); err == nil {
		t.Errorf("acked event delivered again: %+v", d.Event)
	}
	// Events are kept (limits retention) after acks.
	if n := e.streamInfo(t, StreamEvents).State.Msgs; n != 2 {
		t.Errorf("VFX_EVENTS holds %d after acks, want 2", n)
	}
}

// TestEmbeddedRestart: state survives a server restart on the same store.
func TestEmbeddedRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := testCtx(t, 20*time.Second)
	srv, err := StartEmbedded(ctx, EmbeddedConfig{StoreDir: dir, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := Connect(ctx, ConnConfig{URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	q, err := Open(ctx, nc, fastConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := q.Submit(ctx, Record{ID: "gen_persist", Kind: KindGeneration}); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	srv.Shutdown()
	srv.Shutdown() // idempotent

	srv, err = StartEmbedded(ctx, EmbeddedConfig{StoreDir: dir, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err = Connect(ctx, ConnConfig{URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	q, err = Open(ctx, nc, fastConfig())
	if err != nil {
		t.Fatal(err)
	}
	if rec, _, err := q.Get(ctx, "gen_persist"); err != nil || rec.Status != StatusInQueue {
		t.Fatalf("after restart: %+v %v", rec, err)
	}
	c, err := q.Consumer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := c.Next(ctx); err != nil || d.JobID != "gen_persist" {
		t.Fatalf("after restart next: %v", err)
	}
}

// TestWatchIdempotent: the same advisory handled twice (a redelivered
// advisory, or two watchers) fails the job once and dead-letters it once; a
// job whose record is completed is only removed from the stream.
func TestWatchIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	ctx := testCtx(t, 20*time.Second)
	e.submit(t, "gen_w1") // stream seq 1
	e.submit(t, "gen_w2") // stream seq 2
	if _, err := e.q.Update(ctx, "gen_w2", func(r *Record) error { r.Status = StatusProcessing; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.Update(ctx, "gen_w2", func(r *Record) error { r.Status = StatusCompleted; return nil }); err != nil {
		t.Fatal(err)
	}
	subject := "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.VFX_JOBS.workers"
	for _, seq := range []int{1, 1, 2} {
		body := fmt.Sprintf(`{"type":"io.nats.jetstream.advisory.v1.max_deliver","stream":"VFX_JOBS","consumer":"workers","stream_seq":%d,"deliveries":5}`, seq)
		if _, err := e.q.js.Publish(ctx, subject, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.q.WatchMaxDeliveries(wctx, nil) }()
	eventually(t, 10*time.Second, "advisories acked", func() (bool, string) {
		c, err := e.q.js.Consumer(ctx, StreamAdvisories, ConsumerMaxDeliveries)
		if err != nil {
			return false, err.Error()
		}
		ci, err := c.Info(ctx)
		if err != nil {
			return false, err.Error()
		}
		return ci.AckFloor.Stream == 3, fmt.Sprintf("ack floor %d", ci.AckFloor.Stream)
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r := e.record(t, "gen_w1"); r.Status != StatusFailed || r.Error != "worker: gave up after 5 delivery attempts (no error reported; the job timed out)" {
		t.Errorf("gen_w1: %s %q", r.Status, r.Error)
	}
	if r := e.record(t, "gen_w2"); r.Status != StatusCompleted || r.Error != "" {
		t.Errorf("gen_w2: %s %q", r.Status, r.Error)
	}
	if dl := e.dlq(t); len(dl) != 1 || dl[0].Header.Get(HeaderJobID) != "gen_w1" {
		t.Errorf("dead letters: %d", len(dl))
	}
	if n := e.streamInfo(t, StreamJobs).State.Msgs; n != 0 {
		t.Errorf("VFX_JOBS holds %d", n)
	}
}

// TestConsume: the event loop acks an event its handler returns 0 for and
// offers one it returns a delay for again after that delay, then returns
// when ctx ends.
func TestConsume(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	ctx := testCtx(t, 20*time.Second)
	for _, id := range []string{"gen_a", "gen_b"} {
		if err := e.q.PublishEvent(ctx, Event{JobID: id, Kind: KindGeneration, Status: StatusCompleted}); err != nil {
			t.Fatal(err)
		}
	}
	ec, err := e.q.Events(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	seen := map[string][]int{}
	var firstB time.Time
	var gap time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		ec.Consume(cctx, zap.NewNop(), func(_ context.Context, d *EventDelivery) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			seen[d.Event.JobID] = append(seen[d.Event.JobID], d.Attempt)
			if d.Event.JobID == "gen_b" && d.Attempt == 1 {
				firstB = time.Now()
				return 300 * time.Millisecond // offered again, later
			}
			if d.Event.JobID == "gen_b" {
				gap = time.Since(firstB)
				cancel()
			}
			return 0
		})
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("Consume did not return when its context ended")
	}
	if fmt.Sprint(seen["gen_a"]) != "[1]" || fmt.Sprint(seen["gen_b"]) != "[1 2]" {
		t.Errorf("deliveries %v, want gen_a once and gen_b twice", seen)
	}
	if gap < 300*time.Millisecond {
		t.Errorf("gen_b came back after %v, before its 300ms delay", gap)
	}
	// Both were acknowledged: nothing is left for the durable.
	if d, err := ec.Next(testCtx(t, 300*time.Millisecond)); err == nil {
		t.Errorf("acked event delivered again: %+v", d.Event)
	}
}
