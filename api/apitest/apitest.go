// Package apitest is the test environment of the API packages (api,
// api/gen, api/product): an embedded NATS, the queue, the account service
// and a local store behind a real HTTP listener on loopback, the HTTP
// helpers the tests send requests with, and test media. It builds no API
// (the tests of package api cannot import a package that imports api):
// package apienv builds the job APIs' served Server on it, and package
// api's tests build theirs on Start.
package apitest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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

// AdminToken is the operator token the tests' API servers take.
const AdminToken = "admintoken"

// Env is what an API under test runs on.
type Env struct {
	T     *testing.T
	URL   string
	Q     *queue.Queue
	JS    jetstream.JetStream
	Acc   *account.Service
	St    *store.Local
	Admin string
	// Log logs warnings and errors into the test's log.
	Log *zap.Logger

	mu      sync.RWMutex
	handler http.Handler
	ctx     context.Context
	wg      sync.WaitGroup
}

// Main is the TestMain of the API packages' tests: FFmpeg's log quiet,
// then the tests.
func Main(m *testing.M) {
	codec.Quiet()
	os.Exit(m.Run())
}

// Options configures Start.
type Options struct {
	// StoreDir and NATSDir keep the store and the NATS data ("" is a
	// fresh folder of the test), so that a test can restart on them.
	StoreDir, NATSDir string
	// MaxPayload caps NATS messages (0: the default 1 MB).
	MaxPayload int32
}

// Start starts NATS, the queue, the account service and the HTTP listener
// (404 until Serve) with a local store signing URLs to it; everything
// stops when the test ends, the goroutines of Go first.
func Start(t *testing.T, o Options) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if o.NATSDir == "" {
		o.NATSDir = t.TempDir()
	}
	if o.StoreDir == "" {
		o.StoreDir = t.TempDir()
	}
	ns, err := queue.StartEmbedded(ctx, queue.EmbeddedConfig{StoreDir: o.NATSDir, Port: -1, MaxPayload: o.MaxPayload})
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
	e := &Env{T: t, Q: q, JS: js, Acc: acc, Admin: AdminToken, handler: http.NotFoundHandler(),
		Log: zaptest.NewLogger(t, zaptest.Level(zapcore.WarnLevel))}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.RLock()
		h := e.handler
		e.mu.RUnlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	e.URL = ts.URL
	if e.St, err = store.NewLocal(o.StoreDir, ts.URL, []byte("0123456789abcdef0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(context.Background())
	e.ctx = rctx
	t.Cleanup(func() {
		rcancel()
		e.wg.Wait()
	})
	return e
}

// Serve answers the listener's requests with h (mount the store's signed
// URLs, store.FilesPath, on h).
func (e *Env) Serve(h http.Handler) {
	e.mu.Lock()
	e.handler = h
	e.mu.Unlock()
}

// Go runs f until the test ends (f's ctx ends then; the test waits for f).
func (e *Env) Go(f func(ctx context.Context)) { e.wg.Go(func() { f(e.ctx) }) }

// StartWorkers runs a real worker (two slots, the CPU device, the
// installed model) on the queue until the test ends.
func (e *Env) StartWorkers() {
	t := e.T
	dm := &worker.Daemon{Queue: e.Q, Store: e.St, Resolver: &store.Resolver{Store: e.St, AllowHosts: []string{"127.0.0.1"}, AllowHTTP: true},
		Pipeline: &worker.Pipeline{Device: kernels.NewCPU(2), Net: modeltest.Load(t)}, Name: "test", TempDir: t.TempDir(), Preset: "ultrafast",
		ProgressInterval: 100 * time.Millisecond, Logger: zap.NewNop()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := e.Q.Consumer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.Go(func(ctx context.Context) {
		_ = cons.Run(ctx, queue.RunConfig{Slots: 2, Drain: 5 * time.Second}, dm.Handle)
	})
}

// Dispatch is the tests' dispatcher configuration (without its APIs):
// webhook attempts 50 ms apart (or after delays, when given), 2 s each,
// loopback callbacks allowed.
func (e *Env) Dispatch(delays []time.Duration) dispatch.Config {
	if delays == nil {
		delays = []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}
	}
	return dispatch.Config{Queue: e.Q, RetryDelays: delays, Timeout: 2 * time.Second, AllowPrivateNetworks: true, Logger: e.Log}
}

// PendingCount is the number of keys in the bucket (the core's
// submissions in progress, api.BucketPending).
func (e *Env) PendingCount(bucket string) int {
	e.T.Helper()
	kv, err := e.JS.KeyValue(context.Background(), bucket)
	if err != nil {
		e.T.Fatal(err)
	}
	l, err := kv.ListKeys(context.Background())
	if err != nil {
		e.T.Fatal(err)
	}
	n := 0
	for range l.Keys() {
		n++
	}
	return n
}

// RunBackground runs what the command's wiring runs beside the API
// servers until ctx ends: the dispatcher (billing and webhooks, on dc,
// whose APIs the caller fills in) and the servers' passes.
func RunBackground(ctx context.Context, dc dispatch.Config, passes ...func(context.Context)) error {
	d, err := dispatch.New(dc)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, p := range passes {
		wg.Go(func() { p(ctx) })
	}
	err = d.Run(ctx)
	wg.Wait()
	return err
}

// With returns a copy of m with the key/value pairs kv set (a nil value
// deletes the key).
func With(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// ValidGeneration is a valid body of POST /v1/vfx/generations on source src.
func ValidGeneration(src string) map[string]any {
	return map[string]any{"generation_type": "image", "source_uri": src, "alpha_mode": "fill", "prompt": "warm sunset light"}
}

// newAccount creates an account with a key of kind and returns the
// account and the key's secret.
func (e *Env) NewAccount(kind account.Kind, in account.AccountInput) (account.Account, string) {
	e.T.Helper()
	ctx := context.Background()
	if in.Email == "" {
		in.Email = "u" + rand.Text()[:8] + "@example.com"
	}
	if in.BillingType == "" {
		in.BillingType = account.BillingPostpaid
	}
	a, err := e.Acc.CreateAccount(ctx, in)
	if err != nil {
		e.T.Fatal(err)
	}
	_, secret, err := e.Acc.CreateKey(ctx, a.ID, kind)
	if err != nil {
		e.T.Fatal(err)
	}
	return a, secret
}

// orgKey is a fresh organization key (no rate limits).
func (e *Env) OrgKey() string {
	_, k := e.NewAccount(account.KindOrganization, account.AccountInput{})
	return k
}

type Resp struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r Resp) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("status %d body %q: %v", r.Status, r.Body, err)
	}
	return m
}

// code returns error.code of an envelope answer.
func (r Resp) Code() job.Code {
	var m struct {
		Error struct{ Code job.Code } `json:"error"`
	}
	_ = json.Unmarshal(r.Body, &m)
	return m.Error.Code
}

func (e *Env) Do(method, path, key string, body any, hdr ...string) Resp {
	e.T.Helper()
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
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		e.T.Fatal(err)
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return Resp{Status: res.StatusCode, Header: res.Header, Body: b}
}

func (e *Env) AdminDo(method, path string, body any) Resp {
	e.T.Helper()
	return e.Do(method, path, "", body, "Authorization", "Bearer "+e.Admin)
}

// pngBytes encodes a w x h RGB PNG (gray when gray is set).
func PNGBytes(t *testing.T, w, h int, gray bool) []byte {
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
func KeyframePNG(t *testing.T, w, h int, deep, subject bool) []byte {
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

func DataURI(mime string, b []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b)
}

// upload puts content through the uploads API and returns its vfx_uri.
func (e *Env) Upload(key, name string, content []byte) string {
	e.T.Helper()
	r := e.Do("POST", "/v1/uploads", key, map[string]any{"filename": name})
	if r.Status != 200 {
		e.T.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	m := r.JSON(e.T)
	req, _ := http.NewRequest("PUT", m["upload_url"].(string), bytes.NewReader(content))
	req.Header.Set("Content-Type", "application/octet-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		e.T.Fatalf("put upload: %d", res.StatusCode)
	}
	return m["vfx_uri"].(string)
}

// videoFixture writes a small H.264 video (and its matte) once per test.
func VideoFixture(t *testing.T, w, h, frames int) bench.FixturePaths {
	t.Helper()
	p, err := bench.WriteFixture(context.Background(), t.TempDir(), bench.FixtureOptions{Width: w, Height: h, Frames: frames})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// eventually polls cond until it holds or the timeout passes.
func Eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
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
func (e *Env) Finish(id string, ok bool) {
	e.T.Helper()
	ctx := context.Background()
	outs := map[string]string{}
	if ok {
		for _, n := range []string{"render", "source", "alpha"} {
			key := "jobs/" + id + "/" + n + ".png"
			if _, err := e.St.Put(ctx, key, bytes.NewReader(PNGBytes(e.T, 8, 8, false)), -1, "image/png"); err != nil {
				e.T.Fatal(err)
			}
			outs[n] = key
		}
	}
	_, err := e.Q.Update(ctx, id, func(r *queue.Record) error {
		r.Status = queue.StatusProcessing
		return nil
	})
	if err != nil {
		e.T.Fatal(err)
	}
	rec, err := e.Q.Update(ctx, id, func(r *queue.Record) error {
		if ok {
			r.Status, r.Outputs, r.Progress = queue.StatusCompleted, outs, 100
		} else {
			r.Status, r.ErrorCode, r.Error = queue.StatusFailed, job.CodeInvalidFileFormat, "source: test failure"
		}
		return nil
	})
	if err != nil {
		e.T.Fatal(err)
	}
	if err := e.Q.PublishEvent(ctx, queue.Event{JobID: id, Kind: queue.KindGeneration, Status: rec.Status}); err != nil {
		e.T.Fatal(err)
	}
}

// PaddedPNG is a small valid PNG grown to exactly size bytes by a private
// ancillary chunk, which decoders skip: a large input that renders fast.
func PaddedPNG(t *testing.T, size int) []byte {
	t.Helper()
	img := PNGBytes(t, 64, 48, false)
	iend := len(img) - 12
	pad := size - len(img) - 12
	if pad < 0 {
		t.Fatalf("size %d under the image's %d bytes", size, len(img))
	}
	chunk := make([]byte, 12+pad)
	binary.BigEndian.PutUint32(chunk, uint32(pad))
	copy(chunk[4:], "vfXp")
	binary.BigEndian.PutUint32(chunk[8+pad:], crc32.ChecksumIEEE(chunk[4:8+pad]))
	out := append(append(append([]byte{}, img[:iend]...), chunk...), img[iend:]...)
	if len(out) != size {
		t.Fatalf("padded png is %d bytes, want %d", len(out), size)
	}
	return out
}

// InputObjects lists the inline input objects in a local store directory.
func InputObjects(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(filepath.ToSlash(p), "/objects/") && strings.Contains(filepath.ToSlash(p), "/inputs/") {
			out = append(out, p)
		}
		return nil
	})
	return out
}
