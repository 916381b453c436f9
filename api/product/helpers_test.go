package product

import (
	"context"
	"testing"

	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"github.com/vfxrender/vfx/api/apitest/apienv"
	"github.com/vfxrender/vfx/api/gen"
	"github.com/vfxrender/vfx/dispatch"
)

func TestMain(m *testing.M) { apitest.Main(m) }

// env is the whole API on loopback (apienv.Env): the Server of package
// api with the generation API and the product API on it.
type env struct {
	*apienv.Env
	prod *API
	// pcfg is the product API's configuration.
	pcfg Config
}

type envOpts = apienv.Options

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	e := &env{}
	e.Env = apienv.New(t, o, func(ctx context.Context, srv *api.Server) ([]func(context.Context), error) {
		if _, err := gen.New(ctx, srv); err != nil {
			return nil, err
		}
		var err error
		if e.prod, err = New(ctx, srv, e.pcfg); err != nil {
			return nil, err
		}
		return []func(context.Context){e.prod.RunLedgerReconciler}, nil
	})
	return e
}

// runBackground runs what the command's wiring runs beside the API until
// ctx ends: the dispatcher (billing and webhooks of both APIs) and the
// passes (the credit ledger reconciler, the upload sweeper).
func runBackground(ctx context.Context, p *API, dc dispatch.Config) error {
	return apienv.RunBackground(ctx, p.Server, dc, p.RunLedgerReconciler)
}

// Resp is an HTTP answer (apitest.Resp).
type Resp = apitest.Resp
