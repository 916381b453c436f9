package gen

import (
	"context"
	"errors"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/store"
)

// TestMediaErrorStoreDown: object storage that refuses connections makes
// a 503 SERVICE_UNAVAILABLE with Retry-After (nothing was created; the
// client resends), not a 500; a bad upload stays a 400; a cancelled
// request is neither.
func TestMediaErrorStoreDown(t *testing.T) {
	down := fmt.Errorf("store: open uploads/x.png: %w",
		&url.Error{Op: "Head", URL: "http://127.0.0.1:9/b/uploads/x.png", Err: syscall.ECONNREFUSED})
	var ae *api.Error
	if err := api.MediaError("source", down); !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable ||
		ae.Code != api.CodeUnavailable || ae.Header.Get("Retry-After") == "" {
		t.Fatalf("store down: %#v", err)
	}
	if err := api.MediaError("source", fmt.Errorf("fetch: %w", store.ErrNotFound)); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("missing upload: %#v, want a 400", err)
	}
	if err := api.MediaError("source", context.Canceled); errors.As(err, &ae) {
		t.Fatalf("cancelled: %#v, want a plain error", err)
	}
}

// TestNATSUnavailableIs503: a request that fails because NATS has no
// responder (a restart; the drill saw Reserve fail so) answers 503
// SERVICE_UNAVAILABLE with Retry-After, not 500; other errors stay 500.
// Both shapes answer alike: the generation API's envelope and the
// product API's detail.
func TestNATSUnavailableIs503(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	for _, sh := range []api.Shape{api.EnvelopeShape, api.DetailShape} {
		for _, c := range []struct {
			err  error
			code int
			name job.Code
		}{
			{fmt.Errorf("account: reserve: %w", nats.ErrNoResponders), http.StatusServiceUnavailable, api.CodeUnavailable},
			{fmt.Errorf("queue: get: %w", nats.ErrTimeout), http.StatusServiceUnavailable, api.CodeUnavailable},
			{errors.New("something else"), http.StatusInternalServerError, api.CodeInternal},
		} {
			rec := httptest.NewRecorder()
			e.Srv.WriteError(rec, httptest.NewRequest("POST", "/v1/vfx/generations", nil), c.err, sh)
			if rec.Code != c.code {
				t.Errorf("api.Shape %d, %v: %d, want %d", sh, c.err, rec.Code, c.code)
			}
			if c.code == http.StatusServiceUnavailable && rec.Header().Get("Retry-After") == "" {
				t.Errorf("api.Shape %d, %v: no Retry-After", sh, c.err)
			}
			want := `{"error":{"code":"` + string(c.name) + `",`
			if sh == api.DetailShape {
				want = `{"detail":{"error_code":"` + string(c.name) + `",`
			}
			if !strings.HasPrefix(rec.Body.String(), want) {
				t.Errorf("api.Shape %d, %v: body %s, want it to start %s", sh, c.err, rec.Body, want)
			}
		}
	}
}
