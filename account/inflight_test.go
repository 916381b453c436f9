package account

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/internal/kvcas"
)

// checkAggregate asserts that the account's aggregate equals the sum of its
// live entries, that every entry is held (no change left half-way) and
// returns the number of reservations.
func checkAggregate(t *testing.T, s *Service, accountID string) int {
	t.Helper()
	ctx := testCtx(t)
	entries, complete, err := s.scan(ctx, accountID)
	if err != nil || !complete {
		t.Fatalf("scan: %v (complete %v)", err, complete)
	}
	var n int
	var micros int64
	for _, e := range entries {
		if e.r.State != resHeld {
			t.Errorf("entry %s left %s", e.key, e.r.State)
		}
		n++
		micros += e.r.Micros
	}
	a, err := s.readSum(ctx, accountID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Count != n || a.Micros != micros {
		t.Errorf("aggregate %d jobs %d µ$, entries %d jobs %d µ$", a.Count, a.Micros, n, micros)
	}
	return n
}

// TestReserveSettleStorm reserves and releases jobs of one small id pool
// from many goroutines on two replicas (the same job reserved and settled
// at once by several of them, refusals by the concurrency limit and the
// prepaid balance): the aggregate must end equal to the sum of the live
// entries and within the limits.
func TestReserveSettleStorm(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	replica := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com", PrepaidBalance: ptr(7.0)})
	if _, err := s.UpdateAccount(ctx, a.ID, AccountPatch{RateLimits: &RateLimits{Concurrency: 12}}); err != nil {
		t.Fatal(err)
	}
	const workers, ops, pool = 12, 40, 30
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, refused := 0, 0
	for w := range workers {
		wg.Go(func() {
			svc := s
			if w%2 == 1 {
				svc = replica
			}
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range ops {
				job := fmt.Sprintf("vfx_%02d", rng.IntN(pool))
				switch rng.IntN(3) {
				case 0, 1:
					// 0.50 or 1.00: the balance (7) and the concurrency limit (12) both refuse.
					cost := float64(1+rng.IntN(2)) / 2
					err := svc.Reserve(ctx, a, job, cost, w%3 != 0)
					mu.Lock()
					switch {
					case err == nil:
						admitted++
					case errors.Is(err, ErrConcurrencyLimit), errors.Is(err, ErrInsufficientBalance):
						refused++
					default:
						t.Errorf("reserve %s: %v", job, err)
					}
					mu.Unlock()
				default:
					if err := svc.Settle(ctx, a.ID, job, false, "", 0, 0); err != nil {
						t.Errorf("settle %s: %v", job, err)
					}
				}
			}
		})
	}
	wg.Wait()
	if admitted == 0 || refused == 0 {
		t.Errorf("the storm should admit and refuse: %d admitted, %d refused", admitted, refused)
	}
	n := checkAggregate(t, s, a.ID)
	agg, _ := s.readSum(ctx, a.ID)
	if fromMicros(agg.Micros) > 7+1e-9 {
		t.Errorf("reserved $%v over the $7 balance", fromMicros(agg.Micros))
	}
	if got, err := replica.InFlight(ctx, a.ID); err != nil || got != n {
		t.Errorf("in flight %d %v, want %d", got, err, n)
	}
	// Settle everything (twice, from both replicas at once): nothing is
	// subtracted twice.
	for i := range pool {
		for _, svc := range []*Service{s, replica} {
			wg.Go(func() {
				if err := svc.Settle(ctx, a.ID, fmt.Sprintf("vfx_%02d", i), true, MeterImage1080p, 1, 0.04); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if n := checkAggregate(t, s, a.ID); n != 0 {
		t.Errorf("%d reservations left", n)
	}
	if agg, _ := s.readSum(ctx, a.ID); agg.Count != 0 || agg.Micros != 0 || !agg.Oldest.IsZero() {
		t.Errorf("aggregate after settling all: %+v", agg)
	}
	b, _ := s.Billing(ctx, a.ID)
	if !approx(b.CurrentPeriodUsage, pool*0.04) {
		t.Errorf("usage %v, want %v", b.CurrentPeriodUsage, pool*0.04)
	}
}

// TestReservationTTL: a reservation older than ReservationTTL stops
// counting (concurrency and money), leaves the aggregate once, and a late
// Settle of it charges without subtracting it again.
func TestReservationTTL(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	s, err := Open(ctx, e.js, Config{Now: e.clock.Now, ReservationTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t0 := e.clock.Now()
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com", BillingType: BillingPostpaid, SpendingLimit: ptr(10.0)})
	for i := range 10 {
		if err := s.Reserve(ctx, a, fmt.Sprintf("vfx_%d", i), 0.5, true); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Set(t0.Add(30 * time.Minute))
	if err := s.Reserve(ctx, a, "vfx_late", 0.5, true); !errors.Is(err, ErrConcurrencyLimit) {
		t.Fatalf("before expiry: %v", err)
	}
	if n, _ := s.InFlight(ctx, a.ID); n != 10 {
		t.Errorf("in flight before expiry %d", n)
	}
	// Two reservations are renewed at 50 minutes: they outlive the others.
	e.clock.Set(t0.Add(50 * time.Minute))
	for _, j := range []string{"vfx_0", "vfx_1"} {
		if err := s.Settle(ctx, a.ID, j, false, "", 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := s.Reserve(ctx, a, j, 0.5, true); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Set(t0.Add(61 * time.Minute))
	if n, err := s.InFlight(ctx, a.ID); err != nil || n != 2 {
		t.Errorf("in flight after expiry %d %v, want 2", n, err)
	}
	checkAggregate(t, s, a.ID)
	// A big job fits again: the expired estimates no longer count.
	if err := s.Reserve(ctx, a, "vfx_big", 9.0, false); err != nil {
		t.Errorf("after expiry: %v", err)
	}
	// An expired job settled late is charged once and subtracted nowhere.
	if err := s.Settle(ctx, a.ID, "vfx_5", true, MeterImage1080p, 1, 0.04); err != nil {
		t.Fatal(err)
	}
	if n := checkAggregate(t, s, a.ID); n != 3 {
		t.Errorf("%d reservations, want 3", n)
	}
	// Expiry found by a refusal rather than by InFlight.
	e.clock.Set(t0.Add(200 * time.Minute))
	for i := range 10 {
		if err := s.Reserve(ctx, a, fmt.Sprintf("vfx_n%d", i), 0.1, true); err != nil {
			t.Fatalf("reserve %d after the second expiry: %v", i, err)
		}
	}
	if n := checkAggregate(t, s, a.ID); n != 10 {
		t.Errorf("%d reservations, want 10", n)
	}
	if b, _ := s.Billing(ctx, a.ID); !approx(b.CurrentPeriodUsage, 0.04) {
		t.Errorf("usage %v", b.CurrentPeriodUsage)
	}
}

// TestReserveCrashRecovery simulates processes that died between the steps
// of a change: a pending entry whose aggregate step did not happen, one
// whose aggregate step did, and releasing entries before and after their
// aggregate step. While fresh they are trusted to a live owner (the
// aggregate may over-count by the one job); once stale they are removed and
// the aggregate recounted from the entries.
func TestReserveCrashRecovery(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	t0 := e.clock.Now()
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com", BillingType: BillingPostpaid})
	pending := func(job string, counted bool) {
		t.Helper()
		r := reservation{Micros: 40_000, At: e.clock.Now(), State: resPending, Since: e.clock.Now()}
		if _, err := s.putEntry(ctx, entryKey(a.ID, job), r, 0); err != nil {
			t.Fatal(err)
		}
		if counted {
			addSum(t, s, a.ID, 1, r.Micros)
		}
	}
	for i := range 7 {
		if err := s.Reserve(ctx, a, fmt.Sprintf("vfx_%d", i), 0.04, true); err != nil {
			t.Fatal(err)
		}
	}
	pending("vfx_crash_a", false) // died after creating its entry
	pending("vfx_crash_b", true)  // died after counting, before marking held
	// A release that died after marking its entry releasing, before
	// subtracting (vfx_5), and one that died after subtracting (vfx_6).
	for _, j := range []string{"vfx_5", "vfx_6"} {
		key := entryKey(a.ID, j)
		r, rev, _, err := s.getEntry(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		r.State, r.Since = resReleasing, e.clock.Now()
		if _, err := s.putEntry(ctx, key, r, rev); err != nil {
			t.Fatal(err)
		}
		if j == "vfx_6" {
			addSum(t, s, a.ID, -1, -r.Micros)
		}
	}
	// 7 reserved + crash_b - vfx_6 = 7 counted (3 slots left of 10), but
	// only 5 jobs (vfx_0..vfx_4) are really in flight.
	if n, _ := s.InFlight(ctx, a.ID); n != 7 {
		t.Fatalf("in flight %d, want 7 (over-counted)", n)
	}
	// A fresh pending entry is another call's reservation in progress:
	// reserving the same job waits for it, then gives up.
	if err := s.Reserve(ctx, a, "vfx_crash_a", 0.04, true); err == nil || errors.Is(err, ErrConcurrencyLimit) {
		t.Errorf("reserve over a fresh pending entry: %v", err)
	}
	for i := range 4 {
		err := s.Reserve(ctx, a, fmt.Sprintf("vfx_x%d", i), 0.04, true)
		if i < 3 && err != nil || i == 3 && !errors.Is(err, ErrConcurrencyLimit) {
			t.Errorf("reserve %d while the crashed entries are fresh: %v", i, err)
		}
	}
	// Past staleAfter a refusal sweeps: the stale entries go and the
	// aggregate is recounted from the 5 + 3 held entries.
	e.clock.Set(t0.Add(staleAfter + time.Minute))
	for i := 3; i < 5; i++ {
		if err := s.Reserve(ctx, a, fmt.Sprintf("vfx_x%d", i), 0.04, true); err != nil {
			t.Errorf("reserve %d after the crashed entries went stale: %v", i, err)
		}
	}
	if n := checkAggregate(t, s, a.ID); n != 10 {
		t.Errorf("%d reservations, want 10", n)
	}
	if err := s.Reserve(ctx, a, "vfx_full", 0.04, true); !errors.Is(err, ErrConcurrencyLimit) {
		t.Errorf("11th: %v", err)
	}
	// The crashed jobs can be reserved afresh, and settling them again
	// subtracts nothing.
	for _, j := range []string{"vfx_5", "vfx_crash_b"} {
		if err := s.Settle(ctx, a.ID, j, false, "", 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := checkAggregate(t, s, a.ID); n != 10 {
		t.Errorf("%d reservations after settling the dropped jobs, want 10", n)
	}
	if err := s.Settle(ctx, a.ID, "vfx_0", false, "", 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Reserve(ctx, a, "vfx_crash_a", 0.04, true); err != nil {
		t.Errorf("re-reserve a crashed job: %v", err)
	}
	if n := checkAggregate(t, s, a.ID); n != 10 {
		t.Errorf("%d reservations, want 10", n)
	}

	// A Settle that meets a stale entry of its own job removes it and
	// recounts, without a refusal.
	e.clock.Set(t0.Add(3 * staleAfter))
	pending("vfx_crash_c", true)
	e.clock.Set(t0.Add(5 * staleAfter))
	if n, _ := s.InFlight(ctx, a.ID); n != 11 {
		t.Fatalf("in flight %d, want 11 (over-counted)", n)
	}
	if err := s.Settle(ctx, a.ID, "vfx_crash_c", false, "", 0, 0); err != nil {
		t.Fatal(err)
	}
	if n := checkAggregate(t, s, a.ID); n != 10 {
		t.Errorf("%d reservations, want 10", n)
	}
}

// TestAbandonReservation: the reservation of a submission known to be dead
// goes at once, whatever state its entry was left in (fresh pending,
// counted or not; held); a job with no entry is a no-op.
func TestAbandonReservation(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	a := mustAccount(t, s, AccountInput{Email: "abe@example.com", BillingType: BillingPostpaid})
	for i := range 3 {
		if err := s.Reserve(ctx, a, fmt.Sprintf("vfx_%d", i), 0.04, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		job     string
		counted bool
	}{{"vfx_dead_a", false}, {"vfx_dead_b", true}} {
		r := reservation{Micros: 40_000, At: e.clock.Now(), State: resPending, Since: e.clock.Now()}
		if _, err := s.putEntry(ctx, entryKey(a.ID, c.job), r, 0); err != nil {
			t.Fatal(err)
		}
		if c.counted {
			addSum(t, s, a.ID, 1, r.Micros)
		}
	}
	for _, j := range []string{"vfx_dead_a", "vfx_dead_b", "vfx_2", "vfx_none"} {
		if err := s.AbandonReservation(ctx, a.ID, j); err != nil {
			t.Fatalf("abandon %s: %v", j, err)
		}
	}
	if n := checkAggregate(t, s, a.ID); n != 2 {
		t.Fatalf("%d reservations, want 2 (vfx_0, vfx_1)", n)
	}
	if n, _ := s.InFlight(ctx, a.ID); n != 2 {
		t.Fatalf("in flight %d, want 2", n)
	}
}

func addSum(t *testing.T, s *Service, accountID string, n int, micros int64) {
	t.Helper()
	_, err := kvcas.JSON(testCtx(t), s.inflight, sumKey(accountID), func(a *inflightSum, _ bool) (bool, error) {
		a.Count += n
		a.Micros += micros
		if a.Oldest.IsZero() {
			a.Oldest = s.cfg.Now()
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestInflightBucketUpgrade opens the service on an "inflight" bucket made
// by an earlier version (no per-message TTLs) and on a legacy one-value
// record: Open updates the bucket and reservations work.
func TestInflightBucketUpgrade(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t)
	kv, err := e.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: BucketInFlight, History: 1, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	s := e.service(t)
	a := mustAccount(t, s, AccountInput{Email: "ann@example.com", BillingType: BillingPostpaid})
	if _, err := kv.Put(ctx, a.ID, []byte(`{"jobs":{"vfx_old":{"cost":1,"at":"2026-03-14T12:00:00Z"}}}`)); err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.(*jetstream.KeyValueBucketStatus).LimitMarkerTTL() != purgeMarkerTTL {
		t.Errorf("marker ttl %v", st.(*jetstream.KeyValueBucketStatus).LimitMarkerTTL())
	}
	if err := s.Reserve(ctx, a, "vfx_1", 1, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, a.ID, "vfx_1", false, "", 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, entryKey(a.ID, "vfx_1")); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("entry after release: %v", err)
	}
	if n := checkAggregate(t, s, a.ID); n != 0 {
		t.Errorf("%d reservations", n)
	}
}
