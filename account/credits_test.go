package account

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestOrgsTeamsKeys(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)

	if _, err := s.CreateOrg(ctx, " "); !errors.Is(err, ErrInvalid) {
		t.Fatalf("blank name: %v", err)
	}
	o, err := s.CreateOrg(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	o2, _ := s.CreateOrg(ctx, "Other")
	if o.ProductEnabled("vfx") || o.ModelConsent("vfx-2.0") {
		t.Fatalf("a new org has nothing enabled: %+v", o)
	}
	if o, err = s.SetProductEnabled(ctx, o.ID, "vfx", true); err != nil || !o.ProductEnabled("vfx") {
		t.Fatalf("enable: %+v %v", o, err)
	}
	if o, err = s.SetModelConsent(ctx, o.ID, "vfx-2.0", true); err != nil || !o.ModelConsent("vfx-2.0") {
		t.Fatalf("consent: %+v %v", o, err)
	}
	if _, err := s.SetProductEnabled(ctx, "org_missing", "vfx", true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown org: %v", err)
	}
	if _, err := s.CreateTeam(ctx, o.ID, "t", ptr(int64(-1))); !errors.Is(err, ErrInvalid) {
		t.Fatalf("negative budget: %v", err)
	}
	team, err := s.CreateTeam(ctx, o.ID, "Post", ptr(int64(100)))
	if err != nil || team.OrgID != o.ID || *team.BudgetCredits != 100 {
		t.Fatalf("team: %+v %v", team, err)
	}
	if _, _, err := s.CreateOrgKey(ctx, o2.ID, team.ID); !errors.Is(err, ErrInvalid) {
		t.Fatalf("key with another org's team: %v", err)
	}
	k, secret, err := s.CreateOrgKey(ctx, o.ID, team.ID)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Authenticate(ctx, secret)
	if err != nil || p.Key.OrgID != o.ID || p.Key.TeamID != team.ID || p.Key.Kind != KindOrganization || p.Key.ID != k.ID || p.Account.ID != "" {
		t.Fatalf("authenticate org key: %+v %v", p, err)
	}
	if err := s.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("revoked org key: %v", err)
	}
	w1, err := s.OrgWebhookSecret(ctx, o.ID)
	w2, _ := s.OrgWebhookSecret(ctx, o.ID)
	if err != nil || w1 == "" || w1 != w2 {
		t.Fatalf("webhook secret %q %q %v", w1, w2, err)
	}
}

func TestCreditLedger(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	o, _ := s.CreateOrg(ctx, "Acme")
	team, _ := s.CreateTeam(ctx, o.ID, "Post", ptr(int64(50)))

	if _, err := s.ReserveCredits(ctx, "dap_1", o.ID, "", 10); !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("no credits yet: %v", err)
	}
	if _, err := s.Ledger(ctx, "dap_1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a refused reservation leaves no entry: %v", err)
	}
	if _, err := s.AddCredits(ctx, o.ID, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("zero credits: %v", err)
	}
	c, err := s.AddCredits(ctx, o.ID, 100)
	if err != nil || c.Balance != 100 || c.Credited != 100 {
		t.Fatalf("add: %+v %v", c, err)
	}
	var be *BudgetError
	if _, err := s.ReserveCredits(ctx, "dap_t", o.ID, team.ID, 60); !errors.As(err, &be) || be.Scope != ScopeTeamBudget || be.Available != 50 {
		t.Fatalf("team budget: %v", err)
	}
	if _, err := s.ReserveCredits(ctx, "dap_2", o.ID, team.ID, 30); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReserveCredits(ctx, "dap_2", o.ID, team.ID, 5); !errors.Is(err, ErrExists) {
		t.Fatalf("second reservation of one job: %v", err)
	}
	if _, err := s.ReserveCredits(ctx, "dap_3", o.ID, "", 80); !errors.As(err, &be) || be.Scope != ScopeBalance || be.Available != 70 {
		t.Fatalf("balance: %v", err)
	}
	en, err := s.SettleCredits(ctx, "dap_2", 20)
	if err != nil || en.State != LedgerCharged || en.Charged != 20 {
		t.Fatalf("settle: %+v %v", en, err)
	}
	if en2, _ := s.SettleCredits(ctx, "dap_2", 25); en2.Charged != 20 {
		t.Fatalf("a second settlement changed the entry: %+v", en2)
	}
	if en2, _ := s.RefundCredits(ctx, "dap_2"); en2.State != LedgerCharged {
		t.Fatalf("refund after charge: %+v", en2)
	}
	c, _ = s.Credits(ctx, o.ID)
	tc, _ := s.TeamCreditsOf(ctx, team.ID)
	if c != (OrgCredits{OrgID: o.ID, Credited: 100, Balance: 80, Reserved: 0, Charged: 20}) || tc.Charged != 20 || tc.Reserved != 0 {
		t.Fatalf("after charge: %+v %+v", c, tc)
	}
	if _, err := s.ReserveCredits(ctx, "dap_4", o.ID, "", 10); err != nil {
		t.Fatal(err)
	}
	en, _ = s.SettleCredits(ctx, "dap_4", 11)
	if en.State != LedgerCreditRequired || !en.Refunded() || en.Charged != 0 || en.Cost != 11 {
		t.Fatalf("cost over the reservation: %+v", en)
	}
	c, _ = s.Credits(ctx, o.ID)
	if c.Balance != 80 || c.Reserved != 0 {
		t.Fatalf("credit_required refunds: %+v", c)
	}
}

// ledgerModel is the property test's model of one organisation.
type ledgerModel struct {
	credited, charged int64
	open              map[string]int64 // job → reserved
	teamOf            map[string]string
	teamCharged       int64
	submitted         map[string]bool // jobs whose reservation succeeded (their job records exist)
}

// TestCreditLedgerProperty runs random sequences of credit, submit,
// cancel, failure and success (at costs below, at and above the
// reservation), a third of the submissions and settlements stopped by a
// crash before a random write and then recovered (by ReconcileCredits past
// the grace period, or a settlement by the same call again). It checks
// after every step that credited = balance + reserved + charged, that the
// balance never goes negative, that the reserved and charged totals (the
// organisation's and the team's) equal the model's, and that no team
// exceeds its budget; after every recovery, that no bookkeeping is left.
func TestCreditLedgerProperty(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	crashes, recoveries := 0, map[string]int{}
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 7))
		o, err := s.CreateOrg(ctx, fmt.Sprintf("org %d", seed))
		if err != nil {
			t.Fatal(err)
		}
		budget := int64(rng.IntN(200))
		team, _ := s.CreateTeam(ctx, o.ID, "t", &budget)
		m := ledgerModel{open: map[string]int64{}, teamOf: map[string]string{}, submitted: map[string]bool{}}
		var jobs []string
		for step := range 40 {
			op := rng.IntN(5)
			pick := func() string {
				if len(jobs) == 0 {
					return "dap_none"
				}
				if open := slices.Sorted(maps.Keys(m.open)); len(open) > 0 && rng.IntN(4) != 0 {
					return open[rng.IntN(len(open))]
				}
				return jobs[rng.IntN(len(jobs))]
			}
			crashAt := 0 // the write before which the op stops; 0: none
			if op != 0 && rng.IntN(3) == 0 {
				crashAt = 1 + rng.IntN(8)
			}
			rerun := rng.IntN(2) == 0 // recovery of a settlement: the same call again
			at := ""
			desc := ""
			switch op {
			case 0:
				n := int64(1 + rng.IntN(100))
				if _, err := s.AddCredits(ctx, o.ID, n); err != nil {
					t.Fatal(err)
				}
				m.credited += n
				desc = fmt.Sprintf("credit %d", n)
			case 1:
				id := fmt.Sprintf("dap_%d_%d", seed, step)
				jobs = append(jobs, id)
				n := int64(rng.IntN(60))
				tid := ""
				if rng.IntN(2) == 0 {
					tid = team.ID
				}
				var err error
				at = runCrash(ctx, crashAt, func(ctx context.Context) { _, err = s.ReserveCredits(ctx, id, o.ID, tid, n) })
				switch {
				case at != "":
					// The job was never submitted: recovery gives it up.
				case err == nil:
					m.open[id] = n
					m.teamOf[id] = tid
					m.submitted[id] = true
				case !errors.Is(err, ErrBudgetExceeded):
					t.Fatalf("seed %d step %d reserve: %v", seed, step, err)
				}
				desc = fmt.Sprintf("submit %s %d team=%q: %v", id, n, tid, err)
			case 2, 3, 4: // cancel, failure, success at a cost around the reservation
				id := pick()
				cost := int64(-1)
				if op == 4 {
					cost = 0
					if r, ok := m.open[id]; ok {
						cost = max(0, r+int64(rng.IntN(11))-7)
					}
				}
				settle := func(ctx context.Context) {
					var err error
					if cost < 0 {
						_, err = s.RefundCredits(ctx, id)
					} else {
						_, err = s.SettleCredits(ctx, id, cost)
					}
					if err != nil && !errors.Is(err, ErrNotFound) {
						t.Fatal(err)
					}
				}
				at = runCrash(ctx, crashAt, settle)
				if at != "" && rerun {
					settle(ctx)
				}
				// A crash before the entry's own write leaves the job
				// open unless the call is made again.
				if r, ok := m.open[id]; ok && !(at == "finish" && !rerun) {
					delete(m.open, id)
					if cost >= 0 && cost <= r {
						m.charged += cost
						if m.teamOf[id] != "" {
							m.teamCharged += cost
						}
					}
				}
				desc = fmt.Sprintf("settle %s cost %d", id, cost)
			}
			if at != "" {
				crashes++
				desc += fmt.Sprintf(" crashed at %s (rerun %v)", at, rerun)
				c, _ := s.Credits(ctx, o.ID)
				if c.Credited != m.credited || c.Credited != c.Balance+c.Reserved+c.Charged || c.Balance < 0 {
					t.Fatalf("seed %d step %d (%s): right after the crash %+v", seed, step, desc, c)
				}
				e.clock.Set(e.clock.Now().Add(DefaultReconcileGrace))
				rep := reconcileAll(t, s, o.ID, ReconcileOptions{JobExists: func(_ context.Context, id string) (bool, error) {
					return m.submitted[id], nil
				}})
				recoveries[fmt.Sprintf("voided %d expired %d finished %d cleaned %d", rep.Voided, rep.Expired, rep.Finished, rep.Cleaned)]++
				checkSettled(t, s, o.ID, []string{team.ID}, jobs)
			}
			c, err := s.Credits(ctx, o.ID)
			if err != nil {
				t.Fatal(err)
			}
			var reserved, teamReserved int64
			for id, r := range m.open {
				reserved += r
				if m.teamOf[id] != "" {
					teamReserved += r
				}
			}
			if c.Credited != m.credited || c.Credited != c.Balance+c.Reserved+c.Charged || c.Balance < 0 || c.Reserved != reserved || c.Charged != m.charged {
				t.Fatalf("seed %d step %d (%s): %+v; model credited %d reserved %d charged %d", seed, step, desc, c, m.credited, reserved, m.charged)
			}
			tc, _ := s.TeamCreditsOf(ctx, team.ID)
			if tc.Reserved+tc.Charged > budget || tc.Reserved != teamReserved || tc.Charged != m.teamCharged {
				t.Fatalf("seed %d step %d (%s): team %+v budget %d; model reserved %d charged %d", seed, step, desc, tc, budget, teamReserved, m.teamCharged)
			}
		}
		checkSettled(t, s, o.ID, []string{team.ID}, jobs)
	}
	if crashes < 40 {
		t.Fatalf("only %d crashes", crashes)
	}
	t.Logf("%d crashes; recoveries %v", crashes, recoveries)
}

// TestCreditLedgerConcurrent reserves from many goroutines at once: every
// reservation that succeeds fits in the balance, none is lost, and the
// invariant holds at the end.
func TestCreditLedgerConcurrent(t *testing.T) {
	e := newEnv(t)
	s := e.service(t)
	ctx := testCtx(t)
	o, _ := s.CreateOrg(ctx, "Acme")
	if _, err := s.AddCredits(ctx, o.ID, 300); err != nil {
		t.Fatal(err)
	}
	const n = 40
	// Two reconcilers run passes the whole time, in a replica whose clock
	// is past the grace period of every reservation, so they compete with
	// the reservations being made (rolling them back when they win) as well
	// as with the settlements.
	late, err := Open(ctx, e.js, Config{Now: func() time.Time { return e.clock.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	exists := func(context.Context, string) (bool, error) { return true, nil }
	var rwg sync.WaitGroup
	stop := make(chan struct{})
	rerrs := make(chan error, 2)
	for range 2 {
		rwg.Go(func() {
			for range 1000 {
				select {
				case <-stop:
					rerrs <- nil
					return
				default:
				}
				if _, err := late.ReconcileCredits(ctx, o.ID, ReconcileOptions{Limit: 8, JobExists: exists}); err != nil {
					rerrs <- err
					return
				}
			}
			rerrs <- nil
		})
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, rolledBack, refused := 0, 0, 0
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := s.ReserveCredits(ctx, fmt.Sprintf("dap_c%d", i), o.ID, "", 10)
			if err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
				if i%2 == 0 {
					_, err = s.SettleCredits(ctx, fmt.Sprintf("dap_c%d", i), 7)
				} else {
					_, err = s.RefundCredits(ctx, fmt.Sprintf("dap_c%d", i))
				}
			} else if errors.Is(err, ErrBudgetExceeded) || errors.Is(err, errRolledBack) {
				mu.Lock()
				if errors.Is(err, errRolledBack) {
					rolledBack++
				} else {
					refused++
				}
				mu.Unlock()
				err = nil
			}
			errs <- err
		})
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(rerrs)
	for err := range rerrs {
		if err != nil {
			t.Fatalf("reconcile: %v", err)
		}
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var jobs []string
	for i := range n {
		jobs = append(jobs, fmt.Sprintf("dap_c%d", i))
	}
	checkSettled(t, s, o.ID, nil, jobs)
	c, _ := s.Credits(ctx, o.ID)
	t.Logf("of %d reservations %d succeeded, %d were rolled back by a reconciler, %d were refused", n, ok, rolledBack, refused)
	if ok == 0 || ok+rolledBack+refused != n || c.Credited != c.Balance+c.Reserved+c.Charged || c.Reserved != 0 || c.Balance < 0 {
		t.Fatalf("%d reservations succeeded; %+v", ok, c)
	}
}

// TestAddCreditsBounds: one addition is at most MaxCreditAmount and the
// balance at most MaxCreditBalance, each at its edge.
func TestAddCreditsBounds(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.service(t)
	o, err := s.CreateOrg(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddCredits(ctx, o.ID, MaxCreditAmount+1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("over the amount: %v", err)
	}
	for i := int64(0); i < MaxCreditBalance/MaxCreditAmount; i++ {
		if _, err := s.AddCredits(ctx, o.ID, MaxCreditAmount); err != nil {
			t.Fatalf("addition %d: %v", i, err)
		}
	}
	c, err := s.AddCredits(ctx, o.ID, 1)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("over the balance: %v %+v", err, c)
	}
	if c, err := s.Credits(ctx, o.ID); err != nil || c.Balance != MaxCreditBalance {
		t.Fatalf("balance %+v %v", c, err)
	}
}
