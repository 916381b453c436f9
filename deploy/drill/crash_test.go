//go:build linux

package drill

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/internal/proctest"
	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/store"
)

// The crash drill (make crash-drill): one `vfx serve` on loopback, a burst
// of submissions with idempotency keys on both APIs, SIGKILL of the server
// mid-burst, a restart on the same --data, and every unanswered request
// resent with its key, as the SPEC tells clients to. It checks that every
// resent request gets its job within crashResendLimit of the restart, that
// every job completes, that each is billed (generation) or charged
// (product) exactly once, that no inline input is orphaned after a sweep,
// and that no account holds in-flight slots or reserved credits. It prints
// one result line.

const (
	crashGen, crashProduct = 10, 10
	// crashResendLimit bounds the time from the restart to each resent
	// request's job.
	crashResendLimit = 30 * time.Second
	crashJobsLimit   = 4 * time.Minute
)

// crashReq is one submission of the burst.
type crashReq struct {
	product  bool
	path     string
	key      string // API key
	body     []byte
	answered bool // before the kill
	status   int
	id       string
	resent   time.Duration // time from the restart to the resent request's job
}

func TestCrashDrill(t *testing.T) {
	if os.Getenv("VFX_CRASH_DRILL") == "" {
		t.Skip("the crash drill SIGKILLs a vfx serve mid-burst (about a minute a run): make crash-drill sets VFX_CRASH_DRILL=1")
	}
	proctest.BecomeSubreaper(t)
	t.Cleanup(func() { proctest.CheckNoDescendants(t) })
	codec.Quiet()
	began := time.Now()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	bin := buildVFX(t, dir)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	d := &drill{t: t, apiURL: "http://" + addr}
	env := []string{"VFX_ADMIN_TOKEN=" + adminToken, "VFX_MODEL_DIR=" + os.Getenv("VFX_MODEL_DIR")}
	serve := func(n int) *proc {
		p := startProc(t, fmt.Sprintf("serve#%d", n), bin, []string{"serve", "--listen", addr, "--data", data,
			"--concurrency", "2", "--preset", "ultrafast", "--drain-timeout", "5s"}, env)
		eventually(t, 2*time.Minute, "vfx serve listening", func() (bool, string) {
			if !p.Running() {
				t.Fatalf("%s exited: %s", p.Name, proctest.Tail(p.Out.String(), 3000))
			}
			return strings.Contains(p.Out.String(), "vfx serve listening on "), ""
		})
		return p
	}
	s1 := serve(1)

	// A generation account and a product organisation, both with
	// organisation keys (no rate limits, so every refusal is a fault).
	acct := d.call("POST", "/admin/v1/accounts", adminToken, "", map[string]any{"email": "crash@example.com", "billing_type": "postpaid"}, 201)
	acctID := acct["id"].(string)
	genKey := d.call("POST", "/admin/v1/accounts/"+acctID+"/keys", adminToken, "", map[string]any{"kind": "organization"}, 201)["key"].(string)
	org := d.call("POST", "/admin/v1/orgs", adminToken, "", map[string]any{"name": "Crash"}, 201)["id"].(string)
	d.call("POST", "/admin/v1/orgs/"+org+"/credits", adminToken, "", map[string]any{"amount": 100000}, 200)
	d.call("PUT", "/admin/v1/orgs/"+org+"/products/vfx", adminToken, "", map[string]any{"enabled": true}, 200)
	d.call("PUT", "/admin/v1/orgs/"+org+"/models/vfx-2.0/consent", adminToken, "", map[string]any{"granted": true}, 200)
	orgKey := d.call("POST", "/admin/v1/orgs/"+org+"/keys", adminToken, "", nil, 201)["key"].(string)

	// The burst: each request carries its source inline (a data: URI, so
	// that a dead submission leaves a stored input behind), interleaved
	// across the APIs and staggered so that the kill lands among them.
	run := fmt.Sprintf("%x", rand.Uint64())
	var reqs []*crashReq
	for i := range max(crashGen, crashProduct) {
		src := "data:image/png;base64," + base64.StdEncoding.EncodeToString(crashPNG(t, 160, 120, i))
		if i < crashGen {
			b, _ := json.Marshal(map[string]any{"generation_type": "image", "alpha_mode": "fill", "source_uri": src,
				"prompt": fmt.Sprintf("crash drill %d: warm key light", i), "seed": i, "idempotency_key": fmt.Sprintf("gen-%s-%d", run, i)})
			reqs = append(reqs, &crashReq{path: "/v1/vfx/generations", key: genKey, body: b})
		}
		if i < crashProduct {
			b, _ := json.Marshal(map[string]any{"model_id": "vfx-2.0", "idempotency_key": fmt.Sprintf("prod-%s-%d", run, i),
				"inputs": map[string]any{"source": src, "alpha_mode": "fill", "prompt": fmt.Sprintf("crash drill %d: cool rim light", i), "seed": i}})
			reqs = append(reqs, &crashReq{product: true, path: "/v1/products/vfx/jobs", key: orgKey, body: b})
		}
	}
	const stagger = 30 * time.Millisecond
	killAt := time.Duration(len(reqs))*stagger/3 + time.Duration(rand.IntN(int(time.Duration(len(reqs))*stagger/2)))
	var wg sync.WaitGroup
	burst := time.Now()
	for i, r := range reqs {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * stagger)
			status, id, err := crashPost(d.apiURL, r, 20*time.Second)
			if err == nil {
				r.answered, r.status, r.id = true, status, id
			}
		})
	}
	time.Sleep(killAt - time.Since(burst))
	s1.Signal(t, syscall.SIGKILL)
	s1.Wait(t, 30*time.Second)
	wg.Wait()
	answered := 0
	for _, r := range reqs {
		if r.answered {
			answered++
			if want := crashWant(r); r.status != want {
				t.Errorf("answered before the kill: %d, want %d (%s)", r.status, want, r.path)
			}
		}
	}

	// Restart on the same data; resend every unanswered request with its
	// key, as a client whose outcome is uncertain does.
	s2 := serve(2)
	restarted := time.Now()
	for _, r := range reqs {
		if r.answered {
			continue
		}
		wg.Go(func() {
			for {
				status, id, err := crashPost(d.apiURL, r, crashResendLimit)
				if err == nil && status == crashWant(r) || err == nil && !r.product && status == http.StatusOK {
					r.status, r.id, r.resent = status, id, time.Since(restarted)
					return
				}
				if time.Since(restarted) > crashResendLimit {
					r.status, r.resent = status, time.Since(restarted)
					return
				}
				time.Sleep(time.Second) // 503 Retry-After: 1, or a network error
			}
		})
	}
	wg.Wait()
	resent, slowest, missing := 0, time.Duration(0), 0
	for _, r := range reqs {
		if r.answered {
			continue
		}
		resent++
		slowest = max(slowest, r.resent)
		if r.id == "" || r.resent > crashResendLimit {
			missing++
			t.Errorf("resent %s: status %d after %v, no job", r.path, r.status, r.resent.Round(time.Millisecond))
		}
	}
	takenOver := strings.Count(s2.Out.String(), "idempotency claim taken over")

	// Every job completes.
	done := map[string]string{}
	eventually(t, crashJobsLimit, "every job finished", func() (bool, string) {
		for _, r := range reqs {
			if r.id == "" || done[r.id] != "" {
				continue
			}
			path, key := "/v1/vfx/generations/"+r.id, genKey
			if r.product {
				path, key = "/v1/product-jobs/"+r.id, orgKey
			}
			st, _ := d.get(path, key)["status"].(string)
			switch st {
			case "completed", "failed", "success", "cancelled", "credit_required":
				done[r.id] = st
			default:
				return false, r.id + " " + st
			}
		}
		return true, ""
	})
	completed := 0
	for _, r := range reqs {
		if r.id == "" {
			continue
		}
		if want := map[bool]string{false: "completed", true: "success"}[r.product]; done[r.id] == want {
			completed++
		} else {
			t.Errorf("job %s ended %s, want %s", r.id, done[r.id], want)
		}
	}
	// Jobs are billed (and their slots released) by the API's billing
	// consumer after they complete, credits settled likewise: wait for
	// the account to hold no slot and the organisation no reserved
	// credit, as a client would see it, before stopping the server.
	// (The books below count what is still held after a minute.)
	for settle := time.Now(); time.Since(settle) < time.Minute; time.Sleep(100 * time.Millisecond) {
		info := d.get("/v1/account/info", genKey)
		rl, _ := info["rate_limits"].(map[string]any)
		conc, _ := rl["concurrency"].(map[string]any)
		credits := d.call("GET", "/admin/v1/orgs/"+org+"/credits", adminToken, "", nil, 200)
		if conc != nil && conc["usage"] == 0.0 && credits["reserved"] == 0.0 {
			break
		}
	}
	s2.Stop(t, syscall.SIGTERM, time.Minute)

	// The books, read from the data folder's NATS with the server stopped.
	b := crashBooks(t, data, acctID, org, reqs)
	line := fmt.Sprintf("crash-drill: burst %d (generation %d, product %d), killed at %v: answered %d, resent %d (claims taken over %d), "+
		"resent without a job %d, slowest resend %v after restart; jobs %d, completed %d; billed once %d/%d, charged once %d/%d "+
		"(double %d, stray %d); orphaned inputs %d before the sweep (recovered %d), %d after; pending records %d; slots held %d, credits reserved %d; time %v",
		len(reqs), crashGen, crashProduct, killAt.Round(time.Millisecond), answered, resent, takenOver, missing,
		slowest.Round(100*time.Millisecond), len(done), completed, b.billed, crashGen, b.charged, crashProduct,
		b.double, b.stray, b.orphansBefore, b.swept, b.orphansAfter, b.pending, b.slots, b.reserved, time.Since(began).Round(time.Second))
	t.Log(line)
	fmt.Println(line)
	switch {
	case missing > 0, completed != len(reqs), b.billed != crashGen, b.charged != crashProduct, b.double+b.stray > 0,
		b.orphansAfter > 0, b.pending > 0, b.slots > 0, b.reserved > 0, b.err != nil:
		t.Errorf("crash drill failed: %s (books: %v)", line, b.err)
	}
}

// crashWant is a created job's status: 201 generation, 202 product.
func crashWant(r *crashReq) int {
	if r.product {
		return http.StatusAccepted
	}
	return http.StatusCreated
}

// crashPost sends r to base once and returns the status and, for a job,
// its id. A network error (the server died) is an error.
func crashPost(base string, r *crashReq, timeout time.Duration) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", base+r.path, bytes.NewReader(r.body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("x-api-key", r.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, "", err
	}
	var m struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &m)
	return res.StatusCode, m.ID, nil
}

// crashPNG is a w×h PNG that differs by i.
func crashPNG(t *testing.T, w, h, i int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), uint8(i * 23), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// books is what the crash drill reads from the stopped server's buckets.
type books struct {
	billed, charged, double, stray int
	orphansBefore, swept           int
	orphansAfter, pending          int
	slots                          int
	reserved                       int64
	err                            error
}

var inputRe = regexp.MustCompile(`/objects/(?:jobs|product-jobs)/([^/]+)/inputs/`)

// crashBooks opens the data folder's NATS store (the server stopped), and
// counts charges, orphaned inline inputs before and after a sweep
// (api.Server.SweepPending), pending records, in-flight slots and
// reserved credits.
func crashBooks(t *testing.T, data, acctID, org string, reqs []*crashReq) (b books) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns, err := queue.StartEmbedded(ctx, queue.EmbeddedConfig{StoreDir: filepath.Join(data, "nats"), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	nc, err := queue.Connect(ctx, queue.ConnConfig{URL: ns.ClientURL(), Name: "crash-books"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	q, err := queue.Open(ctx, nc, queue.Config{})
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
	st, err := store.NewLocal(filepath.Join(data, "store"), "http://127.0.0.1:1", []byte("crash-books-secret-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(ctx, api.Config{Queue: q, JetStream: js, Store: st, Accounts: acc, Logger: zap.NewNop(),
		SubmitRetryFor: 100 * time.Millisecond, PendingGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]bool{}
	for _, r := range reqs {
		if r.id != "" {
			ours[r.id] = true
		}
	}
	orphans := func() int {
		n := 0
		_ = filepath.WalkDir(filepath.Join(data, "store"), func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return nil
			}
			m := inputRe.FindStringSubmatch(filepath.ToSlash(p))
			if m == nil {
				return nil
			}
			if _, _, err := q.Get(ctx, m[1]); errors.Is(err, queue.ErrNotFound) {
				n++
			} else if !ours[m[1]] {
				n++ // a job nobody was answered with: a ghost
			}
			return nil
		})
		return n
	}
	b.orphansBefore = orphans()
	if b.swept, err = srv.SweepPending(ctx); err != nil {
		b.err = errors.Join(b.err, err)
	}
	b.orphansAfter = orphans()
	if pl, err := js.KeyValue(ctx, api.BucketPending); err == nil {
		if keys, err := pl.ListKeys(ctx); err == nil {
			for range keys.Keys() {
				b.pending++
			}
		}
	}
	if b.slots, err = acc.InFlight(ctx, acctID); err != nil {
		b.err = errors.Join(b.err, err)
	}
	if b.slots > 0 { // what holds them: the account's in-flight entries and aggregate
		if kv, err := js.KeyValue(ctx, account.BucketInFlight); err == nil {
			if keys, err := kv.ListKeys(ctx); err == nil {
				for k := range keys.Keys() {
					if e, err := kv.Get(ctx, k); err == nil && strings.HasPrefix(k, acctID+".") {
						t.Logf("in flight: %s = %s", k, e.Value())
					}
				}
			}
		}
	}
	c, err := acc.Credits(ctx, org)
	if err != nil {
		b.err = errors.Join(b.err, err)
	}
	b.reserved = c.Reserved

	// Generation: one charge entry per completed job, none for others.
	usage, err := js.KeyValue(ctx, account.BucketUsage)
	if err != nil {
		b.err = errors.Join(b.err, err)
		return b
	}
	keys, err := usage.ListKeys(ctx)
	if err != nil {
		b.err = errors.Join(b.err, err)
		return b
	}
	var charges, period float64
	for k := range keys.Keys() {
		e, err := usage.Get(ctx, k)
		if err != nil {
			b.err = errors.Join(b.err, err)
			continue
		}
		var v struct {
			Cost  float64 `json:"cost"`
			Usage float64 `json:"usage"`
		}
		_ = json.Unmarshal(e.Value(), &v)
		switch rest, _ := strings.CutPrefix(k, acctID+"."); {
		case strings.HasPrefix(rest, "charge."):
			charges += v.Cost
			if ours[strings.TrimPrefix(rest, "charge.")] {
				b.billed++
			} else {
				b.stray++
			}
		case strings.HasPrefix(rest, "period."):
			period += v.Usage
		}
	}
	// A job billed twice shows as period usage over the charge ledger.
	if diff := period - charges; diff > 1e-6 || diff < -1e-6 {
		b.double++
	}
	// Product: every job's ledger entry charged; entries of other jobs
	// (the dead submissions') refunded, never charged.
	for _, r := range reqs {
		if !r.product || r.id == "" {
			continue
		}
		if e, err := acc.Ledger(ctx, r.id); err == nil && e.State == account.LedgerCharged {
			b.charged++
		}
	}
	credits, err := js.KeyValue(ctx, account.BucketCredits)
	if err != nil {
		b.err = errors.Join(b.err, err)
		return b
	}
	if keys, err := credits.ListKeys(ctx); err == nil {
		for k := range keys.Keys() {
			id, ok := strings.CutPrefix(k, "job.")
			if !ok || ours[id] {
				continue
			}
			if e, err := acc.Ledger(ctx, id); err == nil && e.Charged > 0 {
				b.stray++
			}
		}
	}
	return b
}

// buildVFX builds bin/vfx into dir, or takes VFX_DRILL_BIN (make
// crash-drill builds it).
func buildVFX(t *testing.T, dir string) string {
	t.Helper()
	if p := os.Getenv("VFX_DRILL_BIN"); p != "" {
		return p
	}
	vfx, _ := buildBinaries(t, dir)
	return vfx
}
