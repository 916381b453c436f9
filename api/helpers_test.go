package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/internal/modeltest"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/store"
	"github.com/vfxrender/vfx/worker"
)

func TestMain(m *testing.M) {
	codec.Quiet()
	os.Exit(m.Run())
}

// env is a whole API on loopback: embedded NATS, the queue, the account
// service, a local store and the Server behind a real HTTP listener.
type env struct {
	t     *testing.T
	url   string
	srv   *Server
	q     *queue.Queue
	js    jetstream.JetStream
	acc   *account.Service
	st    *store.Local
	admin string
	cfg   Config
	// dcfg is the dispatcher's configuration (its APIs are filled in by
	// runBackground).
	dcfg   dispatch.Config
	cancel context.CancelFunc
	wg     sync.WaitGroup
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if o.natsDir == "" {
		o.natsDir = t.TempDir()
	}
	if o.storeDir == "" {
		o.storeDir = t.TempDir()
	}
	ns, err := queue.StartEmbedded(ctx, queue.EmbeddedConfig{StoreDir: o.natsDir, Port: -1, MaxPayload: o.maxPayload})
	if err != nil {
		t.Fatalf("start nats: %v", err)
	}
	t.Cleanup(ns.Shutdown)
	nc, err := queue.Connect(ctx, queue.ConnConfig{URL: ns.ClientURL(), Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	q, err := queue.Open(ctx, nc, queue.Config{AckWait: 3 * time.Second, PollWait: 250 * time.Millisecond,
		RetryDelays: []time.Duration{300 * time.Millisecond}, EventAckWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := account.Open(ctx, js, account.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var handler http.Handler = http.NotFoundHandler()
	var mu sync.RWMutex
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.RLock()
		h := handler
		mu.RUnlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	st, err := store.NewLocal(o.storeDir, ts.URL, []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	delays := o.delays
	if delays == nil {
		delays = []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}
	}
	log := zaptest.NewLogger(t, zaptest.Level(zapcore.WarnLevel))
	cfg := Config{Queue: q, JetStream: js, Store: st, Accounts: acc, AdminToken: "admintoken",
		AllowPrivateNetworks: true, AllowHTTPCallbacks: true, Logger: log}
	dcfg := dispatch.Config{Queue: q, RetryDelays: delays, Timeout: 2 * time.Second, AllowPrivateNetworks: true, Logger: log}
	if o.mut != nil {
		o.mut(&cfg)
	}
	srv, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if o.validate != nil {
		srv.validateJob = o.validate
	}
	srv.Mount(store.FilesPath, st.Handler())
	mu.Lock()
	handler = srv.Handler()
	mu.Unlock()
	e := &env{t: t, url: ts.URL, srv: srv, q: q, js: js, acc: acc, st: st, admin: "admintoken", cfg: cfg, dcfg: dcfg}
	rctx, rcancel := context.WithCancel(context.Background())
	e.cancel = rcancel
	if !o.noRun {
		e.wg.Go(func() {
			if err := runBackground(rctx, srv, dcfg); err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
	if o.workers {
		dm := &worker.Daemon{Queue: q, Store: st, Resolver: &store.Resolver{Store: st, AllowHosts: []string{"127.0.0.1"}, AllowHTTP: true},
			Pipeline: &worker.Pipeline{Device: kernels.NewCPU(2), Net: modeltest.Load(t)}, Name: "test", TempDir: t.TempDir(), Preset: "ultrafast",
			ProgressInterval: 100 * time.Millisecond, Logger: zap.NewNop()}
		cons, err := q.Consumer(ctx)
		if err != nil {
			t.Fatal(err)
		}
		e.wg.Go(func() {
			_ = cons.Run(rctx, queue.RunConfig{Slots: 2, Drain: 5 * time.Second}, dm.Handle)
		})
	}
	t.Cleanup(func() {
		rcancel()
		e.wg.Wait()
	})
	return e
}

// newAccount creates an account with a key of kind and returns the
// account and the key's secret.
func (e *env) newAccount(kind account.Kind, in account.AccountInput) (account.Account, string) {
	e.t.Helper()
	ctx := context.Background()
	if in.Email == "" {
		in.Email = "u" + newJobID()[4:12] + "@example.com"
	}
	if in.BillingType == "" {
		in.BillingType = account.BillingPostpaid
	}
	a, err := e.acc.CreateAccount(ctx, in)
	if err != nil {
		e.t.Fatal(err)
	}
	_, secret, err := e.acc.CreateKey(ctx, a.ID, kind)
	if err != nil {
		e.t.Fatal(err)
	}
	return a, secret
}

// orgKey is a fresh organization key (no rate limits).
func (e *env) orgKey() string {
	_, k := e.newAccount(account.KindOrganization, account.AccountInput{})
	return k
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("status %d body %q: %v", r.status, r.body, err)
	}
	return m
}

// code returns error.code of an envelope answer.
func (r resp) code() job.Code {
	var m struct {
		Error struct{ Code job.Code } `json:"error"`
	}
	_ = json.Unmarshal(r.body, &m)
	return m.Error.Code
}

func (e *env) do(method, path, key string, body any, hdr ...string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

func (e *env) adminDo(method, path string, body any) resp {
	e.t.Helper()
	return e.do(method, path, "", body, "Authorization", "Bearer "+e.admin)
}

// pngBytes encodes a w x h RGB PNG (gray when gray is set).
func pngBytes(t *testing.T, w, h int, gray bool) []byte {
	t.Helper()
	var img image.Image
	if gray {
		g := image.NewGray(image.Rect(0, 0, w, h))
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				if x > w/4 && x < 3*w/4 {
					g.SetGray(x, y, color.Gray{Y: 255})
				}
			}
		}
		img = g
	} else {
		rgba := image.NewRGBA(image.Rect(0, 0, w, h))
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				rgba.Set(x, y, color.RGBA{R: uint8(x * 7), G: uint8(y * 5), B: 120, A: 255})
			}
		}
		img = rgba
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// keyframePNG is a select keyframe as roto tools export it: colour
// everywhere and the subject (a centre band) in the alpha, 8 or 16 bits
// (deep); without a subject the alpha is all transparent and the colour
// black, so it selects nothing.
func keyframePNG(t *testing.T, w, h int, deep, subject bool) []byte {
	t.Helper()
	m := image.NewNRGBA64(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			var c color.NRGBA64
			if subject {
				c = color.NRGBA64{R: 50000, G: uint16(x * 900), B: 9000}
				if x > w/4 && x < 3*w/4 {
					c.A = 65535
				}
			}
			m.SetNRGBA64(x, y, c)
		}
	}
	var img image.Image = m
	if !deep {
		n := image.NewNRGBA(m.Bounds())
		draw.Draw(n, n.Bounds(), m, image.Point{}, draw.Src)
		img = n
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func dataURI(mime string, b []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b)
}

// upload puts content through the uploads API and returns its vfx_uri.
func (e *env) upload(key, name string, content []byte) string {
	e.t.Helper()
	r := e.do("POST", "/v1/uploads", key, map[string]any{"filename": name})
	if r.status != 200 {
		e.t.Fatalf("upload: %d %s", r.status, r.body)
	}
	m := r.json(e.t)
	req, _ := http.NewRequest("PUT", m["upload_url"].(string), bytes.NewReader(content))
	req.Header.Set("Content-Type", "application/octet-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		e.t.Fatalf("put upload: %d", res.StatusCode)
	}
	return m["vfx_uri"].(string)
}

// videoFixture writes a small H.264 video (and its matte) once per test.
func videoFixture(t *testing.T, w, h, frames int) bench.FixturePaths {
	t.Helper()
	p, err := bench.WriteFixture(context.Background(), t.TempDir(), bench.FixtureOptions{Width: w, Height: h, Frames: frames})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// finish completes (or fails) a job as a worker would: outputs in the
// store, the record terminal, the finished event published.
func (e *env) finish(id string, ok bool) {
	e.t.Helper()
	ctx := context.Background()
	outs := map[string]string{}
	if ok {
		for _, n := range []string{"render", "source", "alpha"} {
			key := "jobs/" + id + "/" + n + ".png"
			if _, err := e.st.Put(ctx, key, bytes.NewReader(pngBytes(e.t, 8, 8, false)), -1, "image/png"); err != nil {
				e.t.Fatal(err)
			}
			outs[n] = key
		}
	}
	_, err := e.q.Update(ctx, id, func(r *queue.Record) error {
		r.Status = queue.StatusProcessing
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	rec, err := e.q.Update(ctx, id, func(r *queue.Record) error {
		if ok {
			r.Status, r.Outputs, r.Progress = queue.StatusCompleted, outs, 100
		} else {
			r.Status, r.ErrorCode, r.Error = queue.StatusFailed, CodeInvalidFileFormat, "source: test failure"
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.q.PublishEvent(ctx, queue.Event{JobID: id, Kind: queue.KindGeneration, Status: rec.Status}); err != nil {
		e.t.Fatal(err)
	}
}

// runBackground runs what the command's wiring runs beside a Server until
// ctx ends: the dispatcher (billing and webhooks, on dc with the Server's
// two APIs) and the credit ledger reconciler and upload sweeper.
func runBackground(ctx context.Context, srv *Server, dc dispatch.Config) error {
	dc.APIs = srv.Dispatch()
	d, err := dispatch.New(dc)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { srv.RunLedgerReconciler(ctx) })
	wg.Go(func() { srv.RunUploadSweeper(ctx) })
	err = d.Run(ctx)
	wg.Wait()
	return err
}

// settle charges or releases a finished job as the dispatcher's billing
// does for its event.
func (e *env) settle(ctx context.Context, id string) error {
	rec, _, err := e.q.Get(ctx, id)
	if err != nil {
		return err
	}
	return e.srv.Dispatch()[rec.Kind].Settle(ctx, rec)
}
