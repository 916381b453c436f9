package gen

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/store"
)

func TestMain(m *testing.M) {
	codec.Quiet()
	os.Exit(m.Run())
}

// env is the generation API on loopback (apitest.Env): the api.Server of
// package api and the generation API on it.
type env struct {
	*apitest.Env
	srv *api.Server
	gen *API
	cfg api.Config
	// dcfg is the dispatcher's configuration (its APIs are filled in by
	// runBackground).
	dcfg dispatch.Config
}

type envOpts struct {
	delays   []time.Duration
	workers  bool
	noRun    bool
	storeDir string
	natsDir  string
	mut      func(*api.Config)
	// maxPayload caps NATS messages (0: the default 1 MB).
	maxPayload int32
	// validate, when set, replaces the server's job.Validate (to count
	// the calls), before the first request.
	validate job.Validator
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	ae := apitest.Start(t, apitest.Options{StoreDir: o.storeDir, NATSDir: o.natsDir, MaxPayload: o.maxPayload})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := api.Config{Queue: ae.Q, JetStream: ae.JS, Store: ae.St, Accounts: ae.Acc, AdminToken: ae.Admin,
		AllowPrivateNetworks: true, AllowHTTPCallbacks: true, Logger: ae.Log}
	dcfg := ae.Dispatch(o.delays)
	if o.mut != nil {
		o.mut(&cfg)
	}
	srv, err := api.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}
	if o.validate != nil {
		srv.ValidateJob = o.validate
	}
	srv.Mount(store.FilesPath, ae.St.Handler())
	ae.Serve(srv.Handler())
	e := &env{Env: ae, srv: srv, gen: g, cfg: cfg, dcfg: dcfg}
	if !o.noRun {
		ae.Go(func(ctx context.Context) {
			if err := runBackground(ctx, srv, dcfg); err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
	if o.workers {
		ae.StartWorkers()
	}
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
	dc.APIs = srv.Dispatch()
	return apitest.RunBackground(ctx, dc, srv.RunUploadSweeper)
}

// settle charges or releases a finished job as the dispatcher's billing
// does for its event.
func (e *env) settle(ctx context.Context, id string) error {
	rec, _, err := e.Q.Get(ctx, id)
	if err != nil {
		return err
	}
	return e.srv.Dispatch()[rec.Kind].Settle(ctx, rec)
}

// Resp is an HTTP answer (apitest.Resp).
type Resp = apitest.Resp
