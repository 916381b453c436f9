package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/store"
)

// BenchClients is how many clients send requests at once.
const BenchClients = 8

// BenchAdminToken is the operator token of a Bench's API.
const BenchAdminToken = "admintoken-0123456789"

// Bench is an API on a loopback listener for benchmarks: embedded NATS,
// the queue, the account service, a local store and what the caller's
// build serves and runs beside it, with one organisation key (no rate or
// concurrency limits) and no workers, so jobs stay in_queue.
type Bench struct {
	URL    string
	Key    string
	Q      *queue.Queue
	Owner  string // the key's account id
	Client *http.Client
	Source []byte // a JSON generation body with a small data: PNG source
}

// BenchInfra is what NewBench hands build.
type BenchInfra struct {
	Q   *queue.Queue
	JS  jetstream.JetStream
	Acc *account.Service
	St  *store.Local
}

// NewBench starts the infrastructure and serves what build returns (an
// API with the operator token BenchAdminToken), running background until
// the benchmark ends.
func NewBench(b *testing.B, build func(ctx context.Context, in BenchInfra) (h http.Handler, background func(context.Context))) *Bench {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns, err := queue.StartEmbedded(ctx, queue.EmbeddedConfig{StoreDir: b.TempDir(), Port: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ns.Shutdown)
	nc, err := queue.Connect(ctx, queue.ConnConfig{URL: ns.ClientURL(), Name: b.Name()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	q, err := queue.Open(ctx, nc, queue.Config{})
	if err != nil {
		b.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	acc, err := account.Open(ctx, js, account.Config{})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	st, err := store.NewLocal(b.TempDir(), base, []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		b.Fatal(err)
	}
	h, background := build(ctx, BenchInfra{Q: q, JS: js, Acc: acc, St: st})
	ts.Config.Handler = h
	ts.Start()
	b.Cleanup(ts.Close)
	rctx, rcancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { background(rctx) })
	b.Cleanup(func() { rcancel(); wg.Wait() })

	limit := 1e12
	a, err := acc.CreateAccount(ctx, account.AccountInput{Email: "bench@example.com", BillingType: account.BillingPostpaid, SpendingLimit: &limit})
	if err != nil {
		b.Fatal(err)
	}
	_, key, err := acc.CreateKey(ctx, a.ID, account.KindOrganization)
	if err != nil {
		b.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4 * BenchClients
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	b.Cleanup(tr.CloseIdleConnections)

	body, err := json.Marshal(map[string]any{"generation_type": "image", "alpha_mode": "fill", "prompt": "golden hour",
		"source_uri": DataURI("image/png", BenchPNG(b))})
	if err != nil {
		b.Fatal(err)
	}
	return &Bench{URL: ts.URL, Key: key, Q: q, Owner: a.ID, Client: client, Source: body}
}

// benchPNG is a 64x48 RGB PNG, decoded by the API's content checks on
// every submission.
func BenchPNG(b *testing.B) []byte {
	b.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for y := range 48 {
		for x := range 64 {
			img.Set(x, y, color.RGBA{R: uint8(x * 7), G: uint8(y * 5), B: 120, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// do sends one request and returns its status and body; a transport error
// fails the benchmark.
func (e *Bench) Do(b *testing.B, method, path string, body []byte) (int, []byte) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		b.Error(err)
		return 0, nil
	}
	req.Header.Set("x-api-key", e.Key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := e.Client.Do(req)
	if err != nil {
		b.Error(err)
		return 0, nil
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		b.Error(err)
	}
	return res.StatusCode, raw
}

// submit POSTs one generation and returns its id.
func (e *Bench) Submit(b *testing.B) string {
	status, raw := e.Do(b, "POST", "/v1/vfx/generations", e.Source)
	if status != http.StatusCreated {
		b.Errorf("POST: %d %s", status, raw)
		return ""
	}
	var j struct{ ID string }
	if err := json.Unmarshal(raw, &j); err != nil {
		b.Error(err)
	}
	return j.ID
}

// get reads one generation; it must be in_queue (no workers run).
func (e *Bench) Get(b *testing.B, id string) {
	status, raw := e.Do(b, "GET", "/v1/vfx/generations/"+id, nil)
	if status != http.StatusOK || !bytes.Contains(raw, []byte(`"in_queue"`)) {
		b.Errorf("GET %s: %d %s", id, status, raw)
	}
}

// latencies collects per-request durations from concurrent clients.
type Latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *Latencies) Add(d []time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d...)
	l.mu.Unlock()
}

// report sets "<prefix>p50-ms" and "<prefix>p99-ms" from the recorded
// durations (nearest rank).
func (l *Latencies) Report(b *testing.B, prefix string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	q := func(p float64) float64 {
		i := int(p*float64(len(l.d))+0.5) - 1
		i = max(0, min(i, len(l.d)-1))
		return float64(l.d[i]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(0.50), prefix+"p50-ms")
	b.ReportMetric(q(0.99), prefix+"p99-ms")
}

// parallel runs b.N operations from a fixed pool of benchClients
// goroutines (each a client with its own connection), timing each call of
// op, and reports the throughput as unit and the latency percentiles.
// Timings are reported, never judged.
func Parallel(b *testing.B, unit string, op func(i int64)) {
	b.Helper()
	var lat Latencies
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range BenchClients {
		wg.Go(func() {
			local := make([]time.Duration, 0, b.N/BenchClients+1)
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				t0 := time.Now()
				op(i)
				local = append(local, time.Since(t0))
			}
			lat.Add(local)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), unit)
	lat.Report(b, "")
}
