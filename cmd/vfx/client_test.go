package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/job"
)

const testAdminToken = "0123456789abcdef-client"

// testServer is a `vfx serve` run in-process on a free loopback port.
type testServer struct {
	url, devKey, devAccount string
}

// serveStartTimeout bounds how long a test waits for `vfx serve` to
// print its listening line. serve loads the segmentation model (the fp32
// rewrite and ONNX Runtime's session) before it listens: seconds alone,
// but about 30 s on two cores shared with the other packages' tests
// (`make test` runs them in parallel; a CI run failed TestWebPage at a
// 30 s bound with the model loaded 70 ms before it). A bound, not a speed
// test.
const serveStartTimeout = 2 * time.Minute

// startServe runs `vfx serve` until the test ends and returns its address
// and the development key and account it prints; extra flags follow the
// test's own.
func startServe(t *testing.T, extra ...string) testServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	// The data folder is made before serve starts, so that its removal
	// (a cleanup, run last-registered-first) comes after serve has stopped:
	// made inside the goroutine it could be registered after the stop and
	// removed under a running NATS ("directory not empty").
	data := t.TempDir()
	go func() {
		done <- run(ctx, append([]string{"serve", "--listen", "127.0.0.1:0", "--data", data, "--admin-token", testAdminToken,
			"--concurrency", "2"}, extra...), &out, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exit %d: %s", code, errOut.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	urlRe := regexp.MustCompile(`listening on (http://\S+)`)
	devRe := regexp.MustCompile(`development account (\S+) .*\n(?:.*\n)*api key \(shown once\): (\S+)`)
	deadline := time.Now().Add(serveStartTimeout)
	for !urlRe.MatchString(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no listening line: %s\n%s", out.String(), errOut.String())
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("serve exited %d: %s", code, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	m := devRe.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no development key printed: %s", out.String())
	}
	return testServer{url: urlRe.FindStringSubmatch(out.String())[1], devAccount: m[1], devKey: m[2]}
}

// cli runs a command line with no VFX_* variables from the environment
// that the test does not set itself.
func cli(ctx context.Context, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// jsonOf decodes a command's JSON output.
func jsonOf(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not JSON: %v: %q", err, s)
	}
	return m
}

// TestClientE2E drives `vfx submit`, `vfx jobs` and `vfx admin` against
// a real `vfx serve` over loopback HTTP.
func TestClientE2E(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, k := range []string{"VFX_API_URL", "VFX_API_KEY", "VFX_ADMIN_TOKEN"} {
		t.Setenv(k, "")
	}
	srv := startServe(t)
	admin := []string{"--server", srv.url, "--admin-token", testAdminToken}

	// An organization key for the dev account: no read limit, so polling
	// every 0.5-2 s is fine (personal keys read 5 times a minute).
	code, out, errOut := cli(ctx, append([]string{"admin", "keys", "create", srv.devAccount, "--kind", "organization"}, admin...)...)
	if code != 0 {
		t.Fatalf("keys create: %d %s", code, errOut)
	}
	orgKey, _ := jsonOf(t, out)["key"].(string)
	if orgKey == "" {
		t.Fatalf("no key: %s", out)
	}
	conn := []string{"--server", srv.url, "--key", orgKey}

	fx, err := bench.WriteFixture(ctx, t.TempDir(), bench.FixtureOptions{Width: 160, Height: 96, Frames: 2})
	if err != nil {
		t.Fatal(err)
	}
	var jobID string

	t.Run("submit image", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		code, out, errOut := cli(ctx, append([]string{"submit", "--type", "image", "--source", fx.Still, "--alpha-mode", "custom",
			"--alpha", fx.StillMatte, "--reference", fx.Reference, "--prompt", "neon night", "--seed", "7", "--out", dir}, conn...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "vfx_") || !strings.HasPrefix(lines[1], lines[0]+" completed in ") ||
			!strings.Contains(lines[1], "seed 7") {
			t.Fatalf("stdout %q", out)
		}
		jobID = lines[0]
		if !strings.Contains(errOut, jobID+": completed") {
			t.Errorf("no status lines on stderr: %q", errOut)
		}
		for _, name := range []string{"render", "source", "alpha"} {
			p := filepath.Join(dir, name+".png")
			if !strings.Contains(lines[1], p) {
				t.Errorf("summary lacks %s: %q", p, lines[1])
			}
			info, err := codec.Probe(ctx, codec.FileInput(p), codec.Limits{})
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if info.Kind != codec.KindImage || info.Width != 160 || info.Height != 96 {
				t.Errorf("%s: %+v", p, info)
			}
		}
	})

	t.Run("submit foreground", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		code, out, errOut := cli(ctx, append([]string{"submit", "--type", "image", "--source", fx.Still, "--alpha-mode", "custom",
			"--alpha", fx.StillMatte, "--prompt", "warm key light", "--foreground", "--out", dir}, conn...)...)
		fg := filepath.Join(dir, "foreground.png")
		if code != 0 || !strings.Contains(out, fg) {
			t.Fatalf("exit %d, %q, %q; want %s among the outputs", code, out, errOut, fg)
		}
		info, err := codec.Probe(ctx, codec.FileInput(fg), codec.Limits{})
		if err != nil || !info.HasAlpha || info.Width != 160 {
			t.Errorf("%s: %+v, %v; want a 160-wide image with alpha", fg, info, err)
		}
	})

	// --placement: sent as the placement extension; the render differs
	// from the same job without it; the API's limits answer with their
	// code, a malformed value is a usage error before anything is sent.
	t.Run("submit placement", func(t *testing.T) {
		render := func(extra ...string) (int, []byte, string) {
			dir := filepath.Join(t.TempDir(), "out")
			args := append([]string{"submit", "--type", "image", "--source", fx.Still, "--alpha-mode", "custom",
				"--alpha", fx.StillMatte, "--prompt", "warm key light", "--seed", "4", "--out", dir}, extra...)
			code, _, errOut := cli(ctx, append(args, conn...)...)
			b, _ := os.ReadFile(filepath.Join(dir, "render.png"))
			return code, b, errOut
		}
		c0, plain, e0 := render()
		c1, placed, e1 := render("--placement", "0.5,0.2,-0.1")
		if c0 != 0 || c1 != 0 || len(plain) == 0 || bytes.Equal(plain, placed) {
			t.Fatalf("exit %d (%s) and %d (%s); the renders equal: %v", c0, e0, c1, e1, bytes.Equal(plain, placed))
		}
		if code, _, e := render("--placement", "4.5", "--no-wait"); code != 1 || !strings.Contains(e, "INVALID_PLACEMENT") || !strings.Contains(e, "placement.scale 4.5") {
			t.Errorf("--placement 4.5: exit %d, %q; want the API's INVALID_PLACEMENT", code, e)
		}
		if code, _, e := render("--placement", "1,2"); code != 2 || !strings.Contains(e, "--placement") {
			t.Errorf("--placement 1,2: exit %d, %q; want a usage error", code, e)
		}
	})

	// --output-format exr --frames: the API renders the range and returns
	// each pass sequence as a ZIP; a range past the source's last frame is
	// refused at submission, an unknown format before anything is sent.
	t.Run("submit exr frames", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		code, out, errOut := cli(ctx, append([]string{"submit", "--type", "video", "--source", fx.Source, "--alpha-mode", "custom",
			"--alpha", fx.Matte, "--prompt", "warm key light", "--output-format", "exr", "--frames", "1-1", "--out", dir}, conn...)...)
		if code != 0 {
			t.Fatalf("exit %d, %q, %q", code, out, errOut)
		}
		for _, pass := range job.EXRPasses {
			p := filepath.Join(dir, job.OutputEXR(pass)+".zip")
			zr, err := zip.OpenReader(p)
			if err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			var names []string
			for _, f := range zr.File {
				names = append(names, f.Name)
			}
			zr.Close()
			if want := pass + "/" + pass + ".1001.exr"; len(names) != 1 || names[0] != want {
				t.Errorf("%s holds %q, want [%s]: one frame, numbered 1001", p, names, want)
			}
		}
		if info, err := codec.Probe(ctx, codec.FileInput(filepath.Join(dir, "render.mp4")), codec.Limits{}); err != nil || info.Frames != 1 {
			t.Errorf("render.mp4: %+v, %v; want the one frame of --frames 1-1", info, err)
		}
		code, _, errOut = cli(ctx, append([]string{"submit", "--type", "video", "--source", fx.Source, "--alpha-mode", "fill",
			"--prompt", "x", "--frames", "1-2", "--no-wait"}, conn...)...)
		if code != 1 || !strings.Contains(errOut, "INVALID_FRAME_RANGE") || !strings.Contains(errOut, "the source has 2 frames (0..1)") {
			t.Errorf("--frames 1-2 of 2 frames: exit %d, %q", code, errOut)
		}
		if code, _, errOut := cli(ctx, append([]string{"submit", "--type", "image", "--source", fx.Still, "--alpha-mode", "fill",
			"--prompt", "x", "--output-format", "dpx"}, conn...)...); code != 2 || !strings.Contains(errOut, `--output-format "dpx": want mp4 or exr`) {
			t.Errorf("--output-format dpx: exit %d, %q", code, errOut)
		}
	})

	// A TAR of PNG frames uploaded as the source renders through the API
	// (the worker extracts it and reads it as an image sequence).
	t.Run("submit archive", func(t *testing.T) {
		dir := t.TempDir()
		_, _, tarPath := writeFrameArchives(t, dir, 4, "")
		out := filepath.Join(dir, "out")
		code, stdout, errOut := cli(ctx, append([]string{"submit", "--type", "video", "--source", tarPath, "--alpha-mode", "fill",
			"--prompt", "warm key light", "--out", out}, conn...)...)
		if code != 0 {
			t.Fatalf("exit %d, %q, %q", code, stdout, errOut)
		}
		if info, err := codec.Probe(ctx, codec.FileInput(filepath.Join(out, "render.mp4")), codec.Limits{}); err != nil || info.Frames != 4 || info.Width != 64 {
			t.Errorf("render.mp4: %+v, %v; want the archive's 4 frames at 64x48", info, err)
		}
	})

	t.Run("submit no-wait", func(t *testing.T) {
		code, out, errOut := cli(ctx, append([]string{"submit", "--type", "image", "--source", fx.Still, "--alpha-mode", "fill",
			"--prompt", "x", "--no-wait"}, conn...)...)
		if code != 0 || !regexp.MustCompile(`^vfx_\w+\n$`).MatchString(out) || errOut != "" {
			t.Fatalf("exit %d, %q, %q", code, out, errOut)
		} // Then `vfx jobs download ID --out DIR`, polled until the job is done.
		id, dir := strings.TrimSpace(out), filepath.Join(t.TempDir(), "dl")
		deadline := time.Now().Add(90 * time.Second)
		for {
			code, out, errOut = cli(ctx, append([]string{"jobs", "download", id, "--out", dir}, conn...)...)
			if code == 0 || !strings.Contains(errOut, "not completed") || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if code != 0 {
			t.Fatalf("jobs download: exit %d, %q", code, errOut)
		}
		for _, name := range []string{"render.png", "source.png", "alpha.png"} {
			if p := filepath.Join(dir, name); !strings.Contains(out, p) {
				t.Errorf("jobs download printed %q, not %s", out, p)
			} else if _, err := os.Stat(p); err != nil {
				t.Error(err)
			}
		}
		if code, _, errOut := cli(ctx, append([]string{"jobs", "download", "vfx_nope"}, conn...)...); code == 0 || !strings.Contains(errOut, "JOB_NOT_FOUND") {
			t.Errorf("unknown job: exit %d, %q", code, errOut)
		}
	})

	t.Run("submit errors", func(t *testing.T) {
		junk := filepath.Join(t.TempDir(), "junk.png")
		if err := os.WriteFile(junk, []byte("not an image"), 0o644); err != nil {
			t.Fatal(err)
		}
		txt := filepath.Join(t.TempDir(), "notes.txt")
		if err := os.WriteFile(txt, []byte("hello"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"--type", "image", "--source", junk, "--alpha-mode", "fill", "--prompt", "x"}, 1, "INVALID_FILE_FORMAT: "},
			{[]string{"--type", "image", "--source", txt, "--alpha-mode", "fill", "--prompt", "x"}, 1, "INVALID_FILE_FORMAT: upload: "},
			{[]string{"--type", "image", "--source", fx.Still, "--alpha-mode", "fill", "--prompt", "x", "--seed", "-1"}, 1, "INVALID_SEED: "},
			{[]string{"--type", "image", "--source", fx.Still, "--alpha-mode", "custom", "--prompt", "x"}, 1, "MISSING_ALPHA: "},
			{[]string{"--type", "image", "--source", fx.Still, "--alpha-mode", "fill", "--prompt", "x", "--max-resolution", "999"}, 1, "INVALID_MAX_RESOLUTION: "},
			{[]string{"--type", "image", "--alpha-mode", "fill"}, 2, "missing required flag --source;"},
		} {
			code, out, errOut := cli(ctx, append(append([]string{"submit"}, c.args...), conn...)...)
			if code != c.code || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 || out != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", c.args, code, out, errOut, c.code, c.want)
			}
		}
		code, _, errOut := cli(ctx, "submit", "--type", "image", "--source", fx.Still, "--alpha-mode", "fill", "--prompt", "x",
			"--server", srv.url, "--key", "vfx_sk_wrong")
		if code != 1 || !strings.Contains(errOut, "INVALID_API_KEY") {
			t.Errorf("bad key: exit %d, %q", code, errOut)
		}
	})

	t.Run("jobs list and get", func(t *testing.T) {
		if jobID == "" {
			t.Skip("no job submitted")
		}
		code, out, errOut := cli(ctx, append([]string{"jobs", "list", "--limit", "1", "--json"}, conn...)...)
		if code != 0 {
			t.Fatalf("list: %d %s", code, errOut)
		}
		page := jsonOf(t, out)
		jobs, _ := page["jobs"].([]any)
		if len(jobs) != 1 || page["next_page_token"] == nil || !strings.Contains(out, "\n  \"jobs\"") {
			t.Fatalf("list: %s", out)
		}
		code, out2, errOut := cli(ctx, append([]string{"jobs", "list", "--page-token", page["next_page_token"].(string), "--limit", "100", "--json"}, conn...)...)
		if code != 0 || !strings.Contains(out2, jobID) {
			t.Fatalf("second page: %d %s %s", code, out2, errOut)
		}
		// Without --json: the table, one row per job, with the next page's command.
		code, table, errOut := cli(ctx, append([]string{"jobs", "list", "--limit", "1"}, conn...)...)
		if lines := strings.Split(strings.TrimSpace(table), "\n"); code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") ||
			!strings.HasPrefix(lines[1], jobs[0].(map[string]any)["id"].(string)+" ") || !strings.HasPrefix(lines[2], "more: vfx jobs list --page-token ") {
			t.Fatalf("table: %d %q %s", code, table, errOut)
		}
		// Flags may follow the id.
		code, out, errOut = cli(ctx, append([]string{"jobs", "get", jobID}, conn...)...)
		if code != 0 {
			t.Fatalf("get: %d %s", code, errOut)
		}
		job := jsonOf(t, out)
		if job["id"] != jobID || job["status"] != "completed" || job["output"] == nil {
			t.Fatalf("get: %s", out)
		}
		code, _, errOut = cli(ctx, append([]string{"jobs", "get", "vfx_nosuchjob"}, conn...)...)
		if code != 1 || !strings.HasPrefix(errOut, "vfx jobs: JOB_NOT_FOUND: ") || strings.Count(errOut, "\n") != 1 {
			t.Fatalf("get unknown: %d %q", code, errOut)
		}
		if code, _, _ := cli(ctx, append([]string{"jobs", "get"}, conn...)...); code != 2 {
			t.Fatalf("get without id: exit %d", code)
		}
	})

	t.Run("admin account and key lifecycle", func(t *testing.T) {
		code, out, errOut := cli(ctx, append([]string{"admin", "accounts", "create", "--email", "ops@example.com",
			"--billing-type", "postpaid", "--spending-limit", "250"}, admin...)...)
		if code != 0 {
			t.Fatalf("accounts create: %d %s", code, errOut)
		}
		acct := jsonOf(t, out)
		id, _ := acct["id"].(string)
		if id == "" || acct["email"] != "ops@example.com" || acct["billing_type"] != "postpaid" || acct["spending_limit"] != 250.0 {
			t.Fatalf("account: %s", out)
		}
		code, out, errOut = cli(ctx, append([]string{"admin", "accounts", "update", id, "--read-rpm", "50", "--prepaid-balance", "12.5"}, admin...)...)
		if code != 0 {
			t.Fatalf("accounts update: %d %s", code, errOut)
		}
		upd := jsonOf(t, out)
		if rl, _ := upd["rate_limits"].(map[string]any); rl["read_rpm"] != 50.0 || upd["prepaid_balance"] != 12.5 {
			t.Fatalf("update: %s", out)
		}
		code, out, errOut = cli(ctx, append([]string{"admin", "keys", "create", id}, admin...)...)
		if code != 0 {
			t.Fatalf("keys create: %d %s", code, errOut)
		}
		k := jsonOf(t, out)
		keyID, secret := k["id"].(string), k["key"].(string)
		if k["kind"] != "personal" || keyID == "" || secret == "" {
			t.Fatalf("key: %s", out)
		}
		code, out, errOut = cli(ctx, "jobs", "list", "--server", srv.url, "--key", secret, "--json")
		if code != 0 || !strings.Contains(out, `"jobs": []`) {
			t.Fatalf("new key list: %d %s %s", code, out, errOut)
		}
		code, out, errOut = cli(ctx, append([]string{"admin", "webhook-secret", id}, admin...)...)
		if s, _ := jsonOf(t, out)["secret"].(string); code != 0 || !strings.HasPrefix(s, "whsec_") {
			t.Fatalf("webhook-secret: %d %s %s", code, out, errOut)
		}
		code, out, errOut = cli(ctx, append([]string{"admin", "keys", "revoke", keyID}, admin...)...)
		if code != 0 || jsonOf(t, out)["revoked"] != true {
			t.Fatalf("revoke: %d %s %s", code, out, errOut)
		}
		code, _, errOut = cli(ctx, "jobs", "list", "--server", srv.url, "--key", secret)
		if code != 1 || !strings.HasPrefix(errOut, "vfx jobs: INVALID_API_KEY: ") || !strings.Contains(errOut, "(HTTP 401)") {
			t.Fatalf("revoked key: %d %q", code, errOut)
		}
		code, _, errOut = cli(ctx, "admin", "webhook-secret", id, "--server", srv.url, "--admin-token", "wrong-token-0123456789")
		if code != 1 || !strings.Contains(errOut, "UNAUTHORIZED") {
			t.Fatalf("wrong operator token: %d %q", code, errOut)
		}
		if code, _, errOut = cli(ctx, "admin", "webhook-secret", id, "--server", srv.url); code != 2 || !strings.Contains(errOut, "VFX_ADMIN_TOKEN") {
			t.Fatalf("no operator token: %d %q", code, errOut)
		}
		code, _, errOut = cli(ctx, append([]string{"admin", "accounts", "create", "--email", "ops@example.com"}, admin...)...)
		if code != 1 || !strings.Contains(errOut, "ACCOUNT_EXISTS") {
			t.Fatalf("duplicate account: %d %q", code, errOut)
		}
	})
}

// TestSubmitRetries checks, against a scripted server, that `vfx submit`
// resends a submission after a 5xx with the same idempotency key, waits
// out a 429's Retry-After while polling, and reports a failed job's error.
func TestSubmitRetries(t *testing.T) {
	var posts, gets atomic.Int32
	var firstKey, secondKey atomic.Value
	var fail atomic.Bool
	var srvURL string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/vfx/generations":
			var body map[string]any
			_ = json.NewDecoder(r.Body).Decode(&body)
			if posts.Add(1) == 1 {
				firstKey.Store(body["idempotency_key"])
				w.WriteHeader(503)
				_, _ = io.WriteString(w, `{"error":{"code":"SERVICE_UNAVAILABLE","message":"try again"}}`)
				return
			}
			secondKey.Store(body["idempotency_key"])
			w.WriteHeader(201)
			_, _ = io.WriteString(w, `{"id":"vfx_test","status":"in_queue","seed":3}`)
		case r.Method == "GET" && r.URL.Path == "/v1/vfx/generations/vfx_test":
			switch n := gets.Add(1); {
			case n == 1:
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(429)
				_, _ = io.WriteString(w, `{"error":{"code":"RATE_LIMIT_EXCEEDED","message":"slow down"}}`)
			case fail.Load():
				_, _ = io.WriteString(w, `{"id":"vfx_test","status":"failed","seed":3,"error":"SOURCE_UNREACHABLE: gone"}`)
			default:
				_, _ = io.WriteString(w, `{"id":"vfx_test","status":"completed","progress":100,"seed":3,"output":{"render":"`+
					srvURL+`/files/r.mp4?sig=1","source":"`+srvURL+`/files/s.mp4?sig=2","alpha":"`+srvURL+`/files/a.mp4?sig=3"}}`)
			}
		case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/files/"):
			if r.Header.Get("x-api-key") != "" {
				t.Errorf("API key sent to a signed URL")
			}
			_, _ = io.WriteString(w, "data of "+r.URL.Path)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	srvURL = srv.URL
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	start := time.Now()
	code, out, errOut := cli(ctx, "submit", "--server", srv.URL, "--key", "k", "--type", "video", "--source", "vfx://uploads/upload_x/a.mp4",
		"--alpha-mode", "auto", "--prompt", "p", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if posts.Load() != 2 || firstKey.Load() == nil || firstKey.Load() != secondKey.Load() {
		t.Errorf("posts %d, keys %v %v", posts.Load(), firstKey.Load(), secondKey.Load())
	}
	if time.Since(start) < time.Second || !strings.Contains(errOut, "rate limited, next read in 1 s") {
		t.Errorf("Retry-After not honoured: %s, %q", time.Since(start), errOut)
	}
	for _, n := range []string{"render", "source", "alpha"} {
		p := filepath.Join(dir, n+".mp4")
		if b, err := os.ReadFile(p); err != nil || !strings.HasPrefix(string(b), "data of /files/") {
			t.Errorf("%s: %v %q", p, err, b)
		}
		if !strings.Contains(out, p) {
			t.Errorf("summary lacks %s: %q", p, out)
		}
	}
	fail.Store(true)
	gets.Store(1)
	code, _, errOut = cli(ctx, "submit", "--server", srv.URL, "--key", "k", "--type", "video", "--source", "https://example.com/a.mp4",
		"--alpha-mode", "auto", "--prompt", "p", "--idempotency-key", "fixed", "--out", dir)
	if code != 1 || !strings.Contains(errOut, "vfx submit: job vfx_test failed: SOURCE_UNREACHABLE: gone\n") {
		t.Fatalf("failed job: exit %d, %q", code, errOut)
	}
}

func TestParseInterspersed(t *testing.T) {
	for _, c := range []struct {
		args, pos []string
		limit     int
	}{
		{[]string{"ID", "--limit", "3"}, []string{"ID"}, 3},
		{[]string{"--limit", "3", "A", "B"}, []string{"A", "B"}, 3},
		{[]string{"A", "--", "--limit"}, []string{"A", "--limit"}, 0},
		{nil, nil, 0},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		limit := fs.Int("limit", 0, "")
		pos, err := parseInterspersed(fs, c.args)
		if err != nil || !reflect.DeepEqual(pos, c.pos) || *limit != c.limit {
			t.Errorf("%v: %v %d %v", c.args, pos, *limit, err)
		}
	}
}
