package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/gen"
	"github.com/vfxrender/vfx/api/product"
	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/store"
)

// apiConfig is the parsed configuration of `vfx api`.
type apiConfig struct {
	listen               string
	baseURL              string
	natsURL              string
	natsCreds, natsToken string
	storeKind, storeDir  string
	s3                   store.S3Config
	adminToken           string
	allowPrivateNetworks bool
	allowHTTPCallbacks   bool
	allowHTTPSources     bool
	webhookDelays        []time.Duration
	ledger               ledgerConfig
	shutdownTimeout      time.Duration
	replicas             int
	queue                queue.Config
	name                 string
}

// parseAPIFlags reads the flags of `vfx api`; each falls back to a VFX_*
// environment variable (read through getenv), then to its default. The
// NATS, store and queue flags are those of `vfx worker`, with the same
// variables, so one environment can configure both.
func parseAPIFlags(args []string, stderr io.Writer, getenv func(string) string) (apiConfig, error) {
	e := &env{get: getenv}
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	fs.SetOutput(stderr)
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "api"
	}
	listen := fs.String("listen", e.str("VFX_LISTEN", "127.0.0.1:8080"), "HTTP listen address of the API, /metrics, /healthz and /readyz [VFX_LISTEN]")
	baseURL := fs.String("base-url", e.str("VFX_BASE_URL", ""), "public base URL of the API, used in the signed URLs of the local store; empty means http://<listen address> [VFX_BASE_URL]")
	natsURL := fs.String("nats-url", e.str("VFX_NATS_URL", ""), "NATS server URL(s), comma-separated; required [VFX_NATS_URL]")
	natsCreds := fs.String("nats-creds", e.str("VFX_NATS_CREDS", ""), "NATS credentials file [VFX_NATS_CREDS]")
	natsToken := fs.String("nats-token", e.str("VFX_NATS_TOKEN", ""), "NATS authentication token [VFX_NATS_TOKEN]")
	storeKind := fs.String("store", e.str("VFX_STORE", "s3"), "object storage: s3, or local on a folder shared with the workers [VFX_STORE]")
	storeDir := fs.String("store-dir", e.str("VFX_STORE_DIR", ""), "folder of the local store; required with --store local [VFX_STORE_DIR]")
	s3Config := addS3Flags(fs)
	admin := fs.String("admin-token", e.str("VFX_ADMIN_TOKEN", ""), "operator token of /admin/v1, at least 16 characters; required (prefer VFX_ADMIN_TOKEN: flags show in ps) [VFX_ADMIN_TOKEN]")
	private := fs.Bool("allow-private-networks", e.bool("VFX_ALLOW_PRIVATE_NETWORKS", false), "let callback_url and https:// sources reach loopback and private addresses (tests, development) [VFX_ALLOW_PRIVATE_NETWORKS]")
	httpHooks := fs.Bool("allow-http-callbacks", e.bool("VFX_ALLOW_HTTP_CALLBACKS", false), "accept http:// callback URLs (development) [VFX_ALLOW_HTTP_CALLBACKS]")
	httpSources := fs.Bool("allow-http-sources", e.bool("VFX_ALLOW_HTTP", false), "accept http:// source URIs (development); the workers need --allow-http too [VFX_ALLOW_HTTP]")
	delays := fs.String("webhook-retry-delays", e.str("VFX_WEBHOOK_RETRY_DELAYS", "1s,5s,30s,2m"), "pauses before webhook attempts 2, 3, …; attempts = entries + 1 [VFX_WEBHOOK_RETRY_DELAYS]")
	ledgerF := addLedgerFlags(fs, e)
	shutdown := fs.Duration("shutdown-timeout", e.duration("VFX_SHUTDOWN_TIMEOUT", 15*time.Second), "on SIGTERM/SIGINT, how long requests in progress may take to finish [VFX_SHUTDOWN_TIMEOUT]")
	replicas := fs.Int("replicas", e.int("VFX_REPLICAS", 1), "replicas of the API's NATS key-value buckets (3 on a NATS cluster) [VFX_REPLICAS]")
	ackWait := fs.Duration("ack-wait", e.duration("VFX_ACK_WAIT", 60*time.Second), "AckWait of the shared workers consumer; must agree with the workers' [VFX_ACK_WAIT]")
	maxDeliver := fs.Int("max-deliver", e.int("VFX_MAX_DELIVER", 5), "deliveries of a job before it fails; must agree with the workers' [VFX_MAX_DELIVER]")
	staleAfter := fs.Duration("stale-after", e.duration("VFX_STALE_AFTER", 5*time.Minute), "how long a job record may go unchanged before the sweeper may fail it (only when its message used up --max-deliver or is gone); at least twice the workers' --record-heartbeat [VFX_STALE_AFTER]")
	sweepEvery := fs.Duration("sweep-interval", e.duration("VFX_SWEEP_INTERVAL", time.Minute), "pause between two passes of the stuck-job sweeper [VFX_SWEEP_INTERVAL]")
	name := fs.String("name", e.str("VFX_API_NAME", fmt.Sprintf("%s-%d", host, os.Getpid())), "name of this replica in NATS connections and logs [VFX_API_NAME]")
	if err := parseFlags(fs, args); err != nil {
		return apiConfig{}, err
	}
	if len(e.errs) > 0 {
		return apiConfig{}, usageError{errors.Join(e.errs...).Error()}
	}
	if fs.NArg() > 0 {
		return apiConfig{}, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	cfg := apiConfig{
		listen: strings.TrimSpace(*listen), baseURL: strings.TrimRight(strings.TrimSpace(*baseURL), "/"),
		natsURL: strings.TrimSpace(*natsURL), natsCreds: *natsCreds, natsToken: *natsToken,
		storeKind: *storeKind, storeDir: *storeDir, adminToken: *admin,
		allowPrivateNetworks: *private, allowHTTPCallbacks: *httpHooks, allowHTTPSources: *httpSources,
		shutdownTimeout: *shutdown, replicas: *replicas, name: strings.TrimSpace(*name),
		queue: queue.Config{AckWait: *ackWait, MaxDeliver: *maxDeliver, Replicas: *replicas,
			StaleAfter: *staleAfter, SweepInterval: *sweepEvery},
	}
	switch {
	case cfg.listen == "":
		return cfg, usageError{"--listen must not be empty"}
	case cfg.natsURL == "":
		return cfg, usageError{"--nats-url (or VFX_NATS_URL) is required: vfx api runs against an external NATS; vfx serve embeds one"}
	case cfg.adminToken == "":
		return cfg, usageError{"--admin-token (or VFX_ADMIN_TOKEN) is required"}
	case len(cfg.adminToken) < 16:
		return cfg, usageError{"--admin-token: use at least 16 characters"}
	case cfg.shutdownTimeout < 0:
		return cfg, usageError{fmt.Sprintf("--shutdown-timeout %s: want 0 or more", cfg.shutdownTimeout)}
	case cfg.replicas < 1 || cfg.replicas > 5:
		return cfg, usageError{fmt.Sprintf("--replicas %d: want 1..5", cfg.replicas)}
	case *ackWait < time.Second:
		return cfg, usageError{fmt.Sprintf("--ack-wait %s: want at least 1s", *ackWait)}
	case *maxDeliver < 1:
		return cfg, usageError{fmt.Sprintf("--max-deliver %d: want at least 1", *maxDeliver)}
	case cfg.name == "" || strings.ContainsAny(cfg.name, "\r\n\t"):
		return cfg, usageError{"--name must be a non-empty single line"}
	}
	if cfg.ledger, err = ledgerF.parse(); err != nil {
		return cfg, err
	}
	if cfg.webhookDelays, err = parseDurations(*delays); err != nil {
		return cfg, usageError{"--webhook-retry-delays: " + err.Error()}
	}
	switch cfg.storeKind {
	case "local":
		if strings.TrimSpace(cfg.storeDir) == "" {
			return cfg, usageError{"--store local: --store-dir (or VFX_STORE_DIR) is required: a folder shared with the workers"}
		}
	case "s3":
		if cfg.s3, err = s3Config(getenv); err != nil {
			return cfg, usageError{fmt.Sprintf("--store s3: %v (set --s3-endpoint and --s3-bucket, or VFX_S3_*)", err)}
		}
	default:
		return cfg, usageError{fmt.Sprintf("--store %q: want s3 or local", cfg.storeKind)}
	}
	return cfg, nil
}

// cmdAPI runs the API alone against external NATS and object storage until
// SIGTERM/SIGINT (ctx), then shuts the HTTP server down and returns nil.
func cmdAPI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseAPIFlags(args, stderr, os.Getenv)
	if err != nil {
		return err
	}
	log := newJSONLogger(stderr)
	defer func() { _ = log.Sync() }()
	return runAPI(ctx, cfg, stdout, log.With(zap.String("api", cfg.name)))
}

// apiFrontend is the outer handler of `vfx api`: /metrics, /healthz and
// /readyz answer from the start, the API's routes once it is wired (503
// SERVICE_UNAVAILABLE before).
type apiFrontend struct {
	api   atomic.Pointer[http.Handler]
	state *workerState
}

func (f *apiFrontend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := f.api.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, `{"error":{"code":"`+string(api.CodeUnavailable)+`","message":"the API is starting"}}`+"\n")
}

// newAPIMux routes the operational endpoints and hands the rest to the
// frontend, counting requests and timing them in reg.
func newAPIMux(front *apiFrontend, reg *prometheus.Registry) (http.Handler, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vfx_api_requests_total", Help: "HTTP requests answered by the API, by method and status code.",
	}, []string{"method", "code"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "vfx_api_request_duration_seconds", Help: "Time to answer an API request, by method.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	}, []string{"method"})
	for _, c := range []prometheus.Collector{requests, latency} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("api: metrics: %w", err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	live := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	}
	mux.HandleFunc("GET /livez", live)
	mux.HandleFunc("GET /healthz", live)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !front.state.isReady() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "not ready\n")
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	mux.Handle("/", promhttp.InstrumentHandlerCounter(requests, promhttp.InstrumentHandlerDuration(latency, front)))
	return mux, nil
}

// runAPI listens at once (so /healthz answers during start-up), wires
// NATS, the queue, the account service, the store and the API, serves
// until ctx ends, then stops accepting requests, waits up to
// cfg.shutdownTimeout for those in progress and stops the background work.
func runAPI(ctx context.Context, cfg apiConfig, stdout io.Writer, log *zap.Logger) error {
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("api: listen %s: %w", cfg.listen, err)
	}
	defer ln.Close()
	baseURL := cfg.baseURL
	if baseURL == "" {
		baseURL = "http://" + ln.Addr().String()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	front := &apiFrontend{state: &workerState{}}
	handler, err := newAPIMux(front, reg)
	if err != nil {
		return err
	}
	httpSrv := api.NewHTTPServer(handler)
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	wg.Go(func() {
		if err := httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("api: http: %w", err)
		}
	})
	bgCtx, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	var nc *nats.Conn
	// Whatever happens below, stop the HTTP server first, then the
	// background work, then the NATS connection they use.
	defer func() {
		shCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.shutdownTimeout)
		if err := httpSrv.Shutdown(shCtx); err != nil {
			log.Warn("http shutdown timed out; closing connections", zap.Error(err))
			_ = httpSrv.Close()
		}
		cancel()
		wg.Wait()
		stopBG()
		bg.Wait()
		if nc != nil {
			nc.Close()
		}
		log.Info("stopped")
	}()
	log.Info("http listening", zap.String("addr", ln.Addr().String()))

	log.Info("connecting to nats", zap.String("url", redactNATS(cfg.natsURL)))
	nc, err = queue.Connect(ctx, queue.ConnConfig{
		URL: cfg.natsURL, CredsFile: cfg.natsCreds, Token: cfg.natsToken, Name: "vfx-api " + cfg.name, Logger: log,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	front.state.nc.Store(nc)

	var q *queue.Queue
	var acc *account.Service
	var st store.Store
	var srv *api.Server
	var gapi *gen.API
	var prod *product.API
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("api: jetstream: %w", err)
	}
	steps := []struct {
		what string
		fn   func(context.Context) error
	}{
		{"open queue", func(ctx context.Context) (err error) { q, err = queue.Open(ctx, nc, cfg.queue); return err }},
		{"open accounts", func(ctx context.Context) (err error) {
			acc, err = account.Open(ctx, js, account.Config{Replicas: cfg.replicas})
			return err
		}},
		{"open store", func(ctx context.Context) (err error) { st, err = openAPIStore(ctx, cfg, baseURL); return err }},
		{"open api", func(ctx context.Context) (err error) {
			srv, err = api.New(ctx, api.Config{
				Queue: q, JetStream: js, Store: st, Accounts: acc, AdminToken: cfg.adminToken,
				AllowPrivateNetworks: cfg.allowPrivateNetworks, AllowHTTPCallbacks: cfg.allowHTTPCallbacks,
				AllowHTTPSources: cfg.allowHTTPSources,
				Replicas:         cfg.replicas, Logger: log.Named("api"),
			})
			if err != nil {
				return err
			}
			if gapi, err = gen.New(ctx, srv); err != nil {
				return err
			}
			prod, err = product.New(ctx, srv, product.Config{LedgerReconcileEvery: cfg.ledger.every, LedgerReconcileGrace: cfg.ledger.grace})
			return err
		}},
	}
	for _, s := range steps {
		if err := retryStartup(ctx, log, s.what, func() error {
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			return s.fn(sctx)
		}); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	var origins []string
	if local, ok := st.(*store.Local); ok {
		srv.Mount(store.FilesPath, local.Handler())
	} else if o := s3Origin(cfg.s3); o != "" {
		origins = append(origins, o)
	}
	if err := mountWeb(srv, origins); err != nil {
		return err
	}
	httpSrv.RegisterOnShutdown(gapi.StopStreams) // end the page's event streams, or Shutdown waits for them

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
	h := srv.Handler()
	front.api.Store(&h)
	front.state.ready.Store(true)
	fmt.Fprintf(stdout, "vfx api listening on %s\n", baseURL)
	log.Info("serving", zap.String("url", baseURL), zap.String("store", cfg.storeKind))

	select {
	case <-ctx.Done():
		front.state.ready.Store(false)
		log.Info("shutting down")
		return nil
	case err := <-errc:
		front.state.ready.Store(false)
		return err
	}
}

// openAPIStore opens the configured object storage. The local store signs
// its URLs with a secret kept in the shared folder (or VFX_STORE_SECRET),
// so that every API replica on that folder accepts the others' URLs.
func openAPIStore(ctx context.Context, cfg apiConfig, baseURL string) (store.Store, error) {
	if cfg.storeKind == "s3" {
		return store.NewS3(ctx, cfg.s3)
	}
	if err := os.MkdirAll(cfg.storeDir, 0o750); err != nil {
		return nil, fmt.Errorf("api: store dir: %w", err)
	}
	secret, err := storeSecret(cfg.storeDir)
	if err != nil {
		return nil, err
	}
	return store.NewLocal(cfg.storeDir, baseURL, secret)
}

// s3Origin is the browser origin of an S3 endpoint ("https://host:port"),
// where the page loads outputs from and PUTs uploads to; "" when unknown.
func s3Origin(c store.S3Config) string {
	ep := strings.TrimSpace(c.Endpoint)
	if ep == "" {
		return ""
	}
	if !strings.HasPrefix(ep, "http://") && !strings.HasPrefix(ep, "https://") {
		if c.Secure {
			ep = "https://" + ep
		} else {
			ep = "http://" + ep
		}
	}
	return strings.TrimRight(ep, "/")
}

// runAPIBackground runs beside the HTTP API until ctx ends: the dispatcher
// (the charging of finished jobs and their webhooks, on the Server's two
// job APIs) and the APIs' background passes (the product API's credit
// ledger reconciler and the upload sweeper). vfx serve and vfx api both
// start it.
func runAPIBackground(ctx context.Context, log *zap.Logger, srv *api.Server, prod *product.API, dc dispatch.Config) {
	dc.APIs, dc.Logger = srv.Dispatch(), log.Named("dispatch")
	var wg sync.WaitGroup
	wg.Go(func() { prod.RunLedgerReconciler(ctx) })
	wg.Go(func() { srv.RunUploadSweeper(ctx) })
	d, err := dispatch.New(dc)
	if err == nil {
		err = d.Run(ctx)
	}
	if err != nil {
		log.Error("dispatch stopped", zap.Error(err))
	}
	wg.Wait()
}
