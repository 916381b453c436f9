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

// The shared helpers of apitest, under the names the tests use.
var (
	validReq     = apitest.ValidGeneration
	with         = apitest.With
	PNGBytes     = apitest.PNGBytes
	KeyframePNG  = apitest.KeyframePNG
	DataURI      = apitest.DataURI
	VideoFixture = apitest.VideoFixture
	ReadFile     = apitest.ReadFile
	Eventually   = apitest.Eventually
	paddedPNG    = apitest.PaddedPNG
	inputObjects = apitest.InputObjects
)

// Resp is an HTTP answer (apitest.Resp).
type Resp = apitest.Resp

// runBackground runs what the command's wiring runs beside a Server until
// ctx ends: the dispatcher (billing and webhooks, on dc with the Server's
// generation API) and the upload sweeper.
func runBackground(ctx context.Context, srv *Server, dc dispatch.Config) error {
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
