package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/vfxrender/vfx/store"
)

// TestMediaErrorStoreDown: object storage that refuses connections makes
// a 503 SERVICE_UNAVAILABLE with Retry-After (nothing was created; the
// client resends), not a 500; a bad upload stays a 400; a cancelled
// request is neither.
func TestMediaErrorStoreDown(t *testing.T) {
	down := fmt.Errorf("store: open uploads/x.png: %w",
		&url.Error{Op: "Head", URL: "http://127.0.0.1:9/b/uploads/x.png", Err: syscall.ECONNREFUSED})
	var ae *apiError
	if err := mediaError("source", down); !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable ||
		ae.Code != CodeUnavailable || ae.Header.Get("Retry-After") == "" {
		t.Fatalf("store down: %#v", err)
	}
	if err := mediaError("source", fmt.Errorf("fetch: %w", store.ErrNotFound)); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("missing upload: %#v, want a 400", err)
	}
	if err := mediaError("source", context.Canceled); errors.As(err, &ae) {
		t.Fatalf("cancelled: %#v, want a plain error", err)
	}
}

// TestNATSUnavailableIs503: a request that fails because NATS has no
// responder (a restart; the drill saw Reserve fail so) answers 503
// SERVICE_UNAVAILABLE with Retry-After, not 500; other errors stay 500.
func TestNATSUnavailableIs503(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true})
	for _, c := range []struct {
		err  error
		code int
	}{
		{fmt.Errorf("account: reserve: %w", nats.ErrNoResponders), http.StatusServiceUnavailable},
		{fmt.Errorf("queue: get: %w", nats.ErrTimeout), http.StatusServiceUnavailable},
		{errors.New("something else"), http.StatusInternalServerError},
	} {
		rec := httptest.NewRecorder()
		e.srv.writeError(rec, httptest.NewRequest("POST", "/v1/vfx/generations", nil), c.err)
		if rec.Code != c.code {
			t.Errorf("%v: %d, want %d", c.err, rec.Code, c.code)
		}
		if c.code == http.StatusServiceUnavailable && rec.Header().Get("Retry-After") == "" {
			t.Errorf("%v: no Retry-After", c.err)
		}
	}
}
