package gen

import (
	"context"
	"testing"

	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"github.com/vfxrender/vfx/api/apitest/apienv"
	"github.com/vfxrender/vfx/dispatch"
)

func TestMain(m *testing.M) { apitest.Main(m) }

// env is the generation API on loopback (apienv.Env): the api.Server of
// package api and the generation API on it.
type env struct {
	*apienv.Env
	gen *API
}

type envOpts = apienv.Options

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	e := &env{}
	e.Env = apienv.New(t, o, func(ctx context.Context, srv *api.Server) (passes []func(context.Context), err error) {
		e.gen, err = New(ctx, srv)
		return nil, err
	})
	return e
}

// newAPI is a new Server with the generation API on it (a restart, or
// another replica).
func newAPI(ctx context.Context, cfg api.Config) (*API, error) {
	srv, err := api.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return New(ctx, srv)
}

// runBackground runs what the command's wiring runs beside the API until
// ctx ends: the dispatcher (billing and webhooks) and the upload sweeper.
func runBackground(ctx context.Context, srv *api.Server, dc dispatch.Config) error {
	return apienv.RunBackground(ctx, srv, dc)
}

// settle charges or releases a finished job as the dispatcher's billing
// does for its event.
func (e *env) settle(ctx context.Context, id string) error {
	rec, _, err := e.Q.Get(ctx, id)
	if err != nil {
		return err
	}
	return e.Srv.Dispatch()[rec.Kind].Settle(ctx, rec)
}

// Resp is an HTTP answer (apitest.Resp).
type Resp = apitest.Resp
