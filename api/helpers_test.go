package api

import (
	"context"
	"os"
	"testing"
	"time"

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

// env is a whole API on loopback (apitest.Env) with the Server on it.
type env struct {
	*apitest.Env
	srv *Server
	cfg Config
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
	mut      func(*Config)
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
	cfg := Config{Queue: ae.Q, JetStream: ae.JS, Store: ae.St, Accounts: ae.Acc, AdminToken: ae.Admin,
		AllowPrivateNetworks: true, AllowHTTPCallbacks: true, Logger: ae.Log}
	dcfg := ae.Dispatch(o.delays)
	if o.mut != nil {
		o.mut(&cfg)
	}
	srv, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if o.validate != nil {
		srv.ValidateJob = o.validate
	}
	srv.Mount(store.FilesPath, ae.St.Handler())
	ae.Serve(srv.Handler())
	e := &env{Env: ae, srv: srv, cfg: cfg, dcfg: dcfg}
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

// Resp is an HTTP answer (apitest.Resp).
type Resp = apitest.Resp

// runBackground runs what the command's wiring runs beside a Server until
// ctx ends: the dispatcher (billing and webhooks, on dc with the Server's
// generation API) and the upload sweeper.
func runBackground(ctx context.Context, srv *Server, dc dispatch.Config) error {
	dc.APIs = srv.Dispatch()
	return apitest.RunBackground(ctx, dc, srv.RunUploadSweeper)
}
