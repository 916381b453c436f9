package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/gen"
	"github.com/vfxrender/vfx/api/product"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/store"
	"github.com/vfxrender/vfx/web"
	"github.com/vfxrender/vfx/worker"
)

// serveConfig is the parsed configuration of `vfx serve`.
type serveConfig struct {
	model                *modelOpts
	listen               string
	baseURL              string
	dataDir              string
	adminToken           string
	allowPrivateNetworks bool
	allowHTTPCallbacks   bool
	webhookDelays        []time.Duration
	ledger               ledgerConfig
	concurrency          int
	cpuWorkers           int
	backend              string
	gpu                  int
	drain                time.Duration
	preset               string
	devEmail             string
}

// parseServeFlags reads the flags of `vfx serve`; each falls back to a
// VFX_* environment variable (read through getenv), then to its default.
func parseServeFlags(args []string, stderr io.Writer, getenv func(string) string) (serveConfig, error) {
	e := &env{get: getenv}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	mo := modelFlags(fs, e)
	mo.everyFlag(fs, e)
	fs.SetOutput(stderr)
	listen := fs.String("listen", e.str("VFX_LISTEN", "127.0.0.1:8080"), "HTTP listen address of the API [VFX_LISTEN]")
	baseURL := fs.String("base-url", e.str("VFX_BASE_URL", ""), "public base URL of the API, used in signed file URLs; empty means http://<listen address> [VFX_BASE_URL]")
	data := fs.String("data", e.str("VFX_DATA_DIR", "vfx-data"), "data folder: embedded NATS under nats/, the local store under store/ [VFX_DATA_DIR]")
	admin := fs.String("admin-token", e.str("VFX_ADMIN_TOKEN", ""), "operator token of /admin/v1 (prefer VFX_ADMIN_TOKEN: flags show in ps); empty disables the operator API [VFX_ADMIN_TOKEN]")
	private := fs.Bool("allow-private-networks", e.bool("VFX_ALLOW_PRIVATE_NETWORKS", false), "let callback_url and https:// sources reach loopback and private addresses (tests, development) [VFX_ALLOW_PRIVATE_NETWORKS]")
	httpHooks := fs.Bool("allow-http-callbacks", e.bool("VFX_ALLOW_HTTP_CALLBACKS", false), "accept http:// callback URLs (development) [VFX_ALLOW_HTTP_CALLBACKS]")
	delays := fs.String("webhook-retry-delays", e.str("VFX_WEBHOOK_RETRY_DELAYS", "1s,5s,30s,2m"), "pauses before webhook attempts 2, 3, …; attempts = entries + 1 [VFX_WEBHOOK_RETRY_DELAYS]")
	ledgerF := addLedgerFlags(fs, e)
	concurrency := fs.Int("concurrency", e.int("VFX_CONCURRENCY", 1), "jobs rendered at once by the in-process workers [VFX_CONCURRENCY]")
	cpuWorkers := fs.Int("cpu-workers", e.int("VFX_CPU_WORKERS", 0), "CPU compute threads per job (0 = all cores) [VFX_CPU_WORKERS]")
	backend := fs.String("backend", e.str("VFX_BACKEND", "auto"), backendHelp+" [VFX_BACKEND]")
	gpu := fs.Int("gpu", e.int("VFX_GPU", -1), gpuHelp+" [VFX_GPU]")
	drain := fs.Duration("drain-timeout", e.duration("VFX_DRAIN_TIMEOUT", 2*time.Minute), "on SIGTERM/SIGINT, how long running jobs may take to finish [VFX_DRAIN_TIMEOUT]")
	preset := fs.String("preset", e.str("VFX_PRESET", worker.DefaultPreset), "x264 preset of the render and source videos [VFX_PRESET]")
	devEmail := fs.String("dev-email", e.str("VFX_DEV_EMAIL", "dev@vfx.localhost"), "e-mail of the development account created on a first start [VFX_DEV_EMAIL]")
	if err := parseFlags(fs, args); err != nil {
		return serveConfig{}, err
	}
	if len(e.errs) > 0 {
		return serveConfig{}, usageError{errors.Join(e.errs...).Error()}
	}
	if fs.NArg() > 0 {
		return serveConfig{}, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	cfg := serveConfig{model: mo, listen: strings.TrimSpace(*listen), baseURL: strings.TrimRight(strings.TrimSpace(*baseURL), "/"), dataDir: *data,
		adminToken: *admin, allowPrivateNetworks: *private, allowHTTPCallbacks: *httpHooks, concurrency: *concurrency,
		cpuWorkers: *cpuWorkers, backend: *backend, gpu: *gpu, drain: *drain, preset: *preset, devEmail: *devEmail}
	if err := checkBackend(cfg.backend, cfg.gpu); err != nil {
		return cfg, err
	}
	if err := mo.check(); err != nil {
		return cfg, err
	}
	switch {
	case cfg.listen == "":
		return cfg, usageError{"--listen must not be empty"}
	case cfg.concurrency < 1:
		return cfg, usageError{fmt.Sprintf("--concurrency %d: want at least 1", cfg.concurrency)}
	case cfg.cpuWorkers < 0:
		return cfg, usageError{fmt.Sprintf("--cpu-workers %d: want 0 or more", cfg.cpuWorkers)}
	case cfg.drain < 0:
		return cfg, usageError{fmt.Sprintf("--drain-timeout %s: want 0 or more", cfg.drain)}
	case cfg.adminToken != "" && len(cfg.adminToken) < 16:
		return cfg, usageError{"--admin-token: use at least 16 characters"}
	}
	if err := checkPreset(cfg.preset); err != nil {
		return cfg, usageError{"--preset: " + err.Error()}
	}
	var err error
	if cfg.ledger, err = ledgerF.parse(); err != nil {
		return cfg, err
	}
	if cfg.webhookDelays, err = parseDurations(*delays); err != nil {
		return cfg, usageError{"--webhook-retry-delays: " + err.Error()}
	}
	return cfg, nil
}

// cmdServe runs the API, embedded NATS, the local store and workers in
// one process until SIGTERM/SIGINT (ctx), then drains and returns nil.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseServeFlags(args, stderr, os.Getenv)
	if err != nil {
		return err
	}
	log := newJSONLogger(stderr)
	defer func() { _ = log.Sync() }()
	return runServe(ctx, cfg, stdout, log)
}

// storeSecret returns the local store's URL signing secret, created once
// under dir so that signed URLs survive a restart.
func storeSecret(dir string) ([]byte, error) {
	if s := os.Getenv("VFX_STORE_SECRET"); len(s) >= 16 {
		return []byte(s), nil
	}
	path := filepath.Join(dir, "store-secret")
	if b, err := os.ReadFile(path); err == nil && len(b) >= 16 {
		return b, nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("serve: store secret: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("serve: store secret: %w", err)
	}
	return b, nil
}

// readyBanner is what `vfx serve` prints once it serves: the development
// account and its key on a first start, then the URL and the key last.
func readyBanner(baseURL, acctID, email, key string, created bool) string {
	if !created {
		return fmt.Sprintf("vfx serve listening on %s\n", baseURL)
	}
	return fmt.Sprintf("development account %s (%s): organisation key, no rate or concurrency limits\n"+
		"try: VFX_API_URL=%s VFX_API_KEY=<key> vfx submit --type image --source photo.jpg --alpha-mode auto --prompt \"golden hour\" --fit\n"+
		"vfx serve listening on %s\napi key (shown once): %s\n", acctID, email, baseURL, baseURL, key)
}

// runServe wires everything and serves until ctx ends. On shutdown it
// stops accepting requests, lets the workers drain, and stops NATS last.
func runServe(ctx context.Context, cfg serveConfig, stdout io.Writer, log *zap.Logger) error {
	if err := os.MkdirAll(cfg.dataDir, 0o750); err != nil {
		return fmt.Errorf("serve: data dir: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("serve: listen %s: %w", cfg.listen, err)
	}
	defer ln.Close()
	baseURL := cfg.baseURL
	if baseURL == "" {
		baseURL = "http://" + ln.Addr().String()
	}

	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ns, err := queue.StartEmbedded(sctx, queue.EmbeddedConfig{StoreDir: filepath.Join(cfg.dataDir, "nats"), Port: -1, Logger: log.Named("nats")})
	if err != nil {
		return err
	}
	defer ns.Shutdown()
	nc, err := queue.Connect(sctx, queue.ConnConfig{URL: ns.ClientURL(), Name: "vfx-serve", Logger: log})
	if err != nil {
		return err
	}
	defer nc.Close()
	q, err := queue.Open(sctx, nc, queue.Config{})
	if err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("serve: jetstream: %w", err)
	}
	acc, err := account.Open(sctx, js, account.Config{})
	if err != nil {
		return err
	}
	secret, err := storeSecret(cfg.dataDir)
	if err != nil {
		return err
	}
	local, err := store.NewLocal(filepath.Join(cfg.dataDir, "store"), baseURL, secret)
	if err != nil {
		return err
	}
	srv, err := api.New(sctx, api.Config{
		Queue: q, JetStream: js, Store: local, Accounts: acc, AdminToken: cfg.adminToken,
		AllowPrivateNetworks: cfg.allowPrivateNetworks, AllowHTTPCallbacks: cfg.allowHTTPCallbacks,
		Logger: log.Named("api"),
	})
	if err != nil {
		return err
	}
	gapi, err := gen.New(sctx, srv)
	if err != nil {
		return err
	}
	prod, err := product.New(sctx, srv, product.Config{LedgerReconcileEvery: cfg.ledger.every, LedgerReconcileGrace: cfg.ledger.grace})
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics, err := worker.NewMetrics(reg)
	if err != nil {
		return err
	}
	srv.Mount(store.FilesPath, local.Handler())
	if err := mountWeb(srv, nil); err != nil {
		return err
	}
	srv.Mount("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv.Mount("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	}))
	// /readyz, as vfx api and vfx worker answer it: the HTTP server starts
	// once the store, queue, device and workers are wired, so it is ready
	// while the embedded NATS connection is up.
	srv.Mount("GET /readyz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !nc.IsConnected() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	}))

	acct, key, created, err := acc.EnsureDevAccount(sctx, cfg.devEmail)
	if err != nil {
		return fmt.Errorf("serve: development account: %w", err)
	}
	cancel()

	codec.LogWarnings(ffmpegLog(log))
	net, card, closeNet, err := cfg.model.load(ctx)
	if err != nil {
		return fmt.Errorf("serve: segmentation model: %w", err)
	}
	defer closeNet()
	log.Info("segmentation model loaded", zap.String("model", card.Name), zap.String("licence", card.Licence), zap.Bool("int8", net.Int8()))
	go warmModel(ctx, log, net)
	dev, err := openBackend(cfg.backend, cfg.gpu, cfg.cpuWorkers)
	if err != nil {
		return err
	}
	defer dev.Close()
	var allow []string
	if cfg.allowPrivateNetworks {
		allow = []string{"0.0.0.0/0", "::/0"}
	}
	tmp := filepath.Join(cfg.dataDir, "tmp")
	if err := os.MkdirAll(tmp, 0o750); err != nil {
		return fmt.Errorf("serve: temp dir: %w", err)
	}
	daemon := &worker.Daemon{
		Queue: q, Store: local, Resolver: &store.Resolver{Store: local, AllowHosts: allow, TempDir: tmp},
		Pipeline: &worker.Pipeline{Device: dev, Net: net, NetSchedule: cfg.model.schedule()}, Name: "serve", TempDir: tmp, Preset: cfg.preset,
		Logger: log.Named("worker"), Metrics: metrics,
	}
	cons, err := q.Consumer(ctx)
	if err != nil {
		return err
	}

	httpSrv := api.NewHTTPServer(srv.Handler())
	httpSrv.RegisterOnShutdown(gapi.StopStreams) // end the page's event streams, or Shutdown waits for them
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	wg.Go(func() {
		if err := httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("serve: http: %w", err)
		}
	})
	bgCtx, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	var bg sync.WaitGroup
	bg.Go(func() {
		runAPIBackground(bgCtx, log, srv, prod, dispatch.Config{Queue: q, RetryDelays: cfg.webhookDelays,
			AllowPrivateNetworks: cfg.allowPrivateNetworks})
	})
	bg.Go(func() {
		if err := q.WatchMaxDeliveries(bgCtx, log.Named("max-deliveries")); err != nil {
			log.Error("max-deliveries watcher stopped", zap.Error(err))
		}
	})
	bg.Go(func() { runSweeper(bgCtx, q, reg, log.Named("sweeper")) })
	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	workersDone := make(chan error, 1)
	go func() {
		workersDone <- cons.Run(wctx, queue.RunConfig{Slots: cfg.concurrency, Drain: cfg.drain, Logger: log.Named("worker")}, daemon.Handle)
	}()
	log.Info("serving", zap.String("url", baseURL), zap.Int("concurrency", cfg.concurrency), zap.String("data", cfg.dataDir))
	// The URL and the key come last, on their own lines, in one write (so a
	// script that waits for the URL line finds the key with it).
	fmt.Fprint(stdout, readyBanner(baseURL, acct.ID, acct.Email, key, created))

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	case runErr = <-workersDone:
		workersDone <- nil
	}
	log.Info("shutting down")
	// Stop accepting requests, then let the workers finish their jobs (or
	// hand them back), then stop the background consumers and NATS.
	shCtx, shCancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	_ = httpSrv.Shutdown(shCtx)
	shCancel()
	wg.Wait()
	stopWorkers()
	if err := <-workersDone; err != nil && runErr == nil {
		runErr = err
	}
	stopBG()
	bg.Wait()
	log.Info("stopped")
	return runErr
}

// mountWeb serves the page for people (package web) at / on srv; origins
// are the object store's origins besides the API's own (an S3 endpoint).
func mountWeb(srv *api.Server, origins []string) error {
	h, err := web.Handler(web.Options{MediaOrigins: origins})
	if err != nil {
		return err
	}
	for _, p := range web.Patterns() {
		srv.Mount(p, h)
	}
	return nil
}
