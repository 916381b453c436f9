package main

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/vfxrender/vfx/api/product"
)

// TestLedgerFlags: the reconciler flags of vfx api and vfx serve, their
// environment variables, defaults and refusals.
func TestLedgerFlags(t *testing.T) {
	apiBase := []string{"--nats-url", "nats://127.0.0.1:1", "--admin-token", "0123456789abcdef", "--store", "local", "--store-dir", t.TempDir()}
	noenv := func(string) string { return "" }
	parsers := map[string]func(args []string, getenv func(string) string) (ledgerConfig, error){
		"api": func(args []string, getenv func(string) string) (ledgerConfig, error) {
			c, err := parseAPIFlags(append(append([]string{}, apiBase...), args...), io.Discard, getenv)
			return c.ledger, err
		},
		"serve": func(args []string, getenv func(string) string) (ledgerConfig, error) {
			c, err := parseServeFlags(args, io.Discard, getenv)
			return c.ledger, err
		},
	}
	for name, parse := range parsers {
		c, err := parse(nil, noenv)
		if err != nil || c != (ledgerConfig{every: product.DefaultLedgerReconcileEvery, grace: product.DefaultLedgerReconcileGrace}) {
			t.Fatalf("%s defaults: %+v %v", name, c, err)
		}
		c, err = parse([]string{"--ledger-reconcile-every", "0", "--ledger-reconcile-grace", "1h"}, noenv)
		if err != nil || c != (ledgerConfig{every: -1, grace: time.Hour}) {
			t.Fatalf("%s off: %+v %v", name, c, err)
		}
		env := map[string]string{"VFX_LEDGER_RECONCILE_EVERY": "5m", "VFX_LEDGER_RECONCILE_GRACE": "2h"}
		c, err = parse(nil, func(k string) string { return env[k] })
		if err != nil || c != (ledgerConfig{every: 5 * time.Minute, grace: 2 * time.Hour}) {
			t.Fatalf("%s environment: %+v %v", name, c, err)
		}
		for _, bad := range [][]string{{"--ledger-reconcile-every", "-1s"}, {"--ledger-reconcile-grace", "10s"}} {
			var ue usageError
			if _, err := parse(bad, noenv); !errors.As(err, &ue) {
				t.Fatalf("%s %v: %v", name, bad, err)
			}
		}
	}
}
