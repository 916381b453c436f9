package product

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"github.com/vfxrender/vfx/api/gen"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/store"
)

func TestMain(m *testing.M) {
	codec.Quiet()
	os.Exit(m.Run())
}

// env is the whole API on loopback (apitest.Env): the Server of package
// api, which serves the generation API, and the product API on it.
type env struct {
	*apitest.Env
	srv  *api.Server
	prod *API
	cfg  api.Config
	pcfg Config
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
	pmut     func(*Config)
	// validate, when set, replaces the server's job.Validate (to count
	// the calls), before the first request.
	validate job.Validator
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	ae := apitest.Start(t, apitest.Options{StoreDir: o.storeDir, NATSDir: o.natsDir})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := api.Config{Queue: ae.Q, JetStream: ae.JS, Store: ae.St, Accounts: ae.Acc, AdminToken: ae.Admin,
		AllowPrivateNetworks: true, AllowHTTPCallbacks: true, Logger: ae.Log}
	dcfg := ae.Dispatch(o.delays)
	if o.mut != nil {
		o.mut(&cfg)
	}
	var pcfg Config
	if o.pmut != nil {
		o.pmut(&pcfg)
	}
	srv, err := api.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.New(ctx, srv); err != nil {
		t.Fatal(err)
	}
	prod, err := New(ctx, srv, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	if o.validate != nil {
		srv.ValidateJob = o.validate
	}
	srv.Mount(store.FilesPath, ae.St.Handler())
	ae.Serve(srv.Handler())
	e := &env{Env: ae, srv: srv, prod: prod, cfg: cfg, pcfg: pcfg, dcfg: dcfg}
	if !o.noRun {
		ae.Go(func(ctx context.Context) {
			if err := runBackground(ctx, prod, dcfg); err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
	if o.workers {
		ae.StartWorkers()
	}
	return e
}

// runBackground runs what the command's wiring runs beside the API until
// ctx ends: the dispatcher (billing and webhooks of both APIs) and the
// passes (the credit ledger reconciler, the upload sweeper).
func runBackground(ctx context.Context, p *API, dc dispatch.Config) error {
	dc.APIs = p.Dispatch()
	return apitest.RunBackground(ctx, dc, p.RunLedgerReconciler, p.RunUploadSweeper)
}

// Resp is an HTTP answer (apitest.Resp).
type Resp = apitest.Resp
