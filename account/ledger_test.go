package account

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// crashed is what a crash hook panics with.
type crashed struct{ step string }

// withCrash returns a ctx whose ledger operations stop (panic) just before
// their n-th write (1-based); n <= 0 never stops. *at receives the name of
// the step that stopped.
func withCrash(ctx context.Context, n int, at *string) context.Context {
	count := 0
	return context.WithValue(ctx, crashHookKey{}, func(step string) {
		count++
		if count == n {
			*at = step
			panic(crashed{step})
		}
	})
}

// runCrash runs fn with a crash before its n-th write and reports the step
// it stopped at ("" when fn ran to its end).
func runCrash(ctx context.Context, n int, fn func(ctx context.Context)) (at string) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crashed); !ok {
				panic(r)
			}
		}
	}()
	fn(withCrash(ctx, n, &at))
	return at
}

// ledgerView is everything of one organisation the ledger stores.
type ledgerView struct {
	org     orgAggregate
	teams   map[string]teamAggregate
	entries map[string]LedgerEntry // every entry of jobs, void included
	index   map[string]bool        // job ids with an index key
}

func readView(t *testing.T, s *Service, orgID string, teamIDs, jobs []string) ledgerView {
	t.Helper()
	ctx := testCtx(t)
	v := ledgerView{teams: map[string]teamAggregate{}, entries: map[string]LedgerEntry{}, index: map[string]bool{}}
	get := func(key string, dst any) {
		kv, err := s.credits.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(kv.Value(), dst); err != nil {
			t.Fatal(err)
		}
	}
	get("org."+orgID, &v.org)
	for _, id := range teamIDs {
		var a teamAggregate
		get("team."+id, &a)
		v.teams[id] = a
	}
	for _, id := range jobs {
		e, found, err := s.readEntry(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if found {
			v.entries[id] = e
		}
	}
	l, err := s.credits.ListKeysFiltered(ctx, "open."+orgID+".>")
	if err != nil {
		t.Fatal(err)
	}
	for k := range l.Keys() {
		v.index[k[strings.LastIndex(k, ".")+1:]] = true
	}
	return v
}

// checkSettled checks that the aggregates are exactly the sums of the
// entries and that no bookkeeping is left: no pending job in an aggregate,
// no void entry, an index key exactly for the open reservations. It
// returns the view.
func checkSettled(t *testing.T, s *Service, orgID string, teamIDs, jobs []string) ledgerView {
	t.Helper()
	v := readView(t, s, orgID, teamIDs, jobs)
	var reserved, charged int64
	teamRes, teamCh := map[string]int64{}, map[string]int64{}
	for id, e := range v.entries {
		switch {
		case e.State == LedgerVoid || e.reserving():
			t.Fatalf("entry %s left %s (applied %v)", id, e.State, e.Applied)
		case e.State == LedgerReserved:
			reserved += e.Reserved
			teamRes[e.TeamID] += e.Reserved
			if !v.index[id] {
				t.Fatalf("open reservation %s has no index key", id)
			}
		default:
			charged += e.Charged
			teamCh[e.TeamID] += e.Charged
			if v.index[id] || !e.complete() {
				t.Fatalf("final entry %s still open: %+v index %v", id, e, v.index[id])
			}
		}
	}
	for id := range v.index {
		if _, ok := v.entries[id]; !ok {
			t.Fatalf("index key of %s without an entry", id)
		}
	}
	c := v.org.OrgCredits
	if c.Credited != c.Balance+c.Reserved+c.Charged || c.Balance < 0 || c.Reserved != reserved || c.Charged != charged || len(v.org.Pending) != 0 {
		t.Fatalf("org %+v pending %v; entries reserve %d charge %d", c, v.org.Pending, reserved, charged)
	}
	for _, id := range teamIDs {
		a := v.teams[id]
		if a.Reserved != teamRes[id] || a.Charged != teamCh[id] || len(a.Pending) != 0 {
			t.Fatalf("team %+v pending %v; entries reserve %d charge %d", a.TeamCredits, a.Pending, teamRes[id], teamCh[id])
		}
	}
	return v
}

// reconcileAll runs passes until one reaches the end (at most 20).
func reconcileAll(t *testing.T, s *Service, orgID string, opts ReconcileOptions) ReconcileReport {
	t.Helper()
	var sum ReconcileReport
	for range 20 {
		r, err := s.ReconcileCredits(testCtx(t), orgID, opts)
		if err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		sum.Examined += r.Examined
		sum.Finished += r.Finished
		sum.Voided += r.Voided
		sum.Expired += r.Expired
		sum.Cleaned += r.Cleaned
		sum.Orphans += r.Orphans
		if r.Next == 0 {
			return sum
		}
		opts.After = r.Next
	}
	t.Fatal("reconcile did not reach the end in 20 passes")
	return sum
}

// TestLedgerCrashEveryStep stops every ledger operation before each of its
// writes in turn, then recovers (ReconcileCredits past the grace period,
// or the same call again), and checks the exact aggregates and that no
// bookkeeping is left.
func TestLedgerCrashEveryStep(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	type scenario struct {
		name    string
		credits int64
		reserve int64                                            // healthy reservation before op, 0 = none
		op      func(ctx context.Context, job, org, team string) // the operation crashed
		rerun   bool                                             // recovery by calling op again is meaningful
		// want: org balance, reserved, charged, team reserved, charged
		// after recovery; ifNotStarted when the crash hit before the
		// op's first write.
		want, ifNotStarted [5]int64
	}
	reserve := func(n int64) func(ctx context.Context, job, org, team string) {
		return func(ctx context.Context, job, org, team string) { _, _ = s.ReserveCredits(ctx, job, org, team, n) }
	}
	scenarios := []scenario{
		{name: "reserve", credits: 100, op: reserve(30), want: [5]int64{100, 0, 0, 0, 0}, ifNotStarted: [5]int64{100, 0, 0, 0, 0}},
		{name: "reserve-refused-by-balance", credits: 10, op: reserve(30), want: [5]int64{10, 0, 0, 0, 0}, ifNotStarted: [5]int64{10, 0, 0, 0, 0}},
		{name: "reserve-refused-by-team", credits: 100, op: reserve(60), want: [5]int64{100, 0, 0, 0, 0}, ifNotStarted: [5]int64{100, 0, 0, 0, 0}},
		{name: "charge", credits: 100, reserve: 30, rerun: true,
			op:   func(ctx context.Context, job, _, _ string) { _, _ = s.SettleCredits(ctx, job, 20) },
			want: [5]int64{80, 0, 20, 0, 20}, ifNotStarted: [5]int64{70, 30, 0, 30, 0}},
		{name: "credit-required", credits: 100, reserve: 30, rerun: true,
			op:   func(ctx context.Context, job, _, _ string) { _, _ = s.SettleCredits(ctx, job, 40) },
			want: [5]int64{100, 0, 0, 0, 0}, ifNotStarted: [5]int64{70, 30, 0, 30, 0}},
		{name: "refund", credits: 100, reserve: 30, rerun: true,
			op:   func(ctx context.Context, job, _, _ string) { _, _ = s.RefundCredits(ctx, job) },
			want: [5]int64{100, 0, 0, 0, 0}, ifNotStarted: [5]int64{70, 30, 0, 30, 0}},
	}
	for _, sc := range scenarios {
		for _, recover := range []string{"reconcile", "rerun"} {
			if recover == "rerun" && !sc.rerun {
				continue
			}
			steps := 0
			for n := 1; n <= 30; n++ {
				o, err := s.CreateOrg(ctx, "crash")
				if err != nil {
					t.Fatal(err)
				}
				team, _ := s.CreateTeam(ctx, o.ID, "t", ptr(int64(50)))
				if _, err := s.AddCredits(ctx, o.ID, sc.credits); err != nil {
					t.Fatal(err)
				}
				job := fmt.Sprintf("dap_%s_%s_%d", sc.name, recover, n)
				submitted := false
				if sc.reserve > 0 {
					if _, err := s.ReserveCredits(ctx, job, o.ID, team.ID, sc.reserve); err != nil {
						t.Fatal(err)
					}
					submitted = true
				}
				at := runCrash(ctx, n, func(ctx context.Context) { sc.op(ctx, job, o.ID, team.ID) })
				label := fmt.Sprintf("%s/%s crash before write %d (%s)", sc.name, recover, n, at)
				// Whatever the crash, every aggregate write keeps the
				// organisation's identity.
				v := readView(t, s, o.ID, []string{team.ID}, []string{job})
				if c := v.org.OrgCredits; c.Credited != c.Balance+c.Reserved+c.Charged || c.Credited != sc.credits {
					t.Fatalf("%s: %+v", label, c)
				}
				if recover == "rerun" {
					sc.op(ctx, job, o.ID, team.ID)
				}
				// Past the grace period: a reservation whose op crashed
				// was never submitted; a settled job's record exists.
				e.clock.Set(e.clock.Now().Add(DefaultReconcileGrace))
				rep := reconcileAll(t, s, o.ID, ReconcileOptions{JobExists: func(_ context.Context, id string) (bool, error) {
					return submitted && id == job, nil
				}})
				v = checkSettled(t, s, o.ID, []string{team.ID}, []string{job})
				want := sc.want
				if at == "finish" && recover == "reconcile" {
					want = sc.ifNotStarted
				}
				c, tc := v.org.OrgCredits, v.teams[team.ID]
				if got := [5]int64{c.Balance, c.Reserved, c.Charged, tc.Reserved, tc.Charged}; got != want {
					t.Fatalf("%s: got %v want %v (report %+v)", label, got, want, rep)
				}
				// A second pass finds nothing to do.
				rep2 := reconcileAll(t, s, o.ID, ReconcileOptions{JobExists: func(context.Context, string) (bool, error) { return true, nil }})
				if rep2.Finished+rep2.Voided+rep2.Expired+rep2.Cleaned+rep2.Orphans != 0 {
					t.Fatalf("%s: second pass %+v", label, rep2)
				}
				if at == "" {
					steps = n - 1
					break
				}
			}
			if steps < 2 {
				t.Fatalf("%s/%s: only %d crash points", sc.name, recover, steps)
			}
			t.Logf("%s/%s: %d crash points", sc.name, recover, steps)
		}
	}
}

// TestReconcileExpiresStaleReservation: a reservation whose job record does
// not exist is refunded once it is older than the grace period, and not
// before; one whose job exists is kept.
func TestReconcileExpiresStaleReservation(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	o, _ := s.CreateOrg(ctx, "Acme")
	team, _ := s.CreateTeam(ctx, o.ID, "t", nil)
	if _, err := s.AddCredits(ctx, o.ID, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReserveCredits(ctx, "dap_lost", o.ID, team.ID, 30); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReserveCredits(ctx, "dap_live", o.ID, "", 20); err != nil {
		t.Fatal(err)
	}
	lookups := 0
	opts := ReconcileOptions{Grace: time.Hour, JobExists: func(_ context.Context, id string) (bool, error) {
		lookups++
		return id == "dap_live", nil
	}}
	start := e.clock.Now()
	for _, after := range []time.Duration{0, time.Hour - time.Second} {
		e.clock.Set(start.Add(after))
		rep, err := s.ReconcileCredits(ctx, o.ID, opts)
		if err != nil || rep.Examined != 2 || rep.Expired != 0 || lookups != 0 {
			t.Fatalf("at +%s: %+v %v (lookups %d)", after, rep, err, lookups)
		}
	}
	if rep, err := s.ReconcileCredits(ctx, o.ID, ReconcileOptions{Grace: time.Hour}); err != nil || rep.Expired != 0 {
		t.Fatalf("without a job lookup nothing expires: %+v %v", rep, err)
	}
	e.clock.Set(start.Add(time.Hour))
	rep, err := s.ReconcileCredits(ctx, o.ID, opts)
	if err != nil || rep.Expired != 1 || lookups != 2 {
		t.Fatalf("at the grace period: %+v %v (lookups %d)", rep, err, lookups)
	}
	if en, _ := s.Ledger(ctx, "dap_lost"); en.State != LedgerRefunded {
		t.Fatalf("lost reservation: %+v", en)
	}
	if en, _ := s.Ledger(ctx, "dap_live"); en.State != LedgerReserved {
		t.Fatalf("live reservation: %+v", en)
	}
	v := checkSettled(t, s, o.ID, []string{team.ID}, []string{"dap_lost", "dap_live"})
	if v.org.Balance != 80 || v.org.Reserved != 20 || v.teams[team.ID].Reserved != 0 {
		t.Fatalf("after expiry: %+v %+v", v.org.OrgCredits, v.teams[team.ID].TeamCredits)
	}
	// The job shows up late after all: its settlement finds the entry
	// final and changes nothing.
	if en, err := s.SettleCredits(ctx, "dap_lost", 10); err != nil || en.State != LedgerRefunded {
		t.Fatalf("late settlement: %+v %v", en, err)
	}
	if _, err := s.ReconcileCredits(ctx, "bad.org", opts); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad org id: %v", err)
	}
}

// TestReconcileBoundedPasses: a pass examines at most Limit entries and
// the next pass resumes where it stopped.
func TestReconcileBoundedPasses(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	o, _ := s.CreateOrg(ctx, "Acme")
	other, _ := s.CreateOrg(ctx, "Other")
	for _, id := range []string{o.ID, other.ID} {
		if _, err := s.AddCredits(ctx, id, 100); err != nil {
			t.Fatal(err)
		}
	}
	var jobs []string
	for i := range 5 {
		job := fmt.Sprintf("dap_b%d", i)
		jobs = append(jobs, job)
		// Dies after both aggregates counted the reservation, before the
		// entry confirmed it.
		at := runCrash(ctx, 4, func(ctx context.Context) { _, _ = s.ReserveCredits(ctx, job, o.ID, "", 10) })
		if at != "reserve:confirm" {
			t.Fatalf("crash at %q", at)
		}
	}
	if _, err := s.ReserveCredits(ctx, "dap_other", other.ID, "", 10); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Credits(ctx, o.ID); c.Balance != 50 || c.Reserved != 50 {
		t.Fatalf("half-made reservations: %+v", c)
	}
	if rep, err := s.ReconcileCredits(ctx, o.ID, ReconcileOptions{}); err != nil || rep.Voided != 0 || rep.Examined != 5 {
		t.Fatalf("within the grace period: %+v %v", rep, err)
	}
	e.clock.Set(e.clock.Now().Add(DefaultReconcileGrace))
	opts := ReconcileOptions{Limit: 2}
	var examined []int
	for range 10 {
		rep, err := s.ReconcileCredits(ctx, o.ID, opts)
		if err != nil || rep.Voided != rep.Examined {
			t.Fatalf("pass: %+v %v", rep, err)
		}
		examined = append(examined, rep.Examined)
		if rep.Next == 0 {
			break
		}
		opts.After = rep.Next
	}
	if fmt.Sprint(examined) != "[2 2 1]" {
		t.Fatalf("passes examined %v", examined)
	}
	checkSettled(t, s, o.ID, nil, jobs)
	if c, _ := s.Credits(ctx, o.ID); c.Balance != 100 {
		t.Fatalf("after rollback: %+v", c)
	}
	for _, j := range jobs {
		if _, err := s.Ledger(ctx, j); !errors.Is(err, ErrNotFound) {
			t.Fatalf("void entry %s: %v", j, err)
		}
	}
	// The other organisation's reservation was not touched; a pass over
	// every organisation sees it.
	if en, _ := s.Ledger(ctx, "dap_other"); en.State != LedgerReserved {
		t.Fatalf("other org: %+v", en)
	}
	if rep, err := s.ReconcileCredits(ctx, "", ReconcileOptions{}); err != nil || rep.Examined != 1 {
		t.Fatalf("all orgs: %+v %v", rep, err)
	}
}
