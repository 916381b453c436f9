package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// sweepConfig: fast deliveries and a short staleness.
func sweepConfig() Config {
	cfg := fastConfig()
	cfg.AckWait = time.Second
	cfg.MaxDeliver = 2
	cfg.RecordHeartbeat = 100 * time.Millisecond
	cfg.StaleAfter = 2 * time.Second
	cfg.SweepBatch = 3 // smaller than what the tests queue: passes page
	return cfg
}

// events counts the events of a job in VFX_EVENTS, by status.
func (e *testEnv) events(t testing.TB, id string) map[Status]int {
	t.Helper()
	ctx := testCtx(t, 5*time.Second)
	s, err := e.q.js.Stream(ctx, StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	out := map[Status]int{}
	for seq := uint64(1); seq <= e.streamInfo(t, StreamEvents).State.LastSeq; seq++ {
		raw, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		var ev Event
		if json.Unmarshal(raw.Data, &ev) == nil && ev.JobID == id {
			out[ev.Status]++
		}
	}
	return out
}

// sweepUntil runs passes until cond holds (bounded by timeout).
func sweepUntil(t *testing.T, sw *Sweeper, timeout time.Duration, what string, cond func() (bool, string)) SweepStats {
	t.Helper()
	var total SweepStats
	eventually(t, timeout, what, func() (bool, string) {
		st, err := sw.Pass(testCtx(t, 5*time.Second))
		if err != nil {
			return false, err.Error()
		}
		total.Exhausted += st.Exhausted
		total.Lost += st.Lost
		total.Cleaned += st.Cleaned
		total.Errors += st.Errors
		return cond()
	})
	return total
}

// TestSweepExhaustedNoPull: a worker dies on the last attempt and no pull
// request is waiting afterwards, so nothing makes the server report the
// exhausted message; the sweeper fails the job (and leaves queued jobs,
// stale as they are, alone).
func TestSweepExhaustedNoPull(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sweepConfig())
	e.submit(t, "gen_dies")
	c := e.consumer(t)
	for attempt := 1; attempt <= 2; attempt++ {
		d := e.next(t, c, 10*time.Second)
		if d.JobID != "gen_dies" || d.Attempt != attempt {
			t.Fatalf("got %s attempt %d, want gen_dies attempt %d", d.JobID, d.Attempt, attempt)
		}
		if _, err := d.Claim(testCtx(t, 5*time.Second), "w-dead"); err != nil {
			t.Fatal(err)
		}
		// The worker "dies": nothing settles d and nothing heartbeats.
	}
	for i := range 4 { // queued, never pulled: they go stale but have their message
		e.submit(t, jobID(i))
	}
	sw := e.q.NewSweeper(nil)
	total := sweepUntil(t, sw, 20*time.Second, "gen_dies failed", func() (bool, string) {
		rec := e.record(t, "gen_dies")
		return rec.Status == StatusFailed, string(rec.Status)
	})
	rec := e.record(t, "gen_dies")
	want := "worker: gave up after 2 delivery attempts (no error reported; last worker w-dead stopped responding)"
	if rec.Error != want {
		t.Errorf("error = %q, want %q", rec.Error, want)
	}
	if total.Exhausted != 1 || total.Lost != 0 || total.Errors != 0 {
		t.Errorf("sweep stats %+v, want 1 exhausted", total)
	}
	if ev := e.events(t, "gen_dies"); ev[StatusFailed] != 1 || len(ev) != 1 {
		t.Errorf("events of gen_dies: %v, want one failed", ev)
	}
	dl := e.dlq(t)
	if len(dl) != 1 || dl[0].Header.Get(HeaderJobID) != "gen_dies" || dl[0].Header.Get(HeaderAttempt) != "2" ||
		dl[0].Header.Get(HeaderStreamSeq) != "1" {
		t.Errorf("dead letters: %d %v", len(dl), dl)
	}
	// The queued jobs stayed; only the exhausted message left VFX_JOBS.
	if n := e.streamInfo(t, StreamJobs).State.Msgs; n != 4 {
		t.Errorf("VFX_JOBS holds %d messages, want the 4 queued", n)
	}
	// More passes, well past StaleAfter, over every record (SweepBatch 3 < 5).
	for range 4 {
		if _, err := sw.Pass(testCtx(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		if r := e.record(t, jobID(i)); r.Status != StatusInQueue {
			t.Errorf("%s is %s (%s), want in_queue", r.ID, r.Status, r.Error)
		}
	}
	// No pull was ever waiting: the server reported nothing.
	if n := e.streamInfo(t, StreamAdvisories).State.Msgs; n != 0 {
		t.Logf("note: the server sent %d MAX_DELIVERIES advisories after all", n)
	}
	// And a worker pulling now gets a queued job, never gen_dies again.
	d := e.next(t, c, 10*time.Second)
	if d.JobID == "gen_dies" {
		t.Errorf("gen_dies delivered again (attempt %d)", d.Attempt)
	}
}

// TestSweepLostMessage: a job whose message left VFX_JOBS while its record
// is processing and no heartbeat comes is failed; an in_queue record whose
// message never made it (the submitter died before publishing) too.
func TestSweepLostMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sweepConfig())
	ctx := testCtx(t, 30*time.Second)
	e.submit(t, "gen_lost")
	d := e.next(t, e.consumer(t), 10*time.Second)
	if _, err := d.Claim(ctx, "w-gone"); err != nil {
		t.Fatal(err)
	}
	if err := e.q.jobs.DeleteMsg(ctx, d.StreamSeq); err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.Create(ctx, Record{ID: "gen_unpublished", Kind: KindGeneration, Owner: "acct_1"}); err != nil {
		t.Fatal(err)
	}
	sw := e.q.NewSweeper(nil)
	total := sweepUntil(t, sw, 20*time.Second, "both failed", func() (bool, string) {
		a, b := e.record(t, "gen_lost"), e.record(t, "gen_unpublished")
		return a.Status == StatusFailed && b.Status == StatusFailed, string(a.Status) + "/" + string(b.Status)
	})
	if total.Lost != 2 || total.Exhausted != 0 {
		t.Errorf("sweep stats %+v, want 2 lost", total)
	}
	for _, id := range []string{"gen_lost", "gen_unpublished"} {
		rec := e.record(t, id)
		if !strings.HasPrefix(rec.Error, "queue: job message lost from VFX_JOBS") {
			t.Errorf("%s error = %q", id, rec.Error)
		}
		if ev := e.events(t, id); ev[StatusFailed] != 1 || len(ev) != 1 {
			t.Errorf("events of %s: %v, want one failed", id, ev)
		}
	}
	if !strings.Contains(e.record(t, "gen_lost").Error, "was processing") {
		t.Errorf("gen_lost error = %q", e.record(t, "gen_lost").Error)
	}
	if dl := e.dlq(t); len(dl) != 2 {
		t.Errorf("dead letters: %d, want 2", len(dl))
	}
	// The worker that was presumed dead finishes after all: the record
	// stays failed.
	if _, err := e.q.Update(ctx, "gen_lost", func(r *Record) error { r.Status = StatusCompleted; return nil }); !errors.Is(err, ErrTerminal) {
		t.Errorf("late completion: %v, want ErrTerminal", err)
	}
}

// TestSweepLeavesRunningJobs: jobs that are being worked on (heartbeats
// flowing), on their last attempt and even with their message gone, are
// never touched however many passes run past StaleAfter; nor is a job
// awaiting its redelivery. Without the heartbeats both would be failed
// (TestSweepExhaustedNoPull, TestSweepLostMessage).
func TestSweepLeavesRunningJobs(t *testing.T) {
	t.Parallel()
	cfg := sweepConfig()
	cfg.MaxDeliver = 1 // the first delivery is the last
	e := newEnv(t, cfg)
	ctx := testCtx(t, 60*time.Second)
	c := e.consumer(t)
	var running []*Delivery
	for _, id := range []string{"gen_long", "gen_long_nomsg"} {
		e.submit(t, id)
		d := e.next(t, c, 10*time.Second)
		if d.JobID != id {
			t.Fatalf("got %s, want %s", d.JobID, id)
		}
		if _, err := d.Claim(ctx, "w-alive"); err != nil {
			t.Fatal(err)
		}
		stop := d.KeepAlive(ctx)
		defer stop()
		running = append(running, d)
	}
	if err := e.q.jobs.DeleteMsg(ctx, running[1].StreamSeq); err != nil {
		t.Fatal(err)
	}
	sw := e.q.NewSweeper(nil)
	deadline := time.Now().Add(2*cfg.StaleAfter + time.Second)
	passes := 0
	for time.Now().Before(deadline) {
		st, err := sw.Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Exhausted+st.Lost+st.Cleaned != 0 {
			t.Fatalf("pass %d touched a running job: %+v", passes, st)
		}
		passes++
		time.Sleep(50 * time.Millisecond)
	}
	for _, d := range running {
		rec := e.record(t, d.JobID)
		if rec.Status != StatusProcessing || rec.HeartbeatAt == nil {
			t.Errorf("%s: %s heartbeat %v (%s)", d.JobID, rec.Status, rec.HeartbeatAt, rec.Error)
		}
	}
	if n := len(e.dlq(t)); n != 0 {
		t.Errorf("%d dead letters", n)
	}
	// The job finishes normally; its message leaves; nothing is left over.
	for _, d := range running {
		if _, err := e.q.Update(ctx, d.JobID, func(r *Record) error { r.Status = StatusCompleted; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := running[0].Done(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d passes", passes)
}

// TestSweepRacesWatcher: sweepers and watchers failing the same exhausted
// jobs at once: each job is failed once, dead-lettered once, and has
// exactly one failed event.
func TestSweepRacesWatcher(t *testing.T) {
	t.Parallel()
	cfg := sweepConfig()
	cfg.MaxDeliver = 5
	cfg.SweepBatch = 100
	e := newEnv(t, cfg)
	ctx := testCtx(t, 60*time.Second)
	const jobs = 6
	for i := range jobs {
		e.submit(t, jobID(i)) // stream seq i+1
		// As a dead worker leaves it on its last attempt.
		if _, err := e.q.Update(ctx, jobID(i), func(r *Record) error {
			r.Status, r.Attempt, r.Worker, r.LastError = StatusProcessing, 5, "w-dead", "gpu fell off the bus"
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The consumer must have delivered them for the sweeper to look.
	c := e.consumer(t)
	for range jobs {
		e.next(t, c, 10*time.Second) // never settled
	}
	eventually(t, 10*time.Second, "records stale", func() (bool, string) {
		return e.q.stale(e.record(t, jobID(jobs-1))), "fresh"
	})
	// Advisories as the server would send them, for every job.
	subject := "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.VFX_JOBS.workers"
	for i := range jobs {
		body := fmt.Sprintf(`{"type":"io.nats.jetstream.advisory.v1.max_deliver","stream":"VFX_JOBS","consumer":"workers","stream_seq":%d,"deliveries":5}`, i+1)
		if _, err := e.q.js.Publish(ctx, subject, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if err := e.q.WatchMaxDeliveries(wctx, nil); err != nil {
				t.Errorf("watch: %v", err)
			}
		})
	}
	var mu sync.Mutex
	var swept SweepStats
	for range 3 {
		wg.Go(func() {
			sw := e.q.NewSweeper(nil)
			for range 3 {
				st, err := sw.Pass(wctx)
				if err != nil && wctx.Err() == nil {
					t.Errorf("pass: %v", err)
				}
				mu.Lock()
				swept.Exhausted += st.Exhausted
				mu.Unlock()
			}
		})
	}
	eventually(t, 20*time.Second, "all failed and VFX_JOBS empty", func() (bool, string) {
		for i := range jobs {
			if r := e.record(t, jobID(i)); r.Status != StatusFailed {
				return false, r.ID + " " + string(r.Status)
			}
		}
		n := e.streamInfo(t, StreamJobs).State.Msgs
		return n == 0, fmt.Sprintf("%d messages", n)
	})
	cancel()
	wg.Wait()
	for i := range jobs {
		id := jobID(i)
		if ev := e.events(t, id); ev[StatusFailed] != 1 || len(ev) != 1 {
			t.Errorf("events of %s: %v, want exactly one failed", id, ev)
		}
		want := "worker: gave up after 5 delivery attempts (last error: gpu fell off the bus)"
		if r := e.record(t, id); r.Error != want {
			t.Errorf("%s error %q", id, r.Error)
		}
	}
	if n := len(e.dlq(t)); n != jobs {
		t.Errorf("%d dead letters, want %d", n, jobs)
	}
	t.Logf("sweepers failed %d of %d jobs, watchers the rest", swept.Exhausted, jobs)
}
