package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/product"
)

// ledgerFlags are the credit ledger reconciler's flags of `vfx api` and
// `vfx serve`.
type ledgerFlags struct {
	every, grace *time.Duration
}

// ledgerConfig is their parsed form, as product.Config fields.
type ledgerConfig struct {
	every, grace time.Duration
}

func addLedgerFlags(fs *flag.FlagSet, e *env) ledgerFlags {
	return ledgerFlags{
		every: fs.Duration("ledger-reconcile-every", e.duration("VFX_LEDGER_RECONCILE_EVERY", product.DefaultLedgerReconcileEvery),
			"pause between two passes of the product credit ledger reconciler; 0 turns it off [VFX_LEDGER_RECONCILE_EVERY]"),
		grace: fs.Duration("ledger-reconcile-grace", e.duration("VFX_LEDGER_RECONCILE_GRACE", product.DefaultLedgerReconcileGrace),
			"age after which the reconciler refunds a credit reservation whose job record does not exist; more than 10s [VFX_LEDGER_RECONCILE_GRACE]"),
	}
}

// parse checks the flags' values.
func (f ledgerFlags) parse() (ledgerConfig, error) {
	c := ledgerConfig{every: *f.every, grace: *f.grace}
	switch {
	case c.every < 0:
		return c, usageError{fmt.Sprintf("--ledger-reconcile-every %s: want 0 (off) or more", c.every)}
	case c.grace <= api.DefaultSubmitRetryFor:
		return c, usageError{fmt.Sprintf("--ledger-reconcile-grace %s: want more than %s, the time a submission may take", c.grace, api.DefaultSubmitRetryFor)}
	}
	if c.every == 0 {
		c.every = -1 // product.Config: negative is off
	}
	return c, nil
}
