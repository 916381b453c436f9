package api

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vfxrender/vfx/account"
)

// A key whose job is still being created when the wait runs out answers
// 503 with Retry-After, like the other 503s, in both APIs.
func TestIdempotencyStillCreatingRetryAfter(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true})
	e.srv.idemWait = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pending := func(t *testing.T, put func(string, []byte) error, ikey, jobID string) {
		t.Helper()
		v, _ := json.Marshal(idemEntry{JobID: jobID, BodyHash: "h"})
		if err := put(ikey, v); err != nil {
			t.Fatal(err)
		}
	}
	check := func(t *testing.T, err error, sh shape) {
		t.Helper()
		if err == nil {
			t.Fatal("no error for a job still being created")
		}
		w := httptest.NewRecorder()
		e.srv.writeError(w, httptest.NewRequest("POST", "/", nil), err, sh)
		if w.Code != 503 || w.Header().Get("Retry-After") != "1" {
			t.Fatalf("status %d, Retry-After %q, want 503 and 1: %s", w.Code, w.Header().Get("Retry-After"), w.Body)
		}
		var body struct {
			Error  struct{ Code string }
			Detail struct {
				ErrorCode string `json:"error_code"`
			}
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error.Code+body.Detail.ErrorCode != CodeUnavailable {
			t.Fatalf("body %s (%v), want %s", w.Body, err, CodeUnavailable)
		}
	}
	t.Run("generation", func(t *testing.T) {
		ikey := idemKey("acct_1", "k")
		pending(t, func(k string, v []byte) error { _, err := e.srv.idem.Put(ctx, k, v); return err }, ikey, newJobID())
		_, found, err := e.srv.existing(ctx, ikey, "h", "acct_1")
		if found {
			t.Fatal("found a job that does not exist")
		}
		check(t, err, envelopeShape)
	})
	t.Run("product", func(t *testing.T) {
		ikey := idemKey("org_1-", "k")
		pending(t, func(k string, v []byte) error { _, err := e.srv.pidem.Put(ctx, k, v); return err }, ikey, newProductJobID())
		_, found, err := e.srv.existingProduct(ctx, ikey, "h", orgCtx{Org: account.Org{ID: "org_1"}})
		if found {
			t.Fatal("found a job that does not exist")
		}
		check(t, err, detailShape)
	})
}
