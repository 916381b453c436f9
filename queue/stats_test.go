package queue

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestStats submits three jobs, claims two (one of them then fails for
// good), and reads the depth, the running job and the dead letter.
func TestStats(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fastConfig())
	ctx := testCtx(t, 20*time.Second)
	for _, id := range []string{"gen_s1", "gen_s2", "gen_s3"} {
		if _, _, err := e.q.Submit(ctx, Record{ID: id, Kind: KindGeneration, Owner: "acct"}); err != nil {
			t.Fatal(err)
		}
	}
	st := statsWhen(ctx, t, e.q, func(st Stats) bool { return st.Pending == 3 })
	if st.Pending != 3 || st.InFlight != 0 || st.Messages != 3 || len(st.Running) != 0 || st.DeadLetters != 0 || len(st.RecentDead) != 0 {
		t.Fatalf("before: %+v", st)
	}
	c, err := e.q.Consumer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d1, err := c.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d1.Claim(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	d2, err := c.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d2.Claim(ctx, "w2"); err != nil {
		t.Fatal(err)
	}
	if err := d2.Fail(ctx, Permanent(errors.New("bad input"))); err != nil {
		t.Fatal(err)
	}
	st = statsWhen(ctx, t, e.q, func(st Stats) bool { return st.Pending == 1 && st.InFlight == 1 && st.DeadLetters == 1 })
	if st.Pending != 1 || st.InFlight != 1 || st.Messages != 2 || st.DeadLetters != 1 {
		t.Fatalf("after: %+v", st)
	}
	if len(st.Running) != 1 || st.Running[0].JobID != d1.JobID || st.Running[0].Worker != "w1" || st.Running[0].HeartbeatAt == nil && st.Running[0].StartedAt == nil {
		t.Errorf("running: %+v", st.Running)
	}
	if len(st.RecentDead) != 1 || st.RecentDead[0].JobID != d2.JobID || st.RecentDead[0].Reason == "" || st.RecentDead[0].Data != nil {
		t.Errorf("dead letters: %+v", st.RecentDead)
	}
	// The limits hold: none of either asked for.
	if st, err = e.q.Stats(ctx, 0, 0); err != nil || len(st.Running) != 0 || len(st.RecentDead) != 0 || st.DeadLetters != 1 {
		t.Errorf("limits 0: %+v %v", st, err)
	}
}

// statsWhen reads e.q.Stats until ok holds or 5 s pass, and returns the
// last reading: the consumer's counters (NumPending, NumAckPending) are
// the server's, updated a moment after a publish or an ack, so a reading
// right after Submit can still count 0 pending (seen on a loaded CI run).
func statsWhen(ctx context.Context, t *testing.T, q *Queue, ok func(Stats) bool) Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := q.Stats(ctx, 10, 10)
		if err != nil {
			t.Fatal(err)
		}
		if ok(st) || time.Now().After(deadline) {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
}
