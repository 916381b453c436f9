//go:build linux

// Package drill is vfx's multi-process fault drill: a nats-server process,
// a MinIO process, `vfx api` and three `vfx worker` processes on loopback,
// jobs from three accounts submitted over HTTP, and faults injected while
// they run (SIGKILL of a worker mid-job, SIGTERM drain of another, a NATS
// restart with its JetStream store kept, MinIO stopped for a while). The
// drill then checks that every job completed, none was lost or rendered
// into two outputs, every account was charged exactly once per completed
// job, and every webhook was delivered.
//
// `go test ./deploy/drill` runs the short form (18 jobs, and 3 long videos for fault 2); VFX_DRILL=full
// (make drill) runs the full one (60 jobs, MinIO down 10 s).
// VFX_DRILL_LOGS=<dir> keeps every process's output there.
package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/store/storetest"

	"github.com/vfxrender/vfx/internal/proctest"
)

const (
	bucket     = "vfx-drill"
	adminToken = "drill-admin-token-0123456789"
	// Queue settings shared by the API and every worker (they must agree:
	// each one's queue.Open updates the shared consumer).
	ackWait     = "3s"
	maxDeliver  = "10"
	retryDelays = "500ms,1s,2s,4s"
	concurrency = 2
	drainTime   = "40s"
)

// plan is the size of one drill.
type plan struct {
	name       string
	jobs       int           // multiple of 3 (one third per account)
	minioDown  time.Duration // how long MinIO stays stopped
	finishWait time.Duration // bound on the wait for every job to finish
}

func drillPlan() plan {
	if os.Getenv("VFX_DRILL") == "full" {
		return plan{name: "full", jobs: 60, minioDown: 10 * time.Second, finishWait: 10 * time.Minute}
	}
	return plan{name: "short", jobs: 18, minioDown: 4 * time.Second, finishWait: 5 * time.Minute}
}

// job is one submitted generation.
type job struct {
	id, account string
	key         string // the account's API key
	kind        string // image | video
	long        bool   // the longer video (faults aim at these)
	webhook     bool
}

// hookRecv is the loopback webhook receiver: it checks each signature
// with the owning account's secret and fails the first attempt of every
// third job (so retries are exercised too).
type hookRecv struct {
	mu       sync.Mutex
	secrets  map[string]string // account id → secret
	owner    map[string]string // job id → account id
	got      map[string]int    // job id → valid deliveries answered 2xx
	refused  map[string]bool   // job id → first attempt refused
	badSig   int
	failPick func(id string) bool
}

func (h *hookRecv) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var b struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	_ = json.Unmarshal(body, &b)
	h.mu.Lock()
	defer h.mu.Unlock()
	secret := h.secrets[h.owner[b.ID]]
	var ts int64
	fmt.Sscan(r.Header.Get(dispatch.HeaderWebhookTimestamp), &ts)
	want := dispatch.SignWebhook(secret, r.Header.Get(dispatch.HeaderWebhookID), ts, body)
	if secret == "" || r.Header.Get(dispatch.HeaderWebhookSignature) != want {
		h.badSig++
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if h.failPick(b.ID) && !h.refused[b.ID] {
		h.refused[b.ID] = true
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	h.got[b.ID]++
	w.WriteHeader(http.StatusNoContent)
}

func (h *hookRecv) delivered(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got[id]
}

// drill holds the running system.
type drill struct {
	t        *testing.T
	vfxBin   string
	nats     *natsProc
	minioEP  string
	stopS3   func()
	startS3  func()
	apiURL   string
	api      *proc
	workers  map[string]*proc
	tempDirs map[string]string
	mu       sync.Mutex
	jobs     []job    // submitted so far
	subErrs  []string // submissions that failed for good
	// retriedSubmits counts submissions that needed more than one try.
	retriedSubmits int
	nc             *nats.Conn
	js             jetstream.JetStream
	s3             *minio.Client
}

func TestDrill(t *testing.T) {
	if testing.Short() {
		t.Skip("the drill starts nats-server, MinIO, vfx api and three vfx worker processes; run without -short")
	}
	// Nothing the drill starts may outlive it: this cleanup runs last (after
	// every process's own), and as the subreaper the test process also sees
	// grandchildren whose parent exited.
	proctest.BecomeSubreaper(t)
	t.Cleanup(func() { proctest.CheckNoDescendants(t) })
	codec.Quiet()
	pl := drillPlan()
	began := time.Now()
	dir := t.TempDir()
	d := &drill{t: t, workers: map[string]*proc{}, tempDirs: map[string]string{}}

	// Infrastructure: MinIO, nats-server, the binaries, the fixtures.
	var ak, sk string
	d.minioEP, ak, sk, d.stopS3, d.startS3 = storetest.StartMinIO(t)
	var natsBin string
	d.vfxBin, natsBin = buildBinaries(t, dir)
	d.nats = &natsProc{bin: natsBin, storeDir: filepath.Join(dir, "nats"), port: freePort(t), monPort: freePort(t)}
	d.nats.start(t)
	var err error
	d.nc, err = nats.Connect(d.nats.url(), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.nc.Close)
	if d.js, err = jetstream.New(d.nc); err != nil {
		t.Fatal(err)
	}
	d.s3, err = minio.New(d.minioEP, &minio.Options{Creds: credentials.NewStaticV4(ak, sk, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	small, err := bench.WriteFixture(ctx, filepath.Join(dir, "small"), bench.FixtureOptions{Width: 96, Height: 64, Frames: 12, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	long, err := bench.WriteFixture(ctx, filepath.Join(dir, "long"), bench.FixtureOptions{Width: 640, Height: 360, Frames: 150, Seed: 4})
	cancel()
	if err != nil {
		t.Fatal(err)
	}

	// The API and three workers.
	s3Env := []string{"VFX_S3_ENDPOINT=http://" + d.minioEP, "VFX_S3_BUCKET=" + bucket, "VFX_S3_ACCESS_KEY=" + ak,
		"VFX_S3_SECRET_KEY=" + sk, "VFX_S3_CREATE_BUCKET=true", "VFX_ADMIN_TOKEN=" + adminToken}
	d.startAPI(s3Env)
	for _, name := range []string{"w1", "w2", "w3"} {
		d.tempDirs[name] = filepath.Join(dir, "tmp-"+name)
		d.startWorker(name, name, s3Env)
	}
	for _, w := range d.workers {
		d.waitReady(w)
	}

	// Accounts, keys, webhook secrets, uploads, jobs.
	recv := &hookRecv{secrets: map[string]string{}, owner: map[string]string{}, got: map[string]int{}, refused: map[string]bool{}}
	recv.failPick = func(id string) bool { return len(id) > 0 && id[len(id)-1]%3 == 0 }
	hooks := httptest.NewServer(recv)
	t.Cleanup(hooks.Close)
	var specs []jobSpec
	uploads := map[string]map[string]string{} // account → name → vfx URI
	for a := range 3 {
		acct := d.call("POST", "/admin/v1/accounts", adminToken, "", map[string]any{
			"email": fmt.Sprintf("drill-%d@example.com", a), "billing_type": "postpaid"}, 201)
		acctID := acct["id"].(string)
		key := d.call("POST", "/admin/v1/accounts/"+acctID+"/keys", adminToken, "", map[string]any{"kind": "organization"}, 201)["key"].(string)
		secret, _ := d.call("GET", "/admin/v1/accounts/"+acctID+"/webhook-secret", adminToken, "", nil, 200)["secret"].(string)
		if secret == "" {
			t.Fatal("empty webhook secret")
		}
		recv.mu.Lock()
		recv.secrets[acctID] = secret
		recv.mu.Unlock()
		up := map[string]string{}
		for name, path := range map[string]string{"src.mp4": small.Source, "matte.mp4": small.Matte, "still.png": small.Still,
			"still_matte.png": small.StillMatte, "ref.png": small.Reference, "long.mp4": long.Source, "long_matte.mp4": long.Matte} {
			up[name] = d.upload(key, name, path)
		}
		uploads[acctID] = up
		for i := range pl.jobs / 3 {
			j := job{account: acctID, key: key, kind: "image", webhook: i%3 != 2}
			body := map[string]any{"prompt": fmt.Sprintf("drill %d/%d: warm key light", a, i), "seed": a*100 + i,
				"idempotency_key": fmt.Sprintf("drill-%d-%d", a, i)}
			switch {
			case i%2 == 0:
				body["generation_type"] = "image"
				body["source_uri"] = up["still.png"]
				if i%4 == 0 {
					body["alpha_mode"] = "custom"
					body["alpha_uri"] = up["still_matte.png"]
				} else {
					body["alpha_mode"] = "fill"
					body["reference_image_uri"] = up["ref.png"]
				}
			case i%4 == 1:
				j.kind, j.long = "video", true
				body["generation_type"] = "video"
				body["source_uri"], body["alpha_mode"], body["alpha_uri"] = up["long.mp4"], "custom", up["long_matte.mp4"]
				body["max_resolution"] = 720
			default:
				j.kind = "video"
				body["generation_type"] = "video"
				body["source_uri"], body["alpha_mode"], body["alpha_uri"] = up["src.mp4"], "custom", up["matte.mp4"]
			}
			if j.webhook {
				body["callback_url"] = hooks.URL + "/hooks"
			}
			specs = append(specs, jobSpec{job: j, body: body, order: i*3 + a})
		}
	}
	// Interleave the accounts and cut the jobs in four stages: A before
	// the worker faults, B before the NATS restart, C during it, D1 before
	// the MinIO outage, D2 during it (C and D2 retried with their idempotency keys while
	// the API answers 5xx or cannot be reached).
	slices.SortStableFunc(specs, func(a, b jobSpec) int { return a.order - b.order })
	third, sixth := len(specs)/3, len(specs)/6
	stageA, stageB := specs[:third], specs[third:third+sixth]
	stageC, stageD1, stageD2 := specs[third+sixth:2*third], specs[2*third:2*third+sixth], specs[2*third+sixth:]
	// The first job of each stage is a long video, for a fault to land on.
	for _, st := range [][]jobSpec{stageA, stageB, stageD1} {
		sp := &st[0]
		up := uploads[sp.job.account]
		sp.job.kind, sp.job.long = "video", true
		delete(sp.body, "reference_image_uri")
		sp.body["generation_type"], sp.body["max_resolution"] = "video", 720
		sp.body["source_uri"], sp.body["alpha_mode"], sp.body["alpha_uri"] = up["long.mp4"], "custom", up["long_matte.mp4"]
	}
	d.submitAll(stageA, recv)
	t.Logf("stage A: %d jobs submitted after %v (%s drill)", len(stageA), time.Since(began).Round(time.Millisecond), pl.name)

	// Fault 1: SIGKILL a worker mid-job (a long video it is rendering),
	// then start it again on the same temp folder, as a restarted pod would.
	victim, killedJob := d.waitMidJob("w1", "w2", "w3")
	tempBefore := jobFolders(t, d.tempDirs[victim])
	d.workers[victim].Signal(t, syscall.SIGKILL)
	d.workers[victim].Wait(t, 10*time.Second)
	t.Logf("fault 1: SIGKILL %s while it rendered %s (job folders left: %v)", victim, killedJob, tempBefore)
	if len(tempBefore) == 0 {
		t.Errorf("the killed worker had no job folder in %s: the fault did not land mid-job", d.tempDirs[victim])
	}
	d.startWorker(victim, victim+"-restarted", s3Env)
	d.waitReady(d.workers[victim])
	for _, f := range tempBefore {
		if _, err := os.Stat(filepath.Join(d.tempDirs[victim], f)); !os.IsNotExist(err) {
			t.Errorf("the restarted worker left the killed worker's job folder %s (%v)", f, err)
		}
	}

	// Fault 2: SIGTERM another worker mid-job: it drains (finishes the job
	// in hand, pulls nothing more) and exits 0; then it is started again.
	var others []string
	for _, n := range []string{"w1", "w2", "w3"} {
		if n != victim {
			others = append(others, n)
		}
	}
	// Stage A's jobs may all have finished while the killed worker loaded
	// its model again (25 s on 2 cores beside two 15-s renders: the fault
	// then waited 3 minutes for a job that never came), so fault 2 gets
	// long videos of its own: three, so that the restarted worker's two
	// slots cannot hold them all and one lands on another worker.
	for k := range 3 {
		extra := stageA[0]
		extra.body = maps.Clone(extra.body)
		extra.body["idempotency_key"] = fmt.Sprintf("drill-fault2-%d", k)
		extra.body["prompt"] = fmt.Sprintf("drill: fault 2's long video %d", k)
		specs = append(specs, extra)
		d.submit(extra, recv)
	}
	drainer, drainJob := d.waitMidJob(others...)
	d.workers[drainer].Signal(t, syscall.SIGTERM)
	if code := d.workers[drainer].Wait(t, 2*time.Minute); code != 0 {
		t.Errorf("%s exited %d after SIGTERM, want 0", drainer, code)
	}
	t.Logf("fault 2: SIGTERM %s while it rendered %s; drained and exited", drainer, drainJob)
	d.startWorker(drainer, drainer+"-restarted", s3Env)

	// Fault 3: restart NATS (store kept) while a job renders, stage C
	// being submitted meanwhile.
	d.submitAll(stageB, recv)
	_, natsJob := d.waitMidJob("w1", "w2", "w3")
	left := d.unfinished(d.submitted())
	cDone := d.submitAsync(stageC, recv)
	d.nats.restart(t, time.Second)
	t.Logf("fault 3: nats-server restarted while %s rendered, %d jobs unfinished", natsJob, left)
	d.waitSubmissions(cDone, "C", 3*time.Minute)

	// Fault 4: MinIO down for a while, while a job renders (stage D1),
	// stage D2 being submitted meanwhile.
	d.submitAll(stageD1, recv)
	_, s3Job := d.waitMidJob("w1", "w2", "w3")
	left = d.unfinished(d.submitted())
	d.stopS3()
	dDone := d.submitAsync(stageD2, recv)
	time.Sleep(pl.minioDown)
	d.startS3()
	t.Logf("fault 4: MinIO stopped for %v while %s rendered, %d jobs unfinished", pl.minioDown, s3Job, left)
	d.waitSubmissions(dDone, "D", 3*time.Minute)

	// Every job finishes.
	jobs := d.submitted()
	deadline := time.Now().Add(pl.finishWait)
	for d.unfinished(jobs) > 0 && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
	}
	// Charges and webhooks settle after the jobs finish (bounded wait).
	settleBy := time.Now().Add(90 * time.Second)
	for time.Now().Before(settleBy) {
		s := d.summarise(jobs, recv)
		if s.pendingCharges == 0 && s.hooksDelivered == s.hooksWanted {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	s := d.summarise(jobs, recv)
	line := fmt.Sprintf("drill(%s): %d jobs (%d submit errors): completed %d, failed %d, lost %d (ghosts %d), duplicated outputs %d, charges against completed jobs %d/%d (double %d, stray %d, usage mismatch %d), webhooks delivered %d/%d (bad signatures %d), redeliveries %d, time %v",
		pl.name, len(specs), len(specs)-len(jobs), s.completed, s.failed, s.lost, s.ghosts, s.duplicated, s.charged, s.completed, s.doubleCharged, s.strayCharges,
		s.usageMismatch, s.hooksDelivered, s.hooksWanted, recv.badSig, s.redeliveries, time.Since(began).Round(time.Second))
	fmt.Println(line)
	t.Log(line)
	t.Logf("submissions retried after a 5xx or a refused connection: %d", d.retriedSubmits)
	for _, e := range d.subErrs {
		t.Error(e)
	}
	for _, p := range s.problems {
		t.Error(p)
	}
	if len(jobs) != len(specs) || s.completed != len(jobs) || s.lost != 0 || s.ghosts != 0 || s.duplicated != 0 || s.charged != s.completed || s.doubleCharged != 0 ||
		s.strayCharges != 0 || s.usageMismatch != 0 || s.hooksDelivered != s.hooksWanted || recv.badSig != 0 {
		t.Errorf("drill failed: %s", line)
	}
	// Every process stops cleanly: SIGTERM, exit 0. One that has already
	// exited is not signalled (that is no failure of the system); its exit
	// code is still checked, and CheckNoDescendants (registered first)
	// fails the drill if anything it started outlives it.
	for _, slot := range slices.Sorted(maps.Keys(d.workers)) {
		d.stopAtEnd(d.workers[slot])
	}
	d.stopAtEnd(d.api)
}

// stopAtEnd stops p with SIGTERM at the end of the drill and checks that
// it exits 0; a process that exited before the teardown is logged with its
// exit code and the tail of its output.
func (d *drill) stopAtEnd(p *proc) {
	t := d.t
	t.Helper()
	code, before := p.Stop(t, syscall.SIGTERM, time.Minute)
	if before {
		t.Logf("%s had already exited (code %d) before the teardown; output tail:\n%s", p.Name, code, proctest.Tail(p.Out.String(), 2000))
	}
	if code != 0 {
		t.Errorf("%s exit %d at the end (exited before the teardown: %v)", p.Name, code, before)
	}
}

// waitSubmissions waits at most timeout for a stage's background
// submissions. When they do not end, the API is not answering: it is sent
// SIGQUIT first, so that its goroutine dump lands in its log (kept in
// VFX_DRILL_LOGS and tailed below), then the drill fails.
func (d *drill) waitSubmissions(done <-chan struct{}, stage string, timeout time.Duration) {
	t := d.t
	t.Helper()
	select {
	case <-done:
		return
	case <-time.After(timeout):
	}
	d.mu.Lock()
	n := len(d.jobs)
	d.mu.Unlock()
	_ = d.api.Cmd.Process.Signal(syscall.SIGQUIT)
	d.api.Wait(t, 30*time.Second)
	t.Fatalf("stage %s submissions did not end within %v (%d jobs submitted so far); the API's goroutines (SIGQUIT) are in api.log", stage, timeout, n)
}

func (d *drill) startAPI(env []string) {
	t := d.t
	d.api = startProc(t, "api", d.vfxBin, []string{"api", "--listen", "127.0.0.1:0", "--nats-url", d.nats.url(),
		"--store", "s3", "--allow-private-networks", "--allow-http-callbacks",
		"--webhook-retry-delays", "200ms,500ms,1s,2s,4s,8s", "--ack-wait", ackWait, "--max-deliver", maxDeliver,
		"--shutdown-timeout", "5s", "--name", "drill-api"}, env)
	re := regexp.MustCompile(`vfx api listening on (http://\S+)`)
	eventually(t, 60*time.Second, "api listening", func() (bool, string) {
		if !d.api.Running() {
			t.Fatalf("api exited: %s", proctest.Tail(d.api.Out.String(), 3000))
		}
		m := re.FindStringSubmatch(d.api.Out.String())
		if m != nil {
			d.apiURL = m[1]
		}
		return m != nil, "no line yet"
	})
}

// startWorker starts worker slot (w1…) under name, on the slot's temp folder.
func (d *drill) startWorker(slot, name string, env []string) {
	d.workers[slot] = startProc(d.t, name, d.vfxBin, []string{"worker", "--nats-url", d.nats.url(), "--store", "s3",
		"--name", name, "--http-addr", "127.0.0.1:0", "--temp-dir", d.tempDirs[slot],
		"--concurrency", fmt.Sprint(concurrency), "--drain-timeout", drainTime,
		"--ack-wait", ackWait, "--max-deliver", maxDeliver, "--retry-delays", retryDelays, "--max-job-duration", "3m",
		"--preset", "ultrafast", "--cpu-workers", "1"}, env)
}

func (d *drill) waitReady(w *proc) {
	eventually(d.t, 60*time.Second, w.Name+" ready", func() (bool, string) {
		if !w.Running() {
			d.t.Fatalf("%s exited: %s", w.Name, proctest.Tail(w.Out.String(), 3000))
		}
		return len(w.Out.Lines("worker ready")) > 0, "not yet"
	})
	// The probes the Kubernetes manifests use answer 200 once ready.
	l := w.Out.Lines("http listening")
	if len(l) == 0 {
		d.t.Fatalf("%s logged no http address", w.Name)
	}
	addr, _ := l[0]["addr"].(string)
	for _, path := range []string{"/livez", "/readyz"} {
		eventually(d.t, 30*time.Second, w.Name+path, func() (bool, string) {
			res, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + path)
			if err != nil {
				return false, err.Error()
			}
			res.Body.Close()
			return res.StatusCode == http.StatusOK, res.Status
		})
	}
}

// call makes one API request and decodes the JSON answer.
func (d *drill) call(method, path, admin, key string, body any, want int) map[string]any {
	t := d.t
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, d.apiURL+path, rd)
	if admin != "" {
		req.Header.Set("Authorization", "Bearer "+admin)
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d %s (want %d)", method, path, res.StatusCode, raw, want)
	}
	var m map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return m
}

// upload puts a local file through the API's presigned upload URL.
func (d *drill) upload(key, name, path string) string {
	t := d.t
	up := d.call("POST", "/v1/uploads", "", key, map[string]any{"filename": name}, 200)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "PUT", up["upload_url"].(string), bytes.NewReader(b))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("upload %s: %d", name, res.StatusCode)
	}
	return up["vfx_uri"].(string)
}

// record reads a job record from the jobs bucket (nil when unreadable).
func (d *drill) record(id string) *queue.Record {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := d.js.KeyValue(ctx, queue.BucketJobs)
	if err != nil {
		return nil
	}
	e, err := kv.Get(ctx, id)
	if err != nil {
		return nil
	}
	var r queue.Record
	if json.Unmarshal(e.Value(), &r) != nil {
		return nil
	}
	return &r
}

// waitMidJob waits until one of the named worker slots is rendering a job
// (progress between 0 and 100, a long one preferred after a while) and
// returns the slot and the job.
func (d *drill) waitMidJob(slots ...string) (slot, id string) {
	names := map[string]string{}
	for _, s := range slots {
		names[d.workers[s].Name] = s
	}
	start := time.Now()
	eventually(d.t, 3*time.Minute, "a worker mid-job", func() (bool, string) {
		anyOK := time.Since(start) > 20*time.Second
		jobs := d.submitted()
		for _, j := range jobs {
			if !j.long && !anyOK {
				continue
			}
			r := d.record(j.id)
			if r == nil || r.Status != queue.StatusProcessing || r.Progress <= 0 || r.Progress >= 90 {
				continue
			}
			if s, ok := names[r.Worker]; ok {
				slot, id = s, j.id
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d unfinished", d.unfinished(jobs))
	})
	return slot, id
}

// unfinished counts the jobs whose record is not terminal.
func (d *drill) unfinished(jobs []job) int {
	n := 0
	for _, j := range jobs {
		if r := d.record(j.id); r == nil || !r.Status.Terminal() {
			n++
		}
	}
	return n
}

// jobFolders lists the per-job folders in dir.
func jobFolders(t *testing.T, dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "vfx-job-") {
			out = append(out, e.Name())
		}
	}
	return out
}

type summary struct {
	completed, failed, lost, duplicated  int
	redeliveries                         int
	ghosts                               int // listed jobs the client never got an id for, not failed
	charged, doubleCharged, strayCharges int
	pendingCharges, usageMismatch        int
	hooksWanted, hooksDelivered          int
	problems                             []string
}

// summarise reads the API (job status), the bucket (outputs), the usage
// bucket (charge ledger, period usage), VFX_EVENTS and the webhook
// receiver.
func (d *drill) summarise(jobs []job, recv *hookRecv) summary {
	var s summary
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	problem := func(format string, a ...any) { s.problems = append(s.problems, fmt.Sprintf(format, a...)) }

	// Objects under jobs/: each completed job has exactly its three outputs.
	objects := map[string][]string{}
	for obj := range d.s3.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: "jobs/", Recursive: true}) {
		if obj.Err != nil {
			problem("list outputs: %v", obj.Err)
			break
		}
		parts := strings.SplitN(obj.Key, "/", 3)
		if len(parts) == 3 {
			objects[parts[1]] = append(objects[parts[1]], parts[2])
		}
	}
	completedEvents := d.completedEvents(ctx)

	completedBy := map[string]map[string]bool{} // account → completed job ids
	for _, j := range jobs {
		if r := d.record(j.id); r != nil && r.Attempt > 1 {
			s.redeliveries += r.Attempt - 1
		}
		res := d.get("/v1/vfx/generations/"+j.id, j.key)
		status, _ := res["status"].(string)
		switch status {
		case "completed":
			s.completed++
			if completedBy[j.account] == nil {
				completedBy[j.account] = map[string]bool{}
			}
			completedBy[j.account][j.id] = true
			ext := "png"
			if j.kind == "video" {
				ext = "mp4"
			}
			want := []string{"alpha." + ext, "render." + ext, "source." + ext}
			got := slices.Clone(objects[j.id])
			sort.Strings(got)
			switch {
			case len(got) < len(want) || !slices.Equal(got, want) && len(got) == len(want):
				s.lost++
				problem("job %s completed but its outputs are %v, want %v", j.id, got, want)
			case len(got) > len(want):
				s.duplicated++
				problem("job %s has extra outputs: %v", j.id, got)
			}
			if n := completedEvents[j.id]; n != 1 {
				if n > 1 {
					s.duplicated++
				}
				problem("job %s: %d completed events, want 1", j.id, n)
			}
		case "failed":
			s.failed++
			problem("job %s failed: %v", j.id, res["error"])
		default:
			s.lost++
			if status != "" {
				problem("job %s still %s", j.id, status)
			} else {
				problem("job %s unreadable: %v", j.id, res)
			}
		}
		if j.webhook {
			s.hooksWanted++
			if recv.delivered(j.id) > 0 {
				s.hooksDelivered++
			}
		}
	}

	// Each account's job list: a job the client never got an id for (its
	// submission answered an error) must not linger unfinished there.
	known := map[string]bool{}
	keys := map[string]string{}
	for _, j := range jobs {
		known[j.id] = true
		keys[j.account] = j.key
	}
	for acct, key := range keys {
		token := ""
		for range 100 {
			path := "/v1/vfx/generations?limit=100"
			if token != "" {
				path += "&page_token=" + token
			}
			page := d.get(path, key)
			list, _ := page["jobs"].([]any)
			for _, it := range list {
				m, _ := it.(map[string]any)
				id, _ := m["id"].(string)
				if !known[id] && m["status"] != "failed" {
					s.ghosts++
					problem("account %s lists job %s (%v), which no submission returned", acct, id, m["status"])
				}
			}
			token, _ = page["next_page_token"].(string)
			if token == "" {
				break
			}
		}
	}

	// The charge ledger: one entry per completed job, fully applied, and
	// the period usage equals the sum of the entries.
	kv, err := d.js.KeyValue(ctx, account.BucketUsage)
	if err != nil {
		problem("usage bucket: %v", err)
		s.pendingCharges = 1
		return s
	}
	usageKeys, err := kv.ListKeys(ctx)
	if err != nil {
		problem("usage keys: %v", err)
		s.pendingCharges = 1
		return s
	}
	ledger := map[string]map[string]float64{} // account → job → cost
	periods := map[string]float64{}
	for k := range usageKeys.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			problem("usage %s: %v", k, err)
			continue
		}
		acct, rest, _ := strings.Cut(k, ".")
		switch {
		case strings.HasPrefix(rest, "charge."):
			var c struct {
				Cost  float64 `json:"cost"`
				State string  `json:"state"`
			}
			_ = json.Unmarshal(e.Value(), &c)
			jobID := strings.TrimPrefix(rest, "charge.")
			if c.State != "done" {
				s.pendingCharges++
			}
			if ledger[acct] == nil {
				ledger[acct] = map[string]float64{}
			}
			ledger[acct][jobID] = c.Cost
		case strings.HasPrefix(rest, "period."):
			var u struct {
				Usage float64 `json:"usage"`
			}
			_ = json.Unmarshal(e.Value(), &u)
			periods[acct] += u.Usage
		}
	}
	for acct, done := range completedBy {
		for id := range done {
			if _, ok := ledger[acct][id]; ok {
				s.charged++
			} else {
				s.pendingCharges++
			}
		}
	}
	for acct, entries := range ledger {
		var sum float64
		for id, cost := range entries {
			sum += cost
			if !completedBy[acct][id] {
				s.strayCharges++
				problem("account %s charged for job %s, which did not complete", acct, id)
			}
		}
		if diff := sum - periods[acct]; diff > 1e-6 || diff < -1e-6 {
			s.usageMismatch++
			problem("account %s: period usage %.6f, charge ledger sums to %.6f (charged twice or not at all)", acct, periods[acct], sum)
		}
	}
	return s
}

// get is call without failing the test on errors (the summary counts them).
func (d *drill) get(path, key string) map[string]any {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", d.apiURL+path, nil)
	req.Header.Set("x-api-key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	defer res.Body.Close()
	var m map[string]any
	raw, _ := io.ReadAll(res.Body)
	if json.Unmarshal(raw, &m) != nil {
		return map[string]any{"error": string(raw)}
	}
	return m
}

// completedEvents counts the completed events in VFX_EVENTS by job id,
// through an ordered consumer.
func (d *drill) completedEvents(ctx context.Context) map[string]int {
	out := map[string]int{}
	s, err := d.js.Stream(ctx, queue.StreamEvents)
	if err != nil {
		return out
	}
	info, err := s.Info(ctx)
	if err != nil || info.State.Msgs == 0 {
		return out
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return out
	}
	for i := uint64(0); i < info.State.Msgs; i++ {
		m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			break
		}
		var ev queue.Event
		if json.Unmarshal(m.Data(), &ev) == nil && ev.Status == queue.StatusCompleted {
			out[ev.JobID]++
		}
	}
	return out
}

// jobSpec is a job to submit.
type jobSpec struct {
	job   job
	body  map[string]any
	order int
}

// submitted returns the jobs submitted so far.
func (d *drill) submitted() []job {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.jobs)
}

// submitAll submits specs one after another.
func (d *drill) submitAll(specs []jobSpec, recv *hookRecv) {
	for _, sp := range specs {
		d.submit(sp, recv)
	}
}

// submitAsync submits specs in the background; the channel closes when done.
func (d *drill) submitAsync(specs []jobSpec, recv *hookRecv) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.submitAll(specs, recv)
	}()
	return done
}

// submit posts one generation, retrying with the same idempotency key
// (bounded) while the API cannot be reached or answers 5xx.
func (d *drill) submit(sp jobSpec, recv *hookRecv) {
	body, _ := json.Marshal(sp.body)
	var last string
	for attempt := 0; attempt < 120; attempt++ {
		if attempt > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "POST", d.apiURL+"/v1/vfx/generations", bytes.NewReader(body))
		req.Header.Set("x-api-key", sp.job.key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			last = err.Error()
			continue
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		cancel()
		if res.StatusCode >= 500 || res.StatusCode == http.StatusTooManyRequests {
			last = fmt.Sprintf("%d %s", res.StatusCode, raw)
			continue
		}
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		id, _ := m["id"].(string)
		if (res.StatusCode != 201 && res.StatusCode != 200) || id == "" {
			last = fmt.Sprintf("%d %s", res.StatusCode, raw)
			break
		}
		j := sp.job
		j.id = id
		recv.mu.Lock()
		recv.owner[id] = j.account
		recv.mu.Unlock()
		d.mu.Lock()
		d.jobs = append(d.jobs, j)
		if attempt > 0 {
			d.retriedSubmits++
		}
		d.mu.Unlock()
		return
	}
	d.mu.Lock()
	d.subErrs = append(d.subErrs, fmt.Sprintf("submit %s: %s", sp.body["idempotency_key"], last))
	d.mu.Unlock()
}
