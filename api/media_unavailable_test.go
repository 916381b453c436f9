package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"syscall"
	"testing"

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
