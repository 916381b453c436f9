package worker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/infer"
	"github.com/vfxrender/vfx/internal/modeltest"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/store"
)

// testQueueConfig is shared by the test process and the worker processes
// (whose flags say the same: see farmArgs). AckWait and MaxDeliver are
// consumer settings on the server, so every party must agree on them.
func testQueueConfig() queue.Config {
	return queue.Config{
		AckWait:        3 * time.Second,
		MaxDeliver:     5,
		RetryDelays:    []time.Duration{300 * time.Millisecond, 600 * time.Millisecond, time.Second},
		MaxJobDuration: 2 * time.Minute,
		PollWait:       250 * time.Millisecond,
	}
}

// qenv is an embedded NATS server with the queue opened on it.
type qenv struct {
	url string
	nc  *nats.Conn
	js  jetstream.JetStream
	q   *queue.Queue
}

func startQueue(t *testing.T) *qenv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := queue.StartEmbedded(ctx, queue.EmbeddedConfig{StoreDir: t.TempDir(), Port: -1})
	if err != nil {
		t.Fatalf("start nats: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := queue.Connect(ctx, queue.ConnConfig{URL: srv.ClientURL(), Name: t.Name()})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	q, err := queue.Open(ctx, nc, testQueueConfig())
	if err != nil {
		t.Fatalf("open queue: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return &qenv{url: srv.ClientURL(), nc: nc, js: js, q: q}
}

func tctx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond every 50 ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s (last: %s)", timeout, what, detail)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *qenv) submit(t *testing.T, id string, jr any) {
	t.Helper()
	raw, err := json.Marshal(jr)
	if err != nil {
		t.Fatal(err)
	}
	var seed uint32
	if r, ok := jr.(job.JobRequest); ok {
		seed = r.Seed
	}
	_, created, err := e.q.Submit(tctx(t, 10*time.Second), queue.Record{ID: id, Kind: queue.KindGeneration, Owner: "acct_test", Request: raw, Seed: seed})
	if err != nil || !created {
		t.Fatalf("submit %s: created %v, %v", id, created, err)
	}
}

func (e *qenv) record(t *testing.T, id string) queue.Record {
	t.Helper()
	rec, _, err := e.q.Get(tctx(t, 10*time.Second), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return rec
}

// waitStatus waits until the record of id is in a terminal state and
// returns it.
func (e *qenv) waitTerminal(t *testing.T, id string, timeout time.Duration) queue.Record {
	t.Helper()
	var rec queue.Record
	eventually(t, timeout, id+" terminal", func() (bool, string) {
		rec = e.record(t, id)
		return rec.Status.Terminal(), fmt.Sprintf("%s progress %d attempt %d worker %s last error %q", rec.Status, rec.Progress, rec.Attempt, rec.Worker, rec.LastError)
	})
	return rec
}

// streamMsgs is the number of messages stored in a stream now.
func (e *qenv) streamMsgs(t *testing.T, name string) (msgs, lastSeq uint64) {
	t.Helper()
	s, err := e.js.Stream(tctx(t, 10*time.Second), name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	info, err := s.Info(tctx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	return info.State.Msgs, info.State.LastSeq
}

// events reads every event stored in VFX_EVENTS through a fresh durable of
// queue.Events and counts those of job id by status.
func (e *qenv) events(t *testing.T, id string) map[queue.Status]int {
	t.Helper()
	n, _ := e.streamMsgs(t, queue.StreamEvents)
	ctx := tctx(t, 30*time.Second)
	ec, err := e.q.Events(ctx, fmt.Sprintf("count-%d", time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	got := map[queue.Status]int{}
	for i := uint64(0); i < n; i++ {
		ed, err := ec.Next(ctx)
		if err != nil {
			t.Fatalf("event %d of %d: %v", i+1, n, err)
		}
		if ed.Event.JobID == id {
			got[ed.Event.Status]++
		}
	}
	return got
}

// deadLetter returns the DLQ entry of job id, or ok=false.
func (e *qenv) deadLetter(t *testing.T, id string) (queue.DeadLetter, bool) {
	t.Helper()
	n, last := e.streamMsgs(t, queue.StreamDLQ)
	if n == 0 {
		return queue.DeadLetter{}, false
	}
	s, err := e.js.Stream(tctx(t, 10*time.Second), queue.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= last; seq++ {
		m, err := s.GetMsg(tctx(t, 10*time.Second), seq)
		if err != nil {
			continue
		}
		var dl queue.DeadLetter
		if json.Unmarshal(m.Data, &dl) == nil && dl.JobID == id {
			return dl, true
		}
	}
	return queue.DeadLetter{}, false
}

// localStore is a local-directory store for in-process tests.
func localStore(t *testing.T) *store.Local {
	t.Helper()
	st, err := store.NewLocal(t.TempDir(), "", []byte("test-secret-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// putFile uploads a local file as vfx://uploads/{new id}/{name}.
func putFile(t *testing.T, st store.Store, path, name string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	id := store.NewUploadID()
	if _, err := st.Put(tctx(t, 30*time.Second), store.UploadKey(id, name), f, fi.Size(), ""); err != nil {
		t.Fatalf("upload %s: %v", name, err)
	}
	return store.UploadURI(id, name)
}

// runDaemon works jobs in this process until the test ends.
func runDaemon(t *testing.T, e *qenv, st store.Store, res *store.Resolver) *Daemon {
	t.Helper()
	return runDaemonWith(t, e, st, res, &Pipeline{Device: kernels.NewCPU(2)})
}

// runDaemonWith is runDaemon with the pipeline p.
func runDaemonWith(t *testing.T, e *qenv, st store.Store, res *store.Resolver, p *Pipeline) *Daemon {
	t.Helper()
	dm := &Daemon{
		Queue:            e.q,
		Store:            st,
		Resolver:         res,
		Pipeline:         p,
		Name:             "inproc",
		TempDir:          t.TempDir(),
		Preset:           "ultrafast",
		ProgressInterval: 100 * time.Millisecond,
		Logger:           zaptest.NewLogger(t, zaptest.Level(zapcore.WarnLevel)),
	}
	startDaemon(t, e, dm, 2)
	return dm
}

// startDaemon runs dm's consumer with slots until the test ends.
func startDaemon(t *testing.T, e *qenv, dm *Daemon, slots int) {
	t.Helper()
	cons, err := e.q.Consumer(tctx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := cons.Run(ctx, queue.RunConfig{Slots: slots, Drain: 10 * time.Second, Logger: zap.NewNop()}, dm.Handle); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// TestFetchErrorClassification: which resolver errors are permanent (and
// with which code) and which are retried.
func TestFetchErrorClassification(t *testing.T) {
	wrapped := func(sentinel error) error { return fmt.Errorf("store: something: %w", sentinel) }
	cases := []struct {
		name      string
		err       error
		permanent bool
		prefix    string // start of the error text
	}{
		{"invalid uri", wrapped(store.ErrInvalidURI), true, "INVALID_URI: source: "},
		{"invalid key", wrapped(store.ErrInvalidKey), true, "INVALID_URI: source: "},
		{"forbidden address", wrapped(store.ErrForbiddenAddress), true, "INVALID_URI: source: "},
		{"mime mismatch", wrapped(store.ErrMIMEMismatch), true, "INVALID_FILE_FORMAT: source: "},
		{"too large", wrapped(store.ErrTooLarge), true, "SOURCE_TOO_LARGE: source: "},
		{"upload missing", wrapped(store.ErrNotFound), true, "SOURCE_UNREACHABLE: source: "},
		{"http 404", &store.StatusError{URL: "https://x.test/a.png", StatusCode: 404}, true, "SOURCE_UNREACHABLE: source: "},
		{"http 410", &store.StatusError{URL: "https://x.test/a.png", StatusCode: 410}, true, "SOURCE_UNREACHABLE: source: "},
		{"http 503", &store.StatusError{URL: "https://x.test/a.png", StatusCode: 503}, false, "SOURCE_UNREACHABLE: source: "},
		{"http 429", &store.StatusError{URL: "https://x.test/a.png", StatusCode: 429}, false, "SOURCE_UNREACHABLE: source: "},
		{"http 408", &store.StatusError{URL: "https://x.test/a.png", StatusCode: 408}, false, "SOURCE_UNREACHABLE: source: "},
		{"fetch timeout", fmt.Errorf("store: fetch timed out: %w: %w", store.ErrUnreachable, context.DeadlineExceeded), false, "SOURCE_UNREACHABLE: source: "},
		{"connection refused", fmt.Errorf("store: fetch: %w: dial tcp: connection refused", store.ErrUnreachable), false, "SOURCE_UNREACHABLE: source: "},
		{"s3 down", errors.New("store: open uploads/x/a.mp4: dial tcp 127.0.0.1:9000: connect: connection refused"), false, "worker: fetch source: "},
		{"bucket missing", wrapped(store.ErrBucketNotFound), false, "worker: fetch source: "},
		{"cancelled", fmt.Errorf("store: open: %w", context.Canceled), false, "worker: fetch source: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := fetchError("source", c.err)
			if permanent(got) != c.permanent {
				t.Errorf("permanent = %v, want %v (%v)", permanent(got), c.permanent, got)
			}
			if !strings.HasPrefix(got.Error(), c.prefix) {
				t.Errorf("error %q, want prefix %q", got, c.prefix)
			}
			if !errors.Is(got, c.err) {
				t.Errorf("%v does not wrap the cause", got)
			}
		})
	}
	// Handle's own rule: input errors and queue.Permanent are permanent.
	if !permanent(queue.Permanent(errors.New("x"))) || !permanent(inputErr(job.CodeInvalidInput, "x")) || permanent(errors.New("x")) {
		t.Error("permanent(): wrong rule")
	}
}

// TestDaemonErrorClassification runs jobs with bad inputs through a real
// queue and the daemon in this process: each fails at once with its code
// at the start of the record's error, a DLQ entry and a failed event,
// after one attempt; a source answering 503 is retried instead.
func TestDaemonErrorClassification(t *testing.T) {
	e := startQueue(t)
	st := localStore(t)
	var hits503 atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/busy.png":
			hits503.Add(1)
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	res := &store.Resolver{Store: st, AllowHTTP: true, AllowHosts: []string{"127.0.0.1"}, MaxDataBytes: 1024}
	runDaemon(t, e, st, res)

	text := filepath.Join(t.TempDir(), "notes.png")
	if err := os.WriteFile(text, []byte("this is not an image, whatever its name says\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	textURI := putFile(t, st, text, "notes.png")
	notPNG := "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("GIF89a, not a png"))
	huge := "data:image/png;base64," + strings.Repeat("A", 4096)
	img := func(src string) job.JobRequest {
		return job.JobRequest{GenerationType: "image", SourceURI: src, AlphaMode: "fill", Prompt: "soft light", Seed: 1}
	}
	cases := []struct {
		id   string
		req  any
		code job.Code
	}{
		{"bad-uri", img("ftp://example.com/a.png"), job.CodeInvalidURI},
		{"forbidden", img("https://10.0.0.1/a.png"), job.CodeInvalidURI},
		{"mime", img(notPNG), job.CodeInvalidFileFormat},
		{"text-as-png", img(textURI), job.CodeInvalidFileFormat},
		{"no-upload", img(store.UploadURI("upload_doesnotexist1", "a.png")), job.CodeSourceUnreachable},
		{"http-404", img(srv.URL + "/gone.png"), job.CodeSourceUnreachable},
		{"too-large", img(huge), job.CodeSourceTooLarge},
		{"bad-json", map[string]any{"generation_type": 5}, job.CodeInvalidInput},
		{"bad-type", job.JobRequest{GenerationType: "gif", SourceURI: textURI, AlphaMode: "fill", Prompt: "x"}, job.CodeInvalidGenerationType},
		{"no-style", job.JobRequest{GenerationType: "image", SourceURI: textURI, AlphaMode: "fill"}, job.CodeMissingStyleInput},
		{"no-alpha", job.JobRequest{GenerationType: "image", SourceURI: textURI, AlphaMode: "custom", Prompt: "x"}, job.CodeMissingAlpha},
		{"select", job.JobRequest{GenerationType: "image", SourceURI: textURI, AlphaMode: "select", AlphaURI: textURI, Prompt: "x"}, job.CodeInvalidFileFormat},
		{"bad-mode", job.JobRequest{GenerationType: "image", SourceURI: textURI, AlphaMode: "magic", Prompt: "x"}, job.CodeInvalidAlphaMode},
		{"resolution", job.JobRequest{GenerationType: "image", SourceURI: textURI, AlphaMode: "fill", Prompt: "x", MaxResolution: 480}, job.CodeInvalidMaxResolution},
	}
	for _, c := range cases {
		e.submit(t, c.id, c.req)
	}
	e.submit(t, "busy", img(srv.URL+"/busy.png"))

	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			rec := e.waitTerminal(t, c.id, 30*time.Second)
			// The code is the record's field, not a prefix of its error.
			if rec.Status != queue.StatusFailed || rec.ErrorCode != c.code || rec.Error == "" || strings.HasPrefix(rec.Error, string(c.code)+": ") {
				t.Errorf("status %s error %q code %q, want failed with %s", rec.Status, rec.Error, rec.ErrorCode, c.code)
			}
			if rec.Attempt != 1 || rec.LastError != "" {
				t.Errorf("attempt %d last error %q: want one attempt, no retry", rec.Attempt, rec.LastError)
			}
			eventually(t, 10*time.Second, "dead letter", func() (bool, string) {
				dl, ok := e.deadLetter(t, c.id)
				return ok && dl.Reason == job.FailureText(rec.ErrorCode, rec.Error), fmt.Sprintf("%+v", dl)
			})
			eventually(t, 10*time.Second, "failed event", func() (bool, string) {
				ev := e.events(t, c.id)
				return ev[queue.StatusFailed] == 1, fmt.Sprint(ev)
			})
		})
	}

	// The 503 is transient: retried with the code in LastError, never failed.
	eventually(t, 30*time.Second, "busy retried", func() (bool, string) {
		rec := e.record(t, "busy")
		return rec.Attempt >= 3 && strings.HasPrefix(rec.LastError, "SOURCE_UNREACHABLE: source: ") && !rec.Status.Terminal(),
			fmt.Sprintf("%s attempt %d last error %q hits %d", rec.Status, rec.Attempt, rec.LastError, hits503.Load())
	})
	if _, ok := e.deadLetter(t, "busy"); ok {
		t.Error("a transient failure was dead-lettered")
	}
	if msgs, _ := e.streamMsgs(t, queue.StreamJobs); msgs != 1 {
		t.Errorf("VFX_JOBS holds %d messages, want only the retried job's", msgs)
	}
}

// TestDaemonCompletesInProcess: a video and an image job through the
// queue and a local store: records completed with progress 100 and the
// output keys, objects typed, one completed event each, progress reported
// on the way.
func TestDaemonCompletesInProcess(t *testing.T) {
	e := startQueue(t)
	st := localStore(t)
	fx := fixture(t, 64, 48, 24)
	src := putFile(t, st, fx.Source, "clip.mp4")
	mat := putFile(t, st, fx.Matte, "matte.mp4")
	ref, err := os.ReadFile(fx.Reference)
	if err != nil {
		t.Fatal(err)
	}
	still := putFile(t, st, fx.Still, "still.png")
	runDaemon(t, e, st, nil)

	e.submit(t, "vid", job.JobRequest{GenerationType: "video", SourceURI: src, AlphaMode: "custom", AlphaURI: mat,
		ReferenceImageURI: "data:image/png;base64," + base64.StdEncoding.EncodeToString(ref), Prompt: "rim light", Seed: 9, MaxResolution: 720})
	e.submit(t, "img", job.JobRequest{GenerationType: "image", SourceURI: still, AlphaMode: "fill", AlphaURI: "ignored://for-fill", Prompt: "noon", Seed: 2})

	for _, c := range []struct {
		id, ext, ct string
		frames      int
	}{{"vid", "mp4", "video/mp4", 24}, {"img", "png", "image/png", 1}} {
		rec := e.waitTerminal(t, c.id, 60*time.Second)
		if rec.Status != queue.StatusCompleted || rec.Progress != 100 || rec.Worker != "inproc" || rec.Attempt != 1 || rec.CompletedAt == nil {
			t.Fatalf("%s: record %+v", c.id, rec)
		}
		for _, name := range []string{job.OutputRender, job.OutputSource, job.OutputAlpha} {
			key := "jobs/" + c.id + "/" + name + "." + c.ext
			if rec.Outputs[name] != key {
				t.Errorf("%s: output %s = %q, want %q", c.id, name, rec.Outputs[name], key)
			}
			obj, err := st.Stat(tctx(t, 5*time.Second), key)
			if err != nil || obj.ContentType != c.ct || obj.Size == 0 {
				t.Errorf("%s: %s: %+v %v", c.id, key, obj, err)
			}
		}
		eventually(t, 10*time.Second, "message acked", func() (bool, string) {
			n, _ := e.streamMsgs(t, queue.StreamJobs)
			return n == 0, fmt.Sprint(n, " messages")
		})
		if ev := e.events(t, c.id); ev[queue.StatusCompleted] != 1 || len(ev) != 1 {
			t.Errorf("%s: events %v, want one completed", c.id, ev)
		}
	}
}

// TestDaemonMatteProgress: a select job's record (what GET answers as
// progress) moves during the matte pass, before the render frames (which
// start at 85 %), and never goes back. The network runs at 256x256 here,
// to keep the test short.
func TestDaemonMatteProgress(t *testing.T) {
	modeltest.Load(t) // skips where the model is not installed
	rt, err := infer.Open(infer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	card, err := infer.ISNetIMGLY().At(256)
	if err != nil {
		t.Fatal(err)
	}
	net, err := rt.Load(tctx(t, time.Minute), card)
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	c := bench.MatteSuite(128, 72, 24)[0]
	fx, err := bench.WriteMatteCase(context.Background(), t.TempDir(), c, 0)
	if err != nil {
		t.Fatal(err)
	}
	e := startQueue(t)
	st := localStore(t)
	src, key := putFile(t, st, fx.Source, "clip.mp4"), putFile(t, st, fx.Keyframes[0], "key.png")
	runDaemonWith(t, e, st, nil, &Pipeline{Device: kernels.NewCPU(2), Net: net}) // progress written every 100 ms
	e.submit(t, "sel", job.JobRequest{GenerationType: "video", SourceURI: src, AlphaMode: "select", AlphaURI: key, Prompt: "rim light", Seed: 3})
	var seen []int
	deadline := time.Now().Add(2 * time.Minute)
	for {
		rec := e.record(t, "sel")
		if len(seen) == 0 || rec.Progress != seen[len(seen)-1] {
			seen = append(seen, rec.Progress)
		}
		if rec.Status.Terminal() {
			if rec.Status != queue.StatusCompleted {
				t.Fatalf("record %+v", rec)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not done; progress seen %v", seen)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("progress seen: %v", seen)
	inMatte := 0
	for i, p := range seen {
		if p > 0 && p < int(100*(MatteDecodeShare+MatteMakeShare)) {
			inMatte++
		}
		if i > 0 && p < seen[i-1] {
			t.Errorf("progress went back: %v", seen)
		}
	}
	if inMatte < 2 || seen[len(seen)-1] != 100 {
		t.Errorf("progress seen %v: want at least two values of the matte pass (between 0 and 85) and 100 at the end", seen)
	}
}
