package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/store/storetest"
)

func TestAPIFlags(t *testing.T) {
	base := map[string]string{"VFX_NATS_URL": "nats://n1:4222", "VFX_ADMIN_TOKEN": "0123456789abcdef",
		"VFX_S3_ENDPOINT": "minio:9000", "VFX_S3_BUCKET": "envbucket", "VFX_S3_SECRET_KEY": "sk"}
	cfg, err := parseAPIFlags(nil, io.Discard, envMap(base))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.listen != "127.0.0.1:8080" || cfg.natsURL != "nats://n1:4222" || cfg.adminToken != "0123456789abcdef" ||
		cfg.storeKind != "s3" || cfg.s3.Endpoint != "minio:9000" || cfg.s3.Bucket != "envbucket" || cfg.s3.SecretKey != "sk" ||
		len(cfg.webhookDelays) != 4 || cfg.webhookDelays[3] != 2*time.Minute || cfg.shutdownTimeout != 15*time.Second ||
		cfg.queue.AckWait != time.Minute || cfg.queue.MaxDeliver != 5 || cfg.replicas != 1 ||
		cfg.allowPrivateNetworks || cfg.allowHTTPCallbacks || cfg.allowHTTPSources || cfg.name == "" {
		t.Errorf("defaults: %+v", cfg)
	}

	// Flags override their variables; the S3 flags override VFX_S3_*.
	cfg, err = parseAPIFlags([]string{"--listen", ":9000", "--s3-bucket", "flagbucket", "--allow-private-networks",
		"--allow-http-callbacks", "--webhook-retry-delays", "10ms,20ms", "--base-url", "https://api.example.com/",
		"--ack-wait", "5s", "--nats-token", "tok"}, io.Discard, envMap(base))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.listen != ":9000" || cfg.s3.Bucket != "flagbucket" || cfg.s3.Endpoint != "minio:9000" || !cfg.allowPrivateNetworks ||
		!cfg.allowHTTPCallbacks || len(cfg.webhookDelays) != 2 || cfg.baseURL != "https://api.example.com" ||
		cfg.queue.AckWait != 5*time.Second || cfg.natsToken != "tok" {
		t.Errorf("flags: %+v", cfg)
	}

	// Variables alone, local store.
	env := map[string]string{"VFX_NATS_URL": "nats://n1:4222", "VFX_ADMIN_TOKEN": "0123456789abcdef", "VFX_STORE": "local",
		"VFX_STORE_DIR": "/shared/store", "VFX_ALLOW_HTTP_CALLBACKS": "1", "VFX_WEBHOOK_RETRY_DELAYS": "1s"}
	cfg, err = parseAPIFlags(nil, io.Discard, envMap(env))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.storeKind != "local" || cfg.storeDir != "/shared/store" || !cfg.allowHTTPCallbacks || len(cfg.webhookDelays) != 1 {
		t.Errorf("env: %+v", cfg)
	}

	without := func(m map[string]string, keys ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for _, k := range keys {
			delete(out, k)
		}
		return out
	}
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no nats", nil, without(base, "VFX_NATS_URL"), "--nats-url"},
		{"no admin token", nil, without(base, "VFX_ADMIN_TOKEN"), "--admin-token"},
		{"short admin token", []string{"--admin-token", "short"}, base, "16 characters"},
		{"s3 without endpoint", nil, without(base, "VFX_S3_ENDPOINT"), "--store s3"},
		{"local without dir", []string{"--store", "local"}, base, "--store-dir"},
		{"unknown store", []string{"--store", "gcs"}, base, "want s3 or local"},
		{"bad delays", []string{"--webhook-retry-delays", "soon"}, base, "--webhook-retry-delays"},
		{"bad env bool", nil, without(base), ""},
		{"extra argument", []string{"extra"}, base, "unexpected argument"},
		{"bad ack wait", []string{"--ack-wait", "10ms"}, base, "--ack-wait"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := c.env
			if c.name == "bad env bool" {
				e["VFX_ALLOW_PRIVATE_NETWORKS"] = "maybe"
				c.want = "VFX_ALLOW_PRIVATE_NETWORKS"
			}
			_, err := parseAPIFlags(c.args, io.Discard, envMap(e))
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(ue.msg, c.want) {
				t.Fatalf("got %v, want a usage error naming %q", err, c.want)
			}
		})
	}
}

// TestAPIExternal runs `vfx api` in-process against an embedded NATS
// server and a real MinIO, as it runs in production against a NATS
// cluster and S3: an operator creates an account and an organisation key,
// a client uploads a PNG through the presigned S3 PUT, submits a job and
// reads it in the queue; a `vfx worker` on the same NATS and bucket renders
// it; the outputs download from MinIO; cancelling (as SIGTERM does) stops
// the API with exit code 0.
func TestAPIExternal(t *testing.T) {
	endpoint, ak, sk, _, _ := storetest.StartMinIO(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	ns, err := queue.StartEmbedded(sctx, queue.EmbeddedConfig{StoreDir: t.TempDir(), Port: -1})
	scancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	s3Args := []string{"--store", "s3", "--s3-endpoint", "http://" + endpoint, "--s3-bucket", "vfx-api-test",
		"--s3-access-key", ak, "--s3-secret-key", sk, "--s3-create-bucket", "true"}
	const admin = "0123456789abcdef-admin"

	var out, errOut syncBuffer
	apiCtx, stopAPI := context.WithCancel(ctx)
	defer stopAPI()
	done := make(chan int, 1)
	go func() {
		args := append([]string{"api", "--listen", "127.0.0.1:0", "--nats-url", ns.ClientURL(), "--admin-token", admin,
			"--webhook-retry-delays", "50ms", "--shutdown-timeout", "5s"}, s3Args...)
		done <- run(apiCtx, args, &out, &errOut)
	}()
	urlRe := regexp.MustCompile(`vfx api listening on (http://\S+)`)
	deadline := time.Now().Add(60 * time.Second)
	for !urlRe.MatchString(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no listening line: %s\n%s", out.String(), errOut.String())
		}
		select {
		case code := <-done:
			t.Fatalf("exited %d: %s", code, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	base := urlRe.FindStringSubmatch(out.String())[1]

	call := func(method, path string, hdr map[string]string, body any, want int) map[string]any {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequestWithContext(ctx, method, base+path, rd)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if res.StatusCode != want {
			t.Fatalf("%s %s: %d %s (want %d)", method, path, res.StatusCode, raw, want)
		}
		var m map[string]any
		if len(raw) > 0 && json.Unmarshal(raw, &m) != nil {
			return map[string]any{"text": string(raw)}
		}
		return m
	}
	if got := call("GET", "/healthz", nil, nil, 200)["text"]; got != "ok\n" {
		t.Fatalf("healthz %q", got)
	}
	if got := call("GET", "/readyz", nil, nil, 200)["text"]; got != "ready\n" {
		t.Fatalf("readyz %q", got)
	}
	// The web page, with the S3 endpoint's origin in its CSP (the page
	// PUTs uploads there and loads the outputs from there).
	page, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	if csp := page.Header.Get("Content-Security-Policy"); page.StatusCode != 200 || !strings.Contains(csp, "connect-src 'self' http://"+endpoint+";") {
		t.Fatalf("GET /: %d, CSP %q", page.StatusCode, csp)
	}
	call("GET", "/v1/account/info", nil, nil, 401)
	call("POST", "/admin/v1/accounts", map[string]string{"Authorization": "Bearer wrong-token-0123456"}, map[string]any{"email": "x@example.com"}, 401)
	adm := map[string]string{"Authorization": "Bearer " + admin}
	acct := call("POST", "/admin/v1/accounts", adm, map[string]any{"email": "ops@example.com", "billing_type": "postpaid"}, 201)
	k := call("POST", "/admin/v1/accounts/"+acct["id"].(string)+"/keys", adm, map[string]any{"kind": "organization"}, 201)
	key := map[string]string{"x-api-key": k["key"].(string)}

	// The upload URL is a presigned S3 PUT that plain net/http can use.
	up := call("POST", "/v1/uploads", key, map[string]any{"filename": "plate.png"}, 200)
	upURL := up["upload_url"].(string)
	if !strings.HasPrefix(upURL, "http://"+endpoint+"/vfx-api-test/") || !strings.Contains(upURL, "X-Amz-Signature=") {
		t.Fatalf("upload_url is not a presigned S3 URL: %s", upURL)
	}
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for y := range 48 {
		for x := range 64 {
			img.Set(x, y, color.RGBA{uint8(x * 4), uint8(y * 5), 90, 255})
		}
	}
	var pb bytes.Buffer
	if err := png.Encode(&pb, img); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, "PUT", upURL, bytes.NewReader(pb.Bytes()))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("put upload: %d", res.StatusCode)
	}

	job := call("POST", "/v1/vfx/generations", key, map[string]any{"generation_type": "image", "source_uri": up["vfx_uri"],
		"alpha_mode": "fill", "prompt": "golden hour"}, 201)
	id := job["id"].(string)
	if got := call("GET", "/v1/vfx/generations/"+id, key, nil, 200)["status"]; got != "in_queue" {
		t.Fatalf("status before any worker: %v", got)
	}

	// A worker on the same NATS and bucket renders it.
	workerDone := make(chan int, 1)
	wctx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	var wOut, wErr syncBuffer
	go func() {
		args := append([]string{"worker", "--nats-url", ns.ClientURL(), "--http-addr", "off", "--preset", "ultrafast",
			"--cpu-workers", "2", "--data-dir", t.TempDir(), "--temp-dir", t.TempDir(), "--drain-timeout", "5s"}, s3Args...)
		workerDone <- run(wctx, args, &wOut, &wErr)
	}()
	deadline = time.Now().Add(60 * time.Second)
	for job["status"] != "completed" && job["status"] != "failed" {
		if time.Now().After(deadline) {
			t.Fatalf("job not finished: %v\nworker: %s", job, wErr.String())
		}
		time.Sleep(200 * time.Millisecond)
		job = call("GET", "/v1/vfx/generations/"+id, key, nil, 200)
	}
	if job["status"] != "completed" {
		t.Fatalf("job %v\nworker: %s", job, wErr.String())
	}
	outs, _ := job["output"].(map[string]any)
	for _, name := range []string{"render", "source", "alpha"} {
		u, _ := outs[name].(string)
		if !strings.HasPrefix(u, "http://"+endpoint+"/") {
			t.Fatalf("output %s: %q is not a MinIO URL (%v)", name, u, outs)
		}
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || len(b) == 0 {
			t.Fatalf("download %s: %d, %d bytes", name, res.StatusCode, len(b))
		}
	}
	if m := call("GET", "/metrics", nil, nil, 200)["text"].(string); !strings.Contains(m, "vfx_api_requests_total") ||
		!strings.Contains(m, "go_goroutines") {
		t.Fatalf("metrics lack the API or Go series")
	}

	stopWorker()
	stopAPI()
	for what, ch := range map[string]chan int{"api": done, "worker": workerDone} {
		select {
		case code := <-ch:
			if code != 0 {
				t.Fatalf("%s exit %d: %s%s", what, code, errOut.String(), wErr.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not stop", what)
		}
	}
	if !strings.Contains(errOut.String(), `"stopped"`) {
		t.Fatalf("no clean stop logged: %s", errOut.String())
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("the API still answers after shutdown")
	}
}

// TestAPIStartsWithoutNATS checks that /healthz answers and /readyz and
// the API routes answer 503 while NATS cannot be reached, and that
// cancelling then stops the command cleanly.
func TestAPIStartsWithoutNATS(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"api", "--listen", "127.0.0.1:0", "--nats-url", "nats://127.0.0.1:1",
			"--admin-token", "0123456789abcdef", "--store", "local", "--store-dir", t.TempDir()}, &out, &errOut)
	}()
	addrRe := regexp.MustCompile(`"http listening".*"addr":"([^"]+)"`)
	deadline := time.Now().Add(20 * time.Second)
	for !addrRe.MatchString(errOut.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no listening log: %s", errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	base := "http://" + addrRe.FindStringSubmatch(errOut.String())[1]
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 503, "/v1/account/info": 503} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, res.StatusCode, want)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("did not stop")
	}
}
