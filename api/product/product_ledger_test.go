package product

import (
	"context"
	"github.com/vfxrender/vfx/api/apitest"
	"testing"
	"time"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/api"
)

// TestProductLedgerReconcile: a reservation left by a process that died
// between reserving credits and submitting the job (no job record in the
// queue) is refunded by the reconciler once older than the grace period,
// and not before; a submitted job's reservation is kept and settles as
// usual. The reconciler also runs from Run.
func TestProductLedgerReconcile(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := e.newOrg(1000, nil)
	r := e.Do("POST", "/v1/products/vfx/jobs", o.TeamKey, vfxJob("kept", dataPNG(t, 64, 64)))
	if r.Status != 202 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	kept := productJob(t, r)
	before := e.credits(o.ID)
	// What createProduct leaves when the process dies right after
	// ReserveCredits.
	if _, err := e.Acc.ReserveCredits(ctx, ProductJobIDPrefix+"lost1", o.ID, o.TeamID, 40); err != nil {
		t.Fatal(err)
	}
	rep, err := e.prod.ReconcileLedger(ctx, 0)
	if err != nil || rep.Examined != 2 || rep.Expired != 0 {
		t.Fatalf("within the grace period: %+v %v", rep, err)
	}
	if c := e.credits(o.ID); c.Reserved != before.Reserved+40 {
		t.Fatalf("reserved %+v, before %+v", c, before)
	}

	// Another API replica whose clock is an hour later: both reservations
	// are past the grace period.
	late, err := account.Open(ctx, e.JS, account.Config{Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.Cfg
	cfg.Accounts = late
	newAPI := func(cfg api.Config, pcfg Config) (*API, error) {
		srv, err := api.New(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return New(ctx, srv, pcfg)
	}
	srv2, err := newAPI(cfg, e.pcfg)
	if err != nil {
		t.Fatal(err)
	}
	rep, err = srv2.ReconcileLedger(ctx, 0)
	if err != nil || rep.Examined != 2 || rep.Expired != 1 {
		t.Fatalf("past the grace period: %+v %v", rep, err)
	}
	if c := e.credits(o.ID); c != before {
		t.Fatalf("after expiry %+v, want %+v", c, before)
	}
	if en, err := e.Acc.Ledger(ctx, ProductJobIDPrefix+"lost1"); err != nil || en.State != account.LedgerRefunded {
		t.Fatalf("lost reservation: %+v %v", en, err)
	}
	if en, err := e.Acc.Ledger(ctx, kept.ID); err != nil || en.State != account.LedgerReserved {
		t.Fatalf("kept reservation: %+v %v", en, err)
	}

	// RunLedgerReconciler runs it.
	if _, err := e.Acc.ReserveCredits(ctx, ProductJobIDPrefix+"lost2", o.ID, "", 25); err != nil {
		t.Fatal(err)
	}
	pcfg := e.pcfg
	pcfg.LedgerReconcileEvery = 10 * time.Millisecond
	srv3, err := newAPI(cfg, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { srv3.RunLedgerReconciler(rctx); done <- nil }()
	apitest.Eventually(t, 15*time.Second, "the reconciler of RunLedgerReconciler", func() bool {
		en, err := e.Acc.Ledger(ctx, ProductJobIDPrefix+"lost2")
		return err == nil && en.State == account.LedgerRefunded
	})
	rcancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// The kept job settles as usual.
	e.finishProduct(kept.ID, true, 1)
	r = e.Do("GET", "/v1/product-jobs/"+kept.ID, o.TeamKey, nil)
	if j := productJob(t, r); j.Status != ProductSuccess || *j.CreditsCharged != 16 {
		t.Fatalf("kept job: %+v", j)
	}
	if c := e.credits(o.ID); c.Reserved != 0 || c.Charged != 16 || c.Balance != 1000-16 {
		t.Fatalf("at the end: %+v", c)
	}

	pcfg.LedgerReconcileGrace = 5 * time.Second
	if _, err := newAPI(cfg, pcfg); err == nil {
		t.Fatalf("a grace period under SubmitRetryFor: %v", err)
	}
}
