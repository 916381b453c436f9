// Package apienv is the test environment of the job API packages
// (api/gen, api/product): an api.Server on an apitest.Env with the APIs a
// package's tests register on it, served on loopback, with the background
// the command's wiring runs beside it (the dispatcher and the passes).
// It imports package api, so package api's own tests cannot use it; they
// build their Server on apitest directly.
package apienv

import (
	"context"
	"testing"
	"time"

	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/store"
)

// Options configures New.
type Options struct {
	// StoreDir and NATSDir keep the store and the NATS data ("" is a
	// fresh folder of the test), so that a test can restart on them.
	StoreDir, NATSDir string
	// MaxPayload caps NATS messages (0: the default 1 MB).
	MaxPayload int32
	// Delays are the webhook retry delays (nil: apitest.Env.Dispatch's).
	Delays []time.Duration
	// Workers runs a real worker on the queue (apitest.Env.StartWorkers).
	Workers bool
	// NoRun leaves the background (dispatcher and passes) stopped.
	NoRun bool
	// Mut changes the Server's Config before the Server is made.
	Mut func(*api.Config)
	// Validate, when set, replaces the server's job.Validate (to count
	// the calls), before the first request.
	Validate job.Validator
}

// Env is an api.Server with a package's APIs on it, served on an
// apitest.Env.
type Env struct {
	*apitest.Env
	Srv *api.Server
	Cfg api.Config
	// DCfg is the dispatcher's configuration (its APIs are filled in by
	// RunBackground).
	DCfg dispatch.Config
}

// Register puts a package's APIs on srv (gen.New, product.New) and
// returns the background passes they add to the Server's own.
type Register func(ctx context.Context, srv *api.Server) (passes []func(context.Context), err error)

// Config is the Server configuration of the tests on ae: its queue,
// store, accounts and operator token, private networks and http://
// callbacks allowed (the callbacks and sources are on loopback).
func Config(ae *apitest.Env) api.Config {
	return api.Config{Queue: ae.Q, JetStream: ae.JS, Store: ae.St, Accounts: ae.Acc, AdminToken: ae.Admin,
		AllowPrivateNetworks: true, AllowHTTPCallbacks: true, Logger: ae.Log}
}

// New starts an apitest.Env, makes a Server on it (Config, changed by
// o.Mut), registers the package's APIs with register, mounts the store's
// signed URLs and serves it; unless o.NoRun it runs RunBackground with
// register's passes until the test ends, and with o.Workers a worker.
func New(t *testing.T, o Options, register Register) *Env {
	t.Helper()
	ae := apitest.Start(t, apitest.Options{StoreDir: o.StoreDir, NATSDir: o.NATSDir, MaxPayload: o.MaxPayload})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := Config(ae)
	if o.Mut != nil {
		o.Mut(&cfg)
	}
	srv, err := api.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	passes, err := register(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}
	if o.Validate != nil {
		srv.ValidateJob = o.Validate
	}
	srv.Mount(store.FilesPath, ae.St.Handler())
	ae.Serve(srv.Handler())
	e := &Env{Env: ae, Srv: srv, Cfg: cfg, DCfg: ae.Dispatch(o.Delays)}
	if !o.NoRun {
		ae.Go(func(ctx context.Context) {
			if err := RunBackground(ctx, srv, e.DCfg, passes...); err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
	if o.Workers {
		ae.StartWorkers()
	}
	return e
}

// RunBackground runs what the command's wiring runs beside srv until ctx
// ends: the dispatcher (billing and webhooks, on dc with srv's job APIs),
// srv's upload sweeper and the APIs' passes.
func RunBackground(ctx context.Context, srv *api.Server, dc dispatch.Config, passes ...func(context.Context)) error {
	dc.APIs = srv.Dispatch()
	return apitest.RunBackground(ctx, dc, append(passes, srv.RunUploadSweeper)...)
}
