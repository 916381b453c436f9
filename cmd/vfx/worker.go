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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/internal/retry"
	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/render"
	"github.com/vfxrender/vfx/store"
	"github.com/vfxrender/vfx/worker"
)

// workerConfig is the parsed configuration of `vfx worker`.
type workerConfig struct {
	model                         *modelOpts
	natsURL, natsCreds, natsToken string
	dataDir                       string
	storeKind, storeDir           string
	s3                            store.S3Config
	concurrency                   int
	drain                         time.Duration
	backend                       string
	gpu                           int
	cpuWorkers                    int
	httpAddr                      string
	allowHosts                    []string
	allowHTTP                     bool
	name                          string
	tempDir                       string
	preset                        string
	crf                           int
	queue                         queue.Config
}

// env reads VFX_* fallbacks for flag defaults and collects the malformed
// ones, which parseWorkerFlags reports as usage errors.
type env struct {
	get  func(string) string
	errs []error
}

func (e *env) str(name, def string) string {
	if v := strings.TrimSpace(e.get(name)); v != "" {
		return v
	}
	return def
}

func (e *env) int(name string, def int) int {
	v := strings.TrimSpace(e.get(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: not an integer", name, v))
		return def
	}
	return n
}

func (e *env) bool(name string, def bool) bool {
	v := strings.TrimSpace(e.get(name))
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: not a boolean", name, v))
		return def
	}
	return b
}

func (e *env) duration(name string, def time.Duration) time.Duration {
	v := strings.TrimSpace(e.get(name))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: not a duration", name, v))
		return def
	}
	return d
}

// s3Flags maps the S3 flags to the VFX_S3_* names read by
// store.S3ConfigFromEnv.
var s3Flags = [...]struct{ flag, env, help string }{
	{"s3-endpoint", "VFX_S3_ENDPOINT", "S3 endpoint, host:port or http(s)://host:port"},
	{"s3-bucket", "VFX_S3_BUCKET", "S3 bucket"},
	{"s3-region", "VFX_S3_REGION", "S3 region (default us-east-1)"},
	{"s3-access-key", "VFX_S3_ACCESS_KEY", "S3 access key"},
	{"s3-secret-key", "VFX_S3_SECRET_KEY", "S3 secret key (prefer the environment: flags show in ps)"},
	{"s3-secure", "VFX_S3_SECURE", "use HTTPS for S3 (true/false)"},
	{"s3-create-bucket", "VFX_S3_CREATE_BUCKET", "create the bucket when missing (true/false)"},
	{"s3-part-size", "VFX_S3_PART_SIZE", "multipart part size in bytes for streamed uploads (default 16 MiB)"},
}

// addS3Flags registers the S3 flags on fs and returns a function that
// builds the S3 configuration after fs.Parse: a flag given on the command
// line overrides its VFX_S3_* variable (read through getenv).
func addS3Flags(fs *flag.FlagSet) func(getenv func(string) string) (store.S3Config, error) {
	var vals [len(s3Flags)]*string
	for i, f := range s3Flags {
		vals[i] = fs.String(f.flag, "", f.help+" ["+f.env+"]")
	}
	return func(getenv func(string) string) (store.S3Config, error) {
		over := map[string]string{}
		for i, f := range s3Flags {
			if v := strings.TrimSpace(*vals[i]); v != "" {
				over[f.env] = v
			}
		}
		return store.S3ConfigFromEnv("VFX_S3_", func(k string) string {
			if v, ok := over[k]; ok {
				return v
			}
			return getenv(k)
		})
	}
}

// parseWorkerFlags reads the flags of `vfx worker`; each falls back to a
// VFX_* environment variable (read through getenv), then to its default.
func parseWorkerFlags(args []string, stderr io.Writer, getenv func(string) string) (workerConfig, error) {
	e := &env{get: getenv}
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	mo := modelFlags(fs, e)
	mo.everyFlag(fs, e)
	fs.SetOutput(stderr)
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}

	natsURL := fs.String("nats-url", e.str("VFX_NATS_URL", ""), "NATS server URL(s), comma-separated; empty starts an embedded server (127.0.0.1:4222) storing under --data-dir [VFX_NATS_URL]")
	natsCreds := fs.String("nats-creds", e.str("VFX_NATS_CREDS", ""), "NATS credentials file [VFX_NATS_CREDS]")
	natsToken := fs.String("nats-token", e.str("VFX_NATS_TOKEN", ""), "NATS authentication token [VFX_NATS_TOKEN]")
	dataDir := fs.String("data-dir", e.str("VFX_DATA_DIR", "vfx-data"), "data folder of the embedded NATS server and, by default, of the local store [VFX_DATA_DIR]")
	storeKind := fs.String("store", e.str("VFX_STORE", "local"), "object storage: local or s3 [VFX_STORE]")
	storeDir := fs.String("store-dir", e.str("VFX_STORE_DIR", ""), "folder of the local store; empty means <data-dir>/store [VFX_STORE_DIR]")
	s3Config := addS3Flags(fs)
	concurrency := fs.Int("concurrency", e.int("VFX_CONCURRENCY", 1), "jobs run at once (slots); a job is pulled only when a slot is free [VFX_CONCURRENCY]")
	drain := fs.Duration("drain-timeout", e.duration("VFX_DRAIN_TIMEOUT", 2*time.Minute), "on SIGTERM/SIGINT, how long the jobs in hand may take to finish before they are handed back to other workers [VFX_DRAIN_TIMEOUT]")
	backend := fs.String("backend", e.str("VFX_BACKEND", "auto"), backendHelp+" [VFX_BACKEND]")
	gpu := fs.Int("gpu", e.int("VFX_GPU", -1), gpuHelp+" [VFX_GPU]")
	cpuWorkers := fs.Int("cpu-workers", e.int("VFX_CPU_WORKERS", 0), "CPU compute threads per job (0 = all cores) [VFX_CPU_WORKERS]")
	httpAddr := fs.String("http-addr", e.str("VFX_HTTP_ADDR", "127.0.0.1:9090"), "listen address of /metrics, /livez, /healthz and /readyz; \"off\" disables [VFX_HTTP_ADDR]")
	allowHosts := fs.String("allow-hosts", e.str("VFX_ALLOW_HOSTS", ""), "comma-separated hosts or IPs exempt from the SSRF guard of https:// inputs [VFX_ALLOW_HOSTS]")
	allowHTTP := fs.Bool("allow-http", e.bool("VFX_ALLOW_HTTP", false), "also accept http:// input URLs (development only) [VFX_ALLOW_HTTP]")
	name := fs.String("name", e.str("VFX_WORKER_NAME", fmt.Sprintf("%s-%d", host, os.Getpid())), "worker name in job records and logs [VFX_WORKER_NAME]")
	tempDir := fs.String("temp-dir", e.str("VFX_TEMP_DIR", ""), "folder of the per-job working folders; empty means the system temp folder [VFX_TEMP_DIR]")
	preset := fs.String("preset", e.str("VFX_PRESET", worker.DefaultPreset), "x264 preset of the render and source videos [VFX_PRESET]")
	crf := fs.Int("crf", e.int("VFX_CRF", worker.DefaultCRF), "x264 constant rate factor 1..51 [VFX_CRF]")
	ackWait := fs.Duration("ack-wait", e.duration("VFX_ACK_WAIT", 60*time.Second), "AckWait of the shared workers consumer: a job whose worker stops heartbeating is redelivered after it; all workers must agree [VFX_ACK_WAIT]")
	maxDeliver := fs.Int("max-deliver", e.int("VFX_MAX_DELIVER", 5), "deliveries of a job before it fails; all workers must agree [VFX_MAX_DELIVER]")
	retryDelays := fs.String("retry-delays", e.str("VFX_RETRY_DELAYS", "1s,5s,30s,2m"), "comma-separated delays before retries 1, 2, … of a job after a transient error (the last repeats) [VFX_RETRY_DELAYS]")
	replicas := fs.Int("replicas", e.int("VFX_REPLICAS", 1), "replicas of the queue's streams and bucket (3 on a NATS cluster); must agree with the API's, or each start would change them [VFX_REPLICAS]")
	heartbeat := fs.Duration("record-heartbeat", e.duration("VFX_RECORD_HEARTBEAT", 30*time.Second), "how often a running job's record is stamped as alive; must stay under half the sweepers' --stale-after [VFX_RECORD_HEARTBEAT]")
	staleAfter := fs.Duration("stale-after", e.duration("VFX_STALE_AFTER", 5*time.Minute), "how long a job record may go unchanged before the sweeper may fail it (only when its message used up --max-deliver or is gone) [VFX_STALE_AFTER]")
	sweepEvery := fs.Duration("sweep-interval", e.duration("VFX_SWEEP_INTERVAL", time.Minute), "pause between two passes of the stuck-job sweeper [VFX_SWEEP_INTERVAL]")
	maxJob := fs.Duration("max-job-duration", e.duration("VFX_MAX_JOB_DURATION", 30*time.Minute), "how long one delivery is heartbeated; a longer job is presumed stuck and redelivered [VFX_MAX_JOB_DURATION]")

	if err := parseFlags(fs, args); err != nil {
		return workerConfig{}, err
	}
	if len(e.errs) > 0 {
		return workerConfig{}, usageError{errors.Join(e.errs...).Error()}
	}
	if fs.NArg() > 0 {
		return workerConfig{}, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	cfg := workerConfig{
		model:   mo,
		natsURL: strings.TrimSpace(*natsURL), natsCreds: *natsCreds, natsToken: *natsToken,
		dataDir: *dataDir, storeKind: *storeKind, storeDir: *storeDir,
		concurrency: *concurrency, drain: *drain, backend: *backend, gpu: *gpu, cpuWorkers: *cpuWorkers,
		httpAddr: strings.TrimSpace(*httpAddr), allowHosts: splitList(*allowHosts), allowHTTP: *allowHTTP,
		name: strings.TrimSpace(*name), tempDir: *tempDir, preset: *preset, crf: *crf,
	}
	switch {
	case cfg.concurrency < 1:
		return cfg, usageError{fmt.Sprintf("--concurrency %d: want at least 1", cfg.concurrency)}
	case cfg.drain < 0:
		return cfg, usageError{fmt.Sprintf("--drain-timeout %s: want 0 or more", cfg.drain)}
	case cfg.cpuWorkers < 0:
		return cfg, usageError{fmt.Sprintf("--cpu-workers %d: want 0 or more", cfg.cpuWorkers)}
	case cfg.name == "" || strings.ContainsAny(cfg.name, "\r\n\t"):
		return cfg, usageError{"--name must be a non-empty single line"}
	case cfg.crf < 1 || cfg.crf > 51:
		return cfg, usageError{fmt.Sprintf("--crf %d: want 1..51", cfg.crf)}
	case *ackWait < time.Second:
		return cfg, usageError{fmt.Sprintf("--ack-wait %s: want at least 1s", *ackWait)}
	case *maxDeliver < 1:
		return cfg, usageError{fmt.Sprintf("--max-deliver %d: want at least 1", *maxDeliver)}
	case *replicas < 1 || *replicas > 5:
		return cfg, usageError{fmt.Sprintf("--replicas %d: want 1..5", *replicas)}
	case *maxJob < time.Second:
		return cfg, usageError{fmt.Sprintf("--max-job-duration %s: want at least 1s", *maxJob)}
	}
	if err := checkBackend(cfg.backend, cfg.gpu); err != nil {
		return cfg, err
	}
	if err := mo.check(); err != nil {
		return cfg, err
	}
	if err := checkPreset(cfg.preset); err != nil {
		return cfg, usageError{"--preset: " + err.Error()}
	}
	delays, err := parseDurations(*retryDelays)
	if err != nil {
		return cfg, usageError{"--retry-delays: " + err.Error()}
	}
	cfg.queue = queue.Config{AckWait: *ackWait, MaxDeliver: *maxDeliver, RetryDelays: delays, MaxJobDuration: *maxJob, Replicas: *replicas,
		RecordHeartbeat: *heartbeat, StaleAfter: *staleAfter, SweepInterval: *sweepEvery}

	switch cfg.storeKind {
	case "local":
		if cfg.storeDir == "" {
			cfg.storeDir = filepath.Join(cfg.dataDir, "store")
		}
	case "s3":
		if cfg.s3, err = s3Config(getenv); err != nil {
			return cfg, usageError{fmt.Sprintf("--store s3: %v (set --s3-endpoint and --s3-bucket, or VFX_S3_*)", err)}
		}
	default:
		return cfg, usageError{fmt.Sprintf("--store %q: want local or s3", cfg.storeKind)}
	}
	return cfg, nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// parseDurations parses a comma-separated list of durations (each ≥ 0).
func parseDurations(s string) ([]time.Duration, error) {
	items := splitList(s)
	if len(items) == 0 {
		return nil, errors.New("empty list")
	}
	out := make([]time.Duration, 0, len(items))
	for _, it := range items {
		d, err := time.ParseDuration(it)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%q is not a duration of 0 or more", it)
		}
		out = append(out, d)
	}
	return out, nil
}

// cmdWorker runs the worker daemon until SIGTERM/SIGINT (ctx), then drains
// and returns nil (exit 0).
func cmdWorker(ctx context.Context, args []string, _, stderr io.Writer) error {
	cfg, err := parseWorkerFlags(args, stderr, os.Getenv)
	if err != nil {
		return err
	}
	log := newJSONLogger(stderr)
	defer func() { _ = log.Sync() }()
	// Jobs one after another: C frame buffers freed by a job's codecs go
	// back to the system instead of staying in glibc's heaps.
	if err := codec.MapLargeAllocations(); err != nil {
		log.Info("C allocator left at its defaults", zap.Error(err))
	}
	return runWorker(ctx, cfg, log)
}

// workerState is what /readyz reports on.
type workerState struct {
	nc    atomic.Pointer[nats.Conn]
	ready atomic.Bool
}

func (s *workerState) isReady() bool {
	nc := s.nc.Load()
	return s.ready.Load() && nc != nil && nc.IsConnected()
}

// runWorker wires NATS, the queue, the store, the compute device, the
// metrics server and the daemon, and works jobs until ctx ends.
func runWorker(ctx context.Context, cfg workerConfig, base *zap.Logger) error {
	log := base.With(zap.String("worker", cfg.name))
	state := &workerState{}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics, err := worker.NewMetrics(reg)
	if err != nil {
		return err
	}

	// The HTTP server comes first, so /healthz answers during start-up.
	if cfg.httpAddr != "off" && cfg.httpAddr != "" {
		stopHTTP, err := serveOps(cfg.httpAddr, reg, state, log)
		if err != nil {
			return err
		}
		defer stopHTTP()
	}

	natsURL := cfg.natsURL
	if natsURL == "" {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		srv, err := queue.StartEmbedded(sctx, queue.EmbeddedConfig{StoreDir: filepath.Join(cfg.dataDir, "nats"), Logger: log.Named("nats")})
		cancel()
		if err != nil {
			return err
		}
		defer srv.Shutdown()
		natsURL = srv.ClientURL()
		log.Info("embedded nats server started", zap.String("url", natsURL))
	}
	log.Info("connecting to nats", zap.String("url", redactNATS(natsURL)))
	nc, err := queue.Connect(ctx, queue.ConnConfig{
		URL: natsURL, CredsFile: cfg.natsCreds, Token: cfg.natsToken,
		Name: "vfx-worker " + cfg.name, Logger: log,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer nc.Close()
	state.nc.Store(nc)

	var q *queue.Queue
	if err := retryStartup(ctx, log, "open queue", func() (err error) {
		q, err = queue.Open(ctx, nc, cfg.queue)
		return err
	}); err != nil {
		return err
	}
	var st store.Store
	if err := retryStartup(ctx, log, "open store", func() (err error) {
		st, err = openStore(ctx, cfg)
		return err
	}); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}

	if cfg.tempDir != "" {
		if err := os.MkdirAll(cfg.tempDir, 0o750); err != nil {
			return fmt.Errorf("worker: temp dir: %w", err)
		}
	}
	// Job folders a killed worker left behind (SIGKILL, OOM) go now; those
	// of live workers sharing the folder are locked and stay.
	removed, err := worker.SweepJobDirs(cfg.tempDir)
	if err != nil {
		log.Warn("sweep stale job folders", zap.Error(err))
	}
	if len(removed) > 0 {
		log.Info("removed stale job folders", zap.Strings("folders", removed))
	}
	codec.LogWarnings(ffmpegLog(log))
	// A worker without its segmentation network would fail every auto and
	// select job: it refuses to start instead.
	net, card, closeNet, err := cfg.model.load(ctx)
	if err != nil && ctx.Err() != nil {
		return nil // stopped during start-up (SIGTERM, SIGINT): a clean exit
	}
	if err != nil {
		log.Error("segmentation model unavailable", zap.Error(err))
		return fmt.Errorf("worker: segmentation model: %w", err)
	}
	defer closeNet()
	log.Info("segmentation model loaded", zap.String("model", card.Name), zap.String("licence", card.Licence),
		zap.String("provider", *cfg.model.provider), zap.Int("network_every", cfg.model.schedule().Every), zap.Int("network_every_select", cfg.model.schedule().ForSelect().Every),
		zap.Bool("int8", net.Int8()))
	go warmModel(ctx, log, net)
	dev, err := openBackend(cfg.backend, cfg.gpu, cfg.cpuWorkers)
	if err != nil {
		return err
	}
	defer dev.Close()
	// The start-up self-test: a device that does not render like the CPU
	// reference never pulls a job.
	st0, err := render.SelfTest(ctx, dev)
	if err != nil && ctx.Err() != nil {
		// Stopped during start-up: the test was cut short, not failed (a
		// pod's SIGTERM while it starts exits 0, as one while it waits for
		// NATS or the store does).
		log.Info("stopped during start-up", zap.String("step", "self-test"))
		return nil
	}
	if err != nil {
		log.Error("self-test failed", zap.String("device", dev.Name()), zap.Error(err))
		return fmt.Errorf("self-test: %w", err)
	}
	log.Info("self-test passed", zap.String("device", dev.Name()), zap.Int("differing_codes", st0.Differing),
		zap.Int("max_code_diff", st0.MaxDiff), zap.Duration("elapsed", st0.Elapsed))
	daemon := &worker.Daemon{
		Queue:    q,
		Store:    st,
		Resolver: &store.Resolver{Store: st, AllowHosts: cfg.allowHosts, AllowHTTP: cfg.allowHTTP, TempDir: cfg.tempDir},
		Pipeline: &worker.Pipeline{Device: dev, Net: net, NetSchedule: cfg.model.schedule()},
		Name:     cfg.name,
		TempDir:  cfg.tempDir,
		Preset:   cfg.preset,
		CRF:      cfg.crf,
		Logger:   base,
		Metrics:  metrics,
	}
	cons, err := q.Consumer(ctx)
	if err != nil {
		return err
	}

	var wg sync.WaitGroup
	wg.Go(func() {
		if err := q.WatchMaxDeliveries(ctx, log.Named("max-deliveries")); err != nil {
			log.Error("max-deliveries watcher stopped", zap.Error(err))
		}
	})
	wg.Go(func() { runSweeper(ctx, q, reg, log.Named("sweeper")) })
	defer wg.Wait()

	state.ready.Store(true)
	log.Info("worker ready", zap.Int("concurrency", cfg.concurrency), zap.String("backend", dev.Name()),
		zap.String("store", cfg.storeKind), zap.Duration("drain_timeout", cfg.drain),
		zap.Duration("ack_wait", q.Config().AckWait))
	err = cons.Run(ctx, queue.RunConfig{Slots: cfg.concurrency, Drain: cfg.drain, Logger: log}, daemon.Handle)
	state.ready.Store(false)
	if err != nil {
		return err
	}
	log.Info("worker stopped")
	return nil
}

// retryStartup calls fn until it succeeds, ctx ends (nil is returned; the
// caller checks ctx) or it fails for a reason retrying cannot fix.
func retryStartup(ctx context.Context, log *zap.Logger, what string, fn func() error) error {
	err := retry.Call(ctx, retry.Backoff{Initial: 500 * time.Millisecond, Max: 10 * time.Second},
		func(err error) bool {
			if errors.Is(err, store.ErrBucketNotFound) || errors.Is(err, queue.ErrInvalid) {
				return false
			}
			log.Warn(what+" failed; retrying", zap.Error(err))
			return true
		},
		func(context.Context) error { return fn() })
	if ce := (*retry.ContextError)(nil); errors.As(err, &ce) {
		return nil
	}
	return err
}

// openStore opens the configured object storage.
func openStore(ctx context.Context, cfg workerConfig) (store.Store, error) {
	if cfg.storeKind == "s3" {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return store.NewS3(sctx, cfg.s3)
	}
	// The worker never signs URLs; the secret only satisfies NewLocal
	// unless the operator shares the API's.
	secret := []byte(os.Getenv("VFX_STORE_SECRET"))
	if len(secret) < 16 {
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("worker: store secret: %w", err)
		}
	}
	return store.NewLocal(cfg.storeDir, "", secret)
}

// serveOps serves /metrics, /livez, /healthz and /readyz on addr and returns a
// function that shuts the server down.
func serveOps(addr string, reg *prometheus.Registry, state *workerState, log *zap.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("worker: http listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	live := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	}
	// /livez (Kubernetes liveness) and /healthz (its older name): the
	// process serves HTTP. /readyz: connected to NATS and pulling jobs
	// (false during start-up and drain).
	mux.HandleFunc("GET /livez", live)
	mux.HandleFunc("GET /healthz", live)
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !state.isReady() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "not ready\n")
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", zap.Error(err))
		}
	}()
	log.Info("http listening", zap.String("addr", ln.Addr().String()))
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// redactNATS drops user info from NATS URLs for logs.
func redactNATS(urls string) string {
	parts := splitList(urls)
	for i, p := range parts {
		if at := strings.LastIndex(p, "@"); at >= 0 {
			if s := strings.Index(p, "://"); s >= 0 && s < at {
				parts[i] = p[:s+3] + "***@" + p[at+1:]
			}
		}
	}
	return strings.Join(parts, ",")
}
