package api

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A key whose claim is alive (renewed) when the wait runs out answers 503
// with Retry-After, like the other 503s, in both APIs' shapes; once the
// claim is no longer renewed, the next request takes it over.
func TestIdemClaimLiveThenTakenOver(t *testing.T) {
	srv := newServer(t, func(c *Config) { c.IdemClaimLease = 300 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	none := func(context.Context, string) (bool, error) { return false, nil }
	// Each API's claims are NewClaims on its own bucket (packages gen and
	// product), answered in its shape.
	gidem, err := srv.OpenBucket(ctx, BucketIdem, "vfx generation idempotency keys")
	if err != nil {
		t.Fatal(err)
	}
	pidem, err := srv.OpenBucket(ctx, "product_idem", "vfx product idempotency keys")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		claims *Claims
		sh     Shape
	}{{"generation", srv.NewClaims(gidem, NewJobID), EnvelopeShape}, {"product", srv.NewClaims(pidem, func() string { return "dap_" + NewJobID()[4:] }), DetailShape}} {
		t.Run(c.name, func(t *testing.T) {
			c.claims.wait = 900 * time.Millisecond // three leases: renewals keep it alive
			first, err := c.claims.acquire(ctx, "o."+c.name, "h", "r1", none)
			if err != nil || first.Claim == nil || first.Dead != nil {
				t.Fatalf("first claim: %+v %v", first, err)
			}
			_, err = c.claims.acquire(ctx, "o."+c.name, "h", "r2", none)
			var ae *Error
			if !errors.As(err, &ae) || ae.Code != CodeUnavailable {
				t.Fatalf("a live claim: %v, want 503", err)
			}
			w := httptest.NewRecorder()
			srv.WriteError(w, httptest.NewRequest("POST", "/", nil), err, c.sh)
			if w.Code != 503 || w.Header().Get("Retry-After") != "1" {
				t.Fatalf("status %d, Retry-After %q: %s", w.Code, w.Header().Get("Retry-After"), w.Body)
			}
			if _, err := c.claims.acquire(ctx, "o."+c.name, "other", "r3", none); !errors.As(err, new(*idemConflictError)) {
				t.Fatalf("another body: %v, want a conflict", err)
			}
			first.Claim.halt() // the owner dies: no more renewals, no release
			next, err := c.claims.acquire(ctx, "o."+c.name, "h", "r4", none)
			if err != nil || next.Claim == nil || next.Dead == nil || next.Dead.JobID != first.JobID || next.JobID == first.JobID {
				t.Fatalf("take-over: %+v %v", next, err)
			}
			defer next.Claim.finish()
			if !strings.HasSuffix(next.Claim.entry.Holder, "/r4") || next.Claim.entry.TookOver != first.JobID || next.Claim.entry.ClaimedAt.IsZero() {
				t.Fatalf("claim %+v", next.Claim.entry)
			}
			// The dead owner, had it been only frozen, finds its claim gone.
			if err := first.Claim.Check(ctx); err == nil {
				t.Fatal("the taken-over claim still checks as held")
			}
			found, err := c.claims.acquire(ctx, "o."+c.name, "h", "r5",
				func(_ context.Context, id string) (bool, error) { return id == next.JobID, nil })
			if err != nil || !found.Found || found.JobID != next.JobID {
				t.Fatalf("after the job exists: %+v %v", found, err)
			}
		})
	}
}
