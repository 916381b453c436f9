package worker

// Farm tests: `vfx worker` processes built from this repository, an
// embedded NATS server and a real MinIO server, with faults injected by
// signals and by stopping MinIO.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/internal/proctest"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/store"
	"github.com/vfxrender/vfx/store/storetest"
)

const (
	farmBucket  = "vfx-farm"
	farmTimeout = 90 * time.Second
	// longFrames is the length of the long job: at 640x360 with preset
	// slow it takes a few seconds on two cores, long enough to interrupt.
	longFrames = 200
)

// farmShared is built once per test binary and removed by TestMain.
var farmShared struct {
	once sync.Once
	dir  string
	bin  string
	long bench.FixturePaths
	err  error
}

func removeFarmShared() {
	if farmShared.dir != "" {
		_ = os.RemoveAll(farmShared.dir)
	}
}

// farmAssets builds the vfx binary (go build ./cmd/vfx) and writes the long
// fixture, once.
func farmAssets(t *testing.T) (bin string, long bench.FixturePaths) {
	t.Helper()
	farmShared.once.Do(func() {
		dir, err := os.MkdirTemp("", "vfx-farm-test-")
		if err != nil {
			farmShared.err = err
			return
		}
		farmShared.dir = dir
		goBin, err := exec.LookPath("go")
		if err != nil {
			//lint:ignore SA1019 a test binary runs on the machine that built it, so its GOROOT is meaningful here
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
			if _, serr := os.Stat(goBin); serr != nil {
				farmShared.err = fmt.Errorf("go command not found: %w", err)
				return
			}
		}
		bin := filepath.Join(dir, "vfx")
		cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/vfx")
		cmd.Dir = ".." // the module root (tests run in worker/)
		if out, err := cmd.CombinedOutput(); err != nil {
			farmShared.err = fmt.Errorf("go build ./cmd/vfx: %v\n%s", err, out)
			return
		}
		farmShared.bin = bin
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		farmShared.long, farmShared.err = bench.WriteFixture(ctx, filepath.Join(dir, "long"),
			bench.FixtureOptions{Width: 640, Height: 360, Frames: longFrames, Seed: 5})
	})
	if farmShared.err != nil {
		t.Fatalf("farm assets: %v", farmShared.err)
	}
	return farmShared.bin, farmShared.long
}

// farm is one test's NATS, MinIO and worker processes.
type farm struct {
	*qenv
	bin                   string
	long                  bench.FixturePaths
	endpoint, access, sec string
	s3                    *store.S3
	stopMinIO, restart    func()
}

func newFarm(t *testing.T) *farm {
	t.Helper()
	if testing.Short() {
		t.Skip("farm test: starts MinIO and vfx worker processes; run without -short")
	}
	endpoint, access, secret, stop, restart := storetest.StartMinIO(t)
	bin, long := farmAssets(t)
	f := &farm{qenv: startQueue(t), bin: bin, long: long, endpoint: endpoint, access: access, sec: secret, stopMinIO: stop, restart: restart}
	var err error
	f.s3, err = store.NewS3(tctx(t, 30*time.Second), store.S3Config{Endpoint: endpoint, Bucket: farmBucket, AccessKey: access, SecretKey: secret, CreateBucket: true})
	if err != nil {
		t.Fatalf("s3: %v", err)
	}
	return f
}

// workerProc is one `vfx worker` process.
type workerProc = proctest.Proc

// startWorker starts `vfx worker` against the farm with the test queue
// configuration (see testQueueConfig); extra flags override the defaults.
func (f *farm) startWorker(t *testing.T, name string, extra ...string) *workerProc {
	t.Helper()
	cfg := testQueueConfig()
	delays := make([]string, len(cfg.RetryDelays))
	for i, d := range cfg.RetryDelays {
		delays[i] = d.String()
	}
	args := []string{"worker",
		"--nats-url", f.url, "--store", "s3",
		"--s3-endpoint", f.endpoint, "--s3-bucket", farmBucket, "--s3-access-key", f.access,
		"--name", name, "--http-addr", "127.0.0.1:0", "--temp-dir", t.TempDir(),
		"--ack-wait", cfg.AckWait.String(), "--max-deliver", fmt.Sprint(cfg.MaxDeliver),
		"--retry-delays", strings.Join(delays, ","), "--max-job-duration", cfg.MaxJobDuration.String(),
		"--preset", "ultrafast", "--cpu-workers", "2",
	}
	return proctest.Start(t, "worker "+name, f.bin, append(args, extra...), []string{"VFX_S3_SECRET_KEY=" + f.sec}, proctest.Options{Tail: 6000})
}

// httpAddr waits for the worker's "http listening" line and returns the
// address.
func httpAddr(t *testing.T, p *workerProc) string {
	t.Helper()
	var addr string
	eventually(t, 30*time.Second, p.Name+" http address", func() (bool, string) {
		if l := p.Out.Lines("http listening"); len(l) > 0 {
			addr, _ = l[0]["addr"].(string)
		}
		return addr != "", "no line yet"
	})
	return addr
}

// get fetches http://addr/path and returns the status and body.
func httpGet(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(tctx(t, 10*time.Second), http.MethodGet, "http://"+addr+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// upload puts a local file into MinIO as an upload and returns its URI.
func (f *farm) upload(t *testing.T, path, name string) string {
	t.Helper()
	return putFile(t, f.s3, path, name)
}

// longJob uploads the long fixture and submits a video job on it.
func (f *farm) longJob(t *testing.T, id string) {
	t.Helper()
	src := f.upload(t, f.long.Source, "long.mp4")
	mat := f.upload(t, f.long.Matte, "long_matte.mp4")
	f.submit(t, id, job.JobRequest{GenerationType: "video", SourceURI: src, AlphaMode: "custom", AlphaURI: mat,
		Prompt: "warm key light from the left, blue rim", Seed: 11, MaxResolution: 720})
}

// waitRendering waits until worker name is rendering job id (progress
// above 0 and below 100), so that a fault lands mid-job.
func (f *farm) waitRendering(t *testing.T, id, name string) queue.Record {
	t.Helper()
	var rec queue.Record
	eventually(t, farmTimeout, id+" mid-render on "+name, func() (bool, string) {
		rec = f.record(t, id)
		if rec.Status.Terminal() {
			t.Fatalf("job %s finished (%s) before the fault could be injected: make the long job longer", id, rec.Status)
		}
		return rec.Status == queue.StatusProcessing && rec.Worker == name && rec.Progress > 0 && rec.Progress < 100,
			fmt.Sprintf("%s worker %q progress %d", rec.Status, rec.Worker, rec.Progress)
	})
	return rec
}

// checkOutputs downloads the three outputs of a completed video job and
// decodes them.
func (f *farm) checkOutputs(t *testing.T, rec queue.Record, ext, ct string, frames int) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{job.OutputRender, job.OutputSource, job.OutputAlpha} {
		key := "jobs/" + rec.ID + "/" + name + "." + ext
		if rec.Outputs[name] != key {
			t.Errorf("output %s = %q, want %q", name, rec.Outputs[name], key)
			continue
		}
		rc, obj, err := f.s3.Open(tctx(t, 30*time.Second), key)
		if err != nil {
			t.Errorf("open %s: %v", key, err)
			continue
		}
		if obj.ContentType != ct {
			t.Errorf("%s: content type %q, want %q", key, obj.ContentType, ct)
		}
		path := filepath.Join(dir, name+"."+ext)
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || os.WriteFile(path, b, 0o644) != nil {
			t.Fatalf("download %s: %v", key, err)
		}
		format := frame.YUV420P
		if ext == "png" {
			format = frame.RGB24
		}
		if _, got := decodeAll(t, path, format); len(got) != frames {
			t.Errorf("%s: %d frames, want %d", key, len(got), frames)
		}
	}
}

// waitAcked waits until VFX_JOBS is empty: every job message was acked or
// terminated (the finished event is published before the ack).
func (f *farm) waitAcked(t *testing.T) {
	t.Helper()
	eventually(t, 30*time.Second, "VFX_JOBS empty", func() (bool, string) {
		n, _ := f.streamMsgs(t, queue.StreamJobs)
		return n == 0, fmt.Sprint(n, " messages")
	})
}

// TestFarmPublishComplete: a worker process with two slots completes a
// video job and an image job; the three outputs of each are in MinIO with
// the right content types and decode with the right frame counts; /healthz,
// /readyz and /metrics answer.
func TestFarmPublishComplete(t *testing.T) {
	t.Parallel()
	f := newFarm(t)
	fx := fixture(t, 64, 48, 24)
	src := f.upload(t, fx.Source, "clip.mp4")
	mat := f.upload(t, fx.Matte, "clip_matte.mp4")
	still := f.upload(t, fx.Still, "still.png")
	stillMatte := f.upload(t, fx.StillMatte, "still_matte.png")
	ref := f.upload(t, fx.Reference, "reference.png")

	w := f.startWorker(t, "w-complete", "--concurrency", "2")
	f.submit(t, "job-video", job.JobRequest{GenerationType: "video", SourceURI: src, AlphaMode: "custom", AlphaURI: mat,
		ReferenceImageURI: ref, Prompt: "golden hour", Seed: 3, MaxResolution: 720})
	f.submit(t, "job-image", job.JobRequest{GenerationType: "image", SourceURI: still, AlphaMode: "custom", AlphaURI: stillMatte,
		Prompt: "studio, soft key light", Seed: 4})

	for _, c := range []struct {
		id, ext, ct string
		frames      int
	}{{"job-video", "mp4", "video/mp4", 24}, {"job-image", "png", "image/png", 1}} {
		rec := f.waitTerminal(t, c.id, farmTimeout)
		if rec.Status != queue.StatusCompleted || rec.Progress != 100 || rec.Worker != "w-complete" || rec.Attempt != 1 || rec.Error != "" {
			t.Fatalf("%s: %+v", c.id, rec)
		}
		f.checkOutputs(t, rec, c.ext, c.ct, c.frames)
	}
	f.waitAcked(t)
	for _, id := range []string{"job-video", "job-image"} {
		if ev := f.events(t, id); ev[queue.StatusCompleted] != 1 || len(ev) != 1 {
			t.Errorf("%s: events %v, want one completed", id, ev)
		}
	}

	addr := httpAddr(t, w)
	if code, _ := httpGet(t, addr, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	if code, body := httpGet(t, addr, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz: %d %s", code, body)
	}
	code, metrics := httpGet(t, addr, "/metrics")
	for _, want := range []string{
		`vfx_worker_jobs_total{outcome="completed"} 2`,
		`vfx_worker_jobs_in_flight 0`,
		`vfx_worker_queue_wait_seconds_count 2`,
		`vfx_worker_render_seconds_count 2`,
		`vfx_worker_frames_per_second_count 2`,
		`vfx_worker_frames_total 25`,
		`vfx_worker_redeliveries_total 0`,
	} {
		if code != http.StatusOK || !strings.Contains(metrics, want) {
			t.Errorf("/metrics (%d) lacks %q", code, want)
		}
	}
	// Job log lines carry the job fields.
	done := w.Out.Lines("job completed")
	if len(done) != 2 {
		t.Fatalf("%d 'job completed' log lines, want 2", len(done))
	}
	for _, l := range done {
		if l["job_id"] == nil || l["attempt"] != 1.0 || l["worker"] != "w-complete" {
			t.Errorf("log line lacks job fields: %v", l)
		}
	}

	w.Signal(t, syscall.SIGTERM)
	if code := w.Wait(t, 30*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
}

// TestFarmSIGKILLRedelivered: a worker killed mid-job stops heartbeating;
// after AckWait the job goes to a second worker, which completes it. The
// record completes once, with attempt 2, and one completed event exists.
func TestFarmSIGKILLRedelivered(t *testing.T) {
	t.Parallel()
	f := newFarm(t)
	f.longJob(t, "job-kill")
	w1 := f.startWorker(t, "w-doomed", "--preset", "slow")
	f.waitRendering(t, "job-kill", "w-doomed")
	w1.Signal(t, syscall.SIGKILL)
	w1.Wait(t, 10*time.Second)

	f.startWorker(t, "w-rescue")
	rec := f.waitTerminal(t, "job-kill", farmTimeout)
	if rec.Status != queue.StatusCompleted || rec.Worker != "w-rescue" || rec.Attempt < 2 || rec.Progress != 100 {
		t.Fatalf("record %+v: want completed by w-rescue on attempt ≥ 2", rec)
	}
	f.checkOutputs(t, rec, "mp4", "video/mp4", longFrames)
	f.waitAcked(t)
	if ev := f.events(t, "job-kill"); ev[queue.StatusCompleted] != 1 || len(ev) != 1 {
		t.Errorf("events %v, want exactly one completed", ev)
	}
	if _, ok := f.deadLetter(t, "job-kill"); ok {
		t.Error("the redelivered job was dead-lettered")
	}
}

// TestFarmBadInput: a text file uploaded as a .png fails at once: record
// failed with INVALID_FILE_FORMAT, a DLQ entry, one attempt, no retry, a
// failed event, and the job message gone.
func TestFarmBadInput(t *testing.T) {
	t.Parallel()
	f := newFarm(t)
	text := filepath.Join(t.TempDir(), "photo.png")
	if err := os.WriteFile(text, []byte("definitely not a PNG file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := f.upload(t, text, "photo.png")
	w := f.startWorker(t, "w-bad")
	f.submit(t, "job-bad", job.JobRequest{GenerationType: "image", SourceURI: src, AlphaMode: "fill", Prompt: "noon", Seed: 1})

	rec := f.waitTerminal(t, "job-bad", farmTimeout)
	if rec.Status != queue.StatusFailed || rec.ErrorCode != job.CodeInvalidFileFormat || !strings.HasPrefix(rec.Error, "source: ") {
		t.Fatalf("record %s %q %q: want failed with INVALID_FILE_FORMAT", rec.Status, rec.ErrorCode, rec.Error)
	}
	if rec.Attempt != 1 || rec.LastError != "" || len(rec.Outputs) != 0 {
		t.Errorf("attempt %d, last error %q, outputs %v: want one attempt and nothing else", rec.Attempt, rec.LastError, rec.Outputs)
	}
	f.waitAcked(t)
	dl, ok := f.deadLetter(t, "job-bad")
	if !ok || dl.Reason != job.FailureText(rec.ErrorCode, rec.Error) || dl.Attempts != 1 {
		t.Errorf("dead letter %+v (found %v)", dl, ok)
	}
	// The failed event is published after the record and the ack
	// (Daemon.fail): wait for it.
	eventually(t, 10*time.Second, "one failed event", func() (bool, string) {
		ev := f.events(t, "job-bad")
		return ev[queue.StatusFailed] == 1 && len(ev) == 1, fmt.Sprint(ev)
	})
	code, metrics := httpGet(t, httpAddr(t, w), "/metrics")
	if code != http.StatusOK || !strings.Contains(metrics, `vfx_worker_jobs_total{outcome="failed"} 1`) ||
		!strings.Contains(metrics, `vfx_worker_jobs_total{outcome="retried"} 0`) {
		t.Errorf("metrics do not show one failed job and no retry")
	}
}

// TestFarmMinIOOutage: MinIO stops while a job renders; the upload fails,
// the job is retried (LastError recorded), MinIO comes back, and the job
// completes on a later attempt with its outputs in MinIO.
func TestFarmMinIOOutage(t *testing.T) {
	t.Parallel()
	f := newFarm(t)
	f.longJob(t, "job-outage")
	f.startWorker(t, "w-outage", "--preset", "slow")
	f.waitRendering(t, "job-outage", "w-outage")
	f.stopMinIO()
	eventually(t, farmTimeout, "a failed attempt", func() (bool, string) {
		rec := f.record(t, "job-outage")
		if rec.Status.Terminal() {
			t.Fatalf("job finished (%s, %q) while MinIO was down", rec.Status, rec.Error)
		}
		return rec.LastError != "", fmt.Sprintf("attempt %d progress %d", rec.Attempt, rec.Progress)
	})
	f.restart()
	rec := f.waitTerminal(t, "job-outage", farmTimeout)
	if rec.Status != queue.StatusCompleted || rec.Attempt < 2 {
		t.Fatalf("record %+v: want completed after a retry", rec)
	}
	t.Logf("completed on attempt %d; last error of a failed attempt: %s", rec.Attempt, rec.LastError)
	f.checkOutputs(t, rec, "mp4", "video/mp4", longFrames)
	f.waitAcked(t)
	if ev := f.events(t, "job-outage"); ev[queue.StatusCompleted] != 1 || len(ev) != 1 {
		t.Errorf("events %v, want one completed", ev)
	}
}

// TestFarmSIGTERMDrainFinishes: SIGTERM while a job renders: the worker
// pulls nothing more, finishes the job within --drain-timeout, and exits 0.
func TestFarmSIGTERMDrainFinishes(t *testing.T) {
	t.Parallel()
	f := newFarm(t)
	f.longJob(t, "job-drain")
	w := f.startWorker(t, "w-drain", "--preset", "slow", "--drain-timeout", "80s")
	f.waitRendering(t, "job-drain", "w-drain")
	// A second job queued now must stay queued: the draining worker pulls
	// nothing more.
	fx := fixture(t, 64, 48, 4)
	f.submit(t, "job-after", job.JobRequest{GenerationType: "video", SourceURI: f.upload(t, fx.Source, "a.mp4"), AlphaMode: "fill", Prompt: "x", Seed: 1})
	w.Signal(t, syscall.SIGTERM)
	if code := w.Wait(t, farmTimeout); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	rec := f.record(t, "job-drain")
	if rec.Status != queue.StatusCompleted || rec.Worker != "w-drain" || rec.Attempt != 1 {
		t.Fatalf("record %+v: want completed by the draining worker on attempt 1", rec)
	}
	if after := f.record(t, "job-after"); after.Status != queue.StatusInQueue || after.Attempt != 0 {
		t.Errorf("job queued during the drain: %s attempt %d, want untouched", after.Status, after.Attempt)
	}
	if len(w.Out.Lines("worker stopped")) != 1 {
		t.Error("no 'worker stopped' log line")
	}
	if ev := f.events(t, "job-drain"); ev[queue.StatusCompleted] != 1 {
		t.Errorf("events %v, want one completed", ev)
	}
}

// TestFarmSIGTERMDrainReleases: SIGTERM with a drain timeout too short for
// the job: the worker hands the job back at once and exits 0; a second
// worker completes it on attempt 2.
func TestFarmSIGTERMDrainReleases(t *testing.T) {
	t.Parallel()
	f := newFarm(t)
	f.longJob(t, "job-release")
	w1 := f.startWorker(t, "w-leaving", "--preset", "slow", "--drain-timeout", "200ms")
	f.waitRendering(t, "job-release", "w-leaving")
	w1.Signal(t, syscall.SIGTERM)
	if code := w1.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	if rec := f.record(t, "job-release"); rec.Status.Terminal() {
		t.Fatalf("record %s: the job finished although the drain timeout was 200ms", rec.Status)
	}
	if len(w1.Out.Lines("job released to another worker")) != 1 {
		t.Error("no 'job released' log line")
	}
	start := time.Now()
	f.startWorker(t, "w-taking-over")
	rec := f.waitTerminal(t, "job-release", farmTimeout)
	if rec.Status != queue.StatusCompleted || rec.Worker != "w-taking-over" || rec.Attempt != 2 {
		t.Fatalf("record %+v: want completed by w-taking-over on attempt 2", rec)
	}
	if rec.LastError != "" {
		t.Errorf("a release recorded an error: %q", rec.LastError)
	}
	t.Logf("taken over and completed %v after the second worker started", time.Since(start).Round(time.Millisecond))
	f.waitAcked(t)
	if ev := f.events(t, "job-release"); ev[queue.StatusCompleted] != 1 || len(ev) != 1 {
		t.Errorf("events %v, want one completed", ev)
	}
}

// TestFarmSubmitTwice: the same job submitted twice (and once more after
// it finished) is stored once, published once and rendered once.
func TestFarmSubmitTwice(t *testing.T) {
	t.Parallel()
	f := newFarm(t)
	fx := fixture(t, 64, 48, 24)
	jr := job.JobRequest{GenerationType: "video", SourceURI: f.upload(t, fx.Source, "clip.mp4"), AlphaMode: "fill", Prompt: "dusk", Seed: 8}
	raw, _ := json.Marshal(jr)
	rec := queue.Record{ID: "job-twice", Kind: queue.KindGeneration, Owner: "acct_test", Request: raw, Seed: jr.Seed}
	for i, wantCreated := range []bool{true, false} {
		_, created, err := f.q.Submit(tctx(t, 10*time.Second), rec)
		if err != nil || created != wantCreated {
			t.Fatalf("submit %d: created %v (want %v), %v", i+1, created, wantCreated, err)
		}
	}
	if n, last := f.streamMsgs(t, queue.StreamJobs); n != 1 || last != 1 {
		t.Fatalf("VFX_JOBS: %d messages, last seq %d; want one", n, last)
	}
	w := f.startWorker(t, "w-twice")
	done := f.waitTerminal(t, "job-twice", farmTimeout)
	if done.Status != queue.StatusCompleted || done.Attempt != 1 {
		t.Fatalf("record %+v", done)
	}
	f.waitAcked(t)
	again, created, err := f.q.Submit(tctx(t, 10*time.Second), rec)
	if err != nil || created || again.Status != queue.StatusCompleted {
		t.Fatalf("submit after completion: created %v, status %s, %v", created, again.Status, err)
	}
	if n, last := f.streamMsgs(t, queue.StreamJobs); n != 0 || last != 1 {
		t.Errorf("VFX_JOBS after the third submit: %d messages, last seq %d; want none, one ever", n, last)
	}
	if ev := f.events(t, "job-twice"); ev[queue.StatusCompleted] != 1 || len(ev) != 1 {
		t.Errorf("events %v, want one completed", ev)
	}
	if n := len(w.Out.Lines("job started")); n != 1 {
		t.Errorf("the worker started the job %d times, want once", n)
	}
}
