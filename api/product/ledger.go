package product

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/internal/retry"
	"github.com/vfxrender/vfx/queue"
)

// Defaults of the credit ledger reconciler (Config.LedgerReconcile*).
const (
	// DefaultLedgerReconcileEvery is the pause between two passes.
	DefaultLedgerReconcileEvery = time.Minute
	// DefaultLedgerReconcileGrace is account.DefaultReconcileGrace: how
	// old a reservation must be before the reconciler gives it up.
	DefaultLedgerReconcileGrace = account.DefaultReconcileGrace
	// DefaultLedgerReconcileLimit is the open ledger entries one pass
	// examines.
	DefaultLedgerReconcileLimit = account.DefaultReconcileLimit
)

// ReconcileLedger runs one bounded pass of the credit ledger reconciler
// over every organisation, resuming after the index revision after (0:
// from the start), and returns its report (Next: where the next pass
// resumes). It finishes settlements a crash interrupted, rolls back
// reservations abandoned while being made, and refunds reservations older
// than Config.LedgerReconcileGrace whose product job record does not
// exist in the queue (the process died between reserving and submitting).
func (s *API) ReconcileLedger(ctx context.Context, after uint64) (account.ReconcileReport, error) {
	return s.Acc.ReconcileCredits(ctx, "", account.ReconcileOptions{
		Grace: s.cfg.LedgerReconcileGrace, Limit: s.cfg.LedgerReconcileLimit, After: after,
		JobExists: s.productJobExists,
	})
}

// productJobExists reports whether the queue holds a job record.
func (s *API) productJobExists(ctx context.Context, jobID string) (bool, error) {
	_, _, err := s.Queue.Get(ctx, jobID)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, queue.ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("api: job %s: %w", jobID, err)
}

// RunLedgerReconciler runs a ReconcileLedger pass every
// Config.LedgerReconcileEvery until ctx ends (at once when that is
// negative: off); a pass that stopped at its limit is resumed by the next
// one. The command's wiring starts it beside the Server.
func (s *API) RunLedgerReconciler(ctx context.Context) {
	if s.cfg.LedgerReconcileEvery <= 0 {
		return
	}
	log := s.Log.Named("ledger")
	var after uint64
	for {
		pctx, cancel := context.WithTimeout(ctx, max(s.cfg.LedgerReconcileEvery, 30*time.Second))
		rep, err := s.ReconcileLedger(pctx, after)
		cancel()
		if ctx.Err() != nil {
			return
		}
		after = rep.Next
		if err != nil {
			log.Warn("credit ledger reconcile", zap.Error(err))
		}
		if rep.Finished+rep.Voided+rep.Expired+rep.Cleaned+rep.Orphans > 0 {
			log.Info("credit ledger reconciled", zap.Int("examined", rep.Examined), zap.Int("finished", rep.Finished),
				zap.Int("voided", rep.Voided), zap.Int("expired", rep.Expired), zap.Int("cleaned", rep.Cleaned),
				zap.Int("orphans", rep.Orphans))
		}
		if retry.Sleep(ctx, s.cfg.LedgerReconcileEvery) != nil {
			return
		}
	}
}
