package api

import (
	"context"
	"testing"
	"time"

	"github.com/vfxrender/vfx/api/apitest"
)

func TestMain(m *testing.M) { apitest.Main(m) }

// newServer is a Server on a fresh apitest.Env (NATS, queue, accounts,
// local store), its Config changed by mut; it is not served: the core's
// tests call it directly. The job APIs' tests build theirs, served and
// with the APIs on it, with package apienv, which this package's tests
// cannot import.
func newServer(t *testing.T, mut func(*Config)) *Server {
	t.Helper()
	ae := apitest.Start(t, apitest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := Config{Queue: ae.Q, JetStream: ae.JS, Store: ae.St, Accounts: ae.Acc, AdminToken: ae.Admin, Logger: ae.Log}
	mut(&cfg)
	srv, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}
