package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/store"
)

// browserPath finds Debian's chromium. Without it the browser test skips,
// unless VFX_REQUIRE_BROWSER is set (make test sets it after make deps
// installed the package), when it fails.
func browserPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("VFX_REQUIRE_BROWSER") != "" {
		t.Fatal("VFX_REQUIRE_BROWSER is set but no chromium is on PATH (make deps installs Debian's chromium)")
	}
	t.Skip("no chromium on PATH: install Debian's chromium (make deps) to run the browser test")
	return ""
}

// newBrowser starts a headless Chromium with a fresh profile; the returned
// context drives one tab until the test ends.
func newBrowser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browserPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("mute-audio", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	return bctx
}

// updateDocs: VFX_UPDATE_DOCS=1 writes the test's screenshots into docs/.
func updateDocs() bool { return os.Getenv("VFX_UPDATE_DOCS") != "" }

// TestWebPage drives the page of `vfx serve` in headless Chromium: sign
// in, upload a generated video and keyframe, submit a select job, wait
// for it in the list, open it, move the wipe and compare the screenshots
// region by region; a prompt holding <script> must show as text.
func TestWebPage(t *testing.T) {
	// The whole test's limit, far above its 15 s on a quiet machine: CI
	// runs it beside other packages on 2 cores. Steps that can hang have
	// their own limits.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	bctx := newBrowser(t, ctx)
	for _, k := range []string{"VFX_API_URL", "VFX_API_KEY", "VFX_ADMIN_TOKEN"} {
		t.Setenv(k, "")
	}
	// The network at 256x256 (not 1024): the frames are 160x120.
	srv := startServe(t, "--model-size", "256")
	fx, err := bench.WriteFixture(ctx, t.TempDir(), bench.FixtureOptions{Width: 160, Height: 120, Frames: 8})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var dialogs []string
	if err := chromedp.Listen(bctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			mu.Lock()
			dialogs = append(dialogs, d.Message)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	pageSays := func() string {
		s, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("flash").textContent`))
		return s
	}

	// The first load, signed out: its bytes and first paint (logged; the
	// docs/web.md has the numbers).
	type perfT struct {
		Bytes      float64  `json:"bytes"`
		Decoded    float64  `json:"decoded"`
		FirstPaint float64  `json:"first_paint"`
		Resources  []string `json:"resources"`
	}
	measure := func() perfT {
		t.Helper()
		lctx, cancel := context.WithTimeout(bctx, time.Minute)
		defer cancel()
		if err := chromedp.Do(lctx,
			chromedp.Navigate(srv.url+"/"),
			chromedp.WaitVisible(chromedp.ID("signin-key")),
			pollJS(`performance.getEntriesByType("paint").length > 0`, 10*time.Second),
		); err != nil {
			t.Fatalf("first load: %v", err)
		}
		perf, err := chromedp.Run(bctx, chromedp.Evaluate[perfT](`(() => {
			const nav = performance.getEntriesByType("navigation")[0];
			const res = performance.getEntriesByType("resource");
			const paint = performance.getEntriesByType("paint");
			const fcp = paint.find((p) => p.name === "first-contentful-paint") || paint[0];
			return {bytes: nav.encodedBodySize + res.reduce((a, r) => a + r.encodedBodySize, 0), decoded: nav.decodedBodySize + res.reduce((a, r) => a + r.decodedBodySize, 0),
				first_paint: fcp.startTime, resources: res.map((r) => r.name)};
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		return perf
	}
	perf := measure()
	t.Logf("page: %d files (/ and %q), %.0f bytes gzipped (%.0f unzipped), first contentful paint %.0f ms", len(perf.Resources)+1, perf.Resources, perf.Bytes, perf.Decoded, perf.FirstPaint)
	if len(perf.Resources) != 2 || perf.Bytes < 1000 || perf.Bytes > perf.Decoded/2 {
		t.Errorf("page load: %+v; want index.html, app.js and style.css, gzipped", perf)
	}
	again := measure()
	t.Logf("page again (warm browser): %.0f bytes, first contentful paint %.0f ms", again.Bytes, again.FirstPaint)

	prompt := `<script>window.__vfxInjected=1</script><img src=x onerror="window.__vfxInjected=2"> golden hour`
	if err := chromedp.Do(bctx,
		chromedp.SendKeys(chromedp.ID("signin-key"), srv.devKey),
		chromedp.Click(chromedp.CSS(`#signin-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("view-jobs")),
		chromedp.Click(chromedp.CSS(`#nav a[href="#/submit"]`)),
		chromedp.WaitVisible(chromedp.ID("submit-form")),
		chromedp.SetValue(chromedp.ID("f-type"), "video"),
		chromedp.SetValue(chromedp.ID("f-mode"), "select"),
		js(`document.getElementById("f-mode").dispatchEvent(new Event("change"))`),
		chromedp.WaitVisible(chromedp.ID("f-alpha")),
		chromedp.SetUploadFiles(chromedp.ID("f-source"), []string{fx.Source}),
		chromedp.SetUploadFiles(chromedp.ID("f-alpha"), []string{fx.StillMatte}),
		chromedp.SendKeys(chromedp.ID("f-prompt"), prompt),
		chromedp.SendKeys(chromedp.ID("f-seed"), "7"),
		chromedp.SetValue(chromedp.ID("f-res"), "720"),
		chromedp.Click(chromedp.ID("f-submit")),
		pollJS(`location.hash.startsWith("#/jobs/vfx_")`, 30*time.Second),
	); err != nil {
		t.Fatalf("submit: %v (page says %q)", err, pageSays())
	}
	hash, err := chromedp.Run(bctx, chromedp.Evaluate[string](`location.hash`))
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimPrefix(hash, "#/jobs/")

	// The job's view follows it to the end over the event stream: one GET
	// of the job (the view's first read), then only the stream.
	if err := chromedp.Do(bctx, pollJS(`!document.getElementById("review").hidden || document.getElementById("job-status").className.includes("s-failed")`, 2*time.Minute)); err != nil {
		t.Fatalf("job view: %v (page says %q)", err, pageSays())
	}
	type followT struct {
		Via   string `json:"via"`
		First string `json:"first"`
		Gets  int    `json:"gets"`
	}
	follow, err := chromedp.Run(bctx, chromedp.Evaluate[followT](`({via: document.getElementById("job-status").dataset.via || "", first: document.getElementById("job-status").dataset.first || "",
		gets: performance.getEntriesByType("resource").filter((r) => r.name.includes("/v1/vfx/generations/`+id+`")).length})`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("job view: followed via %q (first read %q), %d GETs of the job", follow.Via, follow.First, follow.Gets)
	if follow.Gets != 1 || (follow.Via != "stream" && follow.First != "completed") {
		t.Errorf("the job view polled: %+v; want one GET, then the stream", follow)
	}

	// The list: the job completes there, its prompt shows as text.
	row := fmt.Sprintf(`#jobs-body tr[data-id=%q]`, id)
	rowJS := "document.querySelector(`" + row + "`)"
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(`#nav a[href="#/jobs"]`)),
		pollJS(`(() => { const r = `+rowJS+`; return !!r && (r.dataset.status === "completed" || r.dataset.status === "failed"); })()`, 2*time.Minute),
	); err != nil {
		t.Fatalf("list: %v (page says %q)", err, pageSays())
	}
	status, err := chromedp.Run(bctx, chromedp.Evaluate[string](rowJS+`.dataset.status`))
	if err != nil {
		t.Fatal(err)
	}
	if status != "completed" {
		t.Fatalf("job %s ended %s", id, status)
	}
	promptText, err := chromedp.Run(bctx, chromedp.Evaluate[string](rowJS+`.querySelector("td.c-prompt").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	injected, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.__vfxInjected !== undefined || document.querySelectorAll("main script, main img[src='x']").length > 0`))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	nd := len(dialogs)
	mu.Unlock()
	// The list came live from the event stream: the only plain list read
	// is the sign-in's (a personal key has 5 reads a minute).
	reads, err := chromedp.Run(bctx, chromedp.Evaluate[int](`performance.getEntriesByType("resource").filter((r) => r.name.includes("/v1/vfx/generations?")).length`))
	if err != nil || reads != 1 {
		t.Errorf("list reads by the page: %d (%v); want only the sign-in's", reads, err)
	}
	if promptText != prompt || injected || nd > 0 {
		t.Errorf("prompt in the list: %q (want it as text), injected %v, %d dialogs", promptText, injected, nd)
	}
	if updateDocs() {
		if err := chromedp.Do(bctx, pollJS(rowJS+`.querySelector(".thumb").readyState >= 2`, 10*time.Second), chromedp.Sleep(300*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		writeDoc(t, "web-jobs.png", shot)
	}

	// The job: open it, wait for every medium, then the wipe at 100 (all
	// source), 0 (all render) and 50.
	ready := func(frame int) chromedp.Action[chromedp.Void] {
		return pollJS(fmt.Sprintf(`document.getElementById("stage").dataset.ready === "1" && document.getElementById("stage").dataset.frame === "%d"`, frame), 30*time.Second)
	}
	shootSel := func(sel string) image.Image {
		t.Helper()
		b, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.CSS(sel)))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	shoot := func() image.Image { t.Helper(); return shootSel(".wipe") }
	wipeAt := func(v int) image.Image {
		t.Helper()
		if err := chromedp.Do(bctx, js(fmt.Sprintf(`(() => { const w = document.getElementById("wipe"); w.value = "%d"; w.dispatchEvent(new Event("input")); })()`, v))); err != nil {
			t.Fatal(err)
		}
		return shoot()
	}
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(row+` a`)),
		chromedp.WaitVisible(chromedp.ID("review")),
		ready(0),
	); err != nil {
		t.Fatalf("review: %v (page says %q)", err, pageSays())
	}
	detailPrompt, err := chromedp.Run(bctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#job-fields dt")].find((d) => d.textContent === "Prompt").nextElementSibling.textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if detailPrompt != prompt {
		t.Errorf("prompt in the job: %q", detailPrompt)
	}
	src, rnd, mid := wipeAt(100), wipeAt(0), wipeAt(50)
	b := mid.Bounds()
	if b.Dx() < 300 || b.Dy() < 200 {
		t.Fatalf("wipe screenshot %v: too small", b)
	}
	half, m := b.Min.X+b.Dx()/2, 12
	left := image.Rect(b.Min.X, b.Min.Y, half-m, b.Max.Y)
	right := image.Rect(half+m, b.Min.Y, b.Max.X, b.Max.Y)
	if sd := stddev(mid, b); sd < 10 {
		t.Errorf("wipe looks blank: luma stddev %.1f", sd)
	}
	if d := meanDiff(src, rnd, b); d < 8 {
		t.Errorf("source and render look alike (mean difference %.1f): the wipe cannot show anything", d)
	}
	dls, dlr := meanDiff(mid, src, left), meanDiff(mid, rnd, left)
	drs, drr := meanDiff(mid, src, right), meanDiff(mid, rnd, right)
	t.Logf("wipe at 50: left vs source %.2f, vs render %.2f; right vs source %.2f, vs render %.2f", dls, dlr, drs, drr)
	if dls > 3 || dlr < 3*dls+4 {
		t.Errorf("left of the wipe is not the source: vs source %.2f, vs render %.2f", dls, dlr)
	}
	if drr > 3 || drs < 3*drr+4 {
		t.Errorf("right of the wipe is not the render: vs render %.2f, vs source %.2f", drr, drs)
	}

	// The scrubber: frame 5 of the moving scene differs from frame 0.
	if err := chromedp.Do(bctx,
		js(`(() => { const f = document.getElementById("frame"); f.value = "5"; f.dispatchEvent(new Event("input")); })()`),
		ready(5),
	); err != nil {
		t.Fatal(err)
	}
	if d := meanDiff(shoot(), mid, b); d < 0.5 {
		t.Errorf("frame 5 looks like frame 0 (mean difference %.2f)", d)
	}
	if updateDocs() {
		if err := chromedp.Do(bctx, js(`(() => { const w = document.getElementById("wipe"); w.value = "45"; w.dispatchEvent(new Event("input")); })()`)); err != nil {
			t.Fatal(err)
		}
		shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		writeDoc(t, "web-review.png", shot)
	}

	// The alpha view: the render premultiplied by the alpha over a
	// checkerboard (a canvas). Where the alpha is 0 it shows the checker,
	// where it is 1 the render, pixel for pixel against the wipe's render.
	rnd5 := wipeAt(0)
	setCheck := func(on bool) chromedp.Action[chromedp.Void] {
		return js(fmt.Sprintf(`(() => { const c = document.getElementById("checker"); c.checked = %v; c.dispatchEvent(new Event("change")); })()`, on))
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`.tabs button[data-tab=alpha]`)), setCheck(false)); err != nil {
		t.Fatal(err)
	}
	alphaShot := shootSel(".alpha")
	if err := chromedp.Do(bctx, setCheck(true), pollJS(`document.querySelector("canvas.comp").dataset.frame === "5"`, 10*time.Second)); err != nil {
		t.Fatalf("composite: %v (page says %q)", err, pageSays())
	}
	comp := shootSel(".alpha")
	checkComposite(t, comp, alphaShot, rnd5)
	if updateDocs() {
		shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		writeDoc(t, "web-alpha.png", shot)
	}

	// The operator view: the operator token signs in to the queue's state.
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.ID("signout")),
		chromedp.WaitVisible(chromedp.ID("signin-key")),
		chromedp.SendKeys(chromedp.ID("signin-key"), testAdminToken),
		chromedp.Click(chromedp.CSS(`#signin-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("view-operator")),
		pollJS(`document.querySelectorAll("#op-queue dt").length === 5`, 10*time.Second),
	); err != nil {
		t.Fatalf("operator: %v (page says %q)", err, pageSays())
	}
	opText, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("op-queue").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(opText, "Jobs waiting (queue depth)0") || !strings.Contains(opText, "Dead letters0") {
		t.Errorf("operator view: %q", opText)
	}
	if key, err := chromedp.Run(bctx, chromedp.Evaluate[string](`location.href + " " + document.cookie + " " + localStorage.length`)); err != nil ||
		strings.Contains(key, testAdminToken) || strings.Contains(key, srv.devKey) || !strings.HasSuffix(key, " 0") {
		t.Errorf("a key outside session storage: %q %v", key, err)
	}
	if updateDocs() {
		shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		writeDoc(t, "web-operator.png", shot)
	}

	// An organisation key: the product flow. The estimate shows before the
	// job is submitted (8 frames at 720: 8 credits), the job is followed
	// in the tab's list until it succeeds and is charged what was shown.
	admin := []string{"--server", srv.url, "--admin-token", testAdminToken}
	cliJSON := func(args ...string) map[string]any {
		t.Helper()
		code, out, errOut := cli(ctx, append(args, admin...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return jsonOf(t, out)
	}
	org := cliJSON("admin", "orgs", "create", "--name", "Web")["id"].(string)
	cliJSON("admin", "orgs", "credits", org, "--add", "100")
	cliJSON("admin", "orgs", "product", org, "vfx", "--enabled=true")
	cliJSON("admin", "orgs", "product", org, "vfx_finish", "--enabled=true")
	cliJSON("admin", "orgs", "consent", org, "vfx-2.0", "--granted=true")
	orgKey := cliJSON("admin", "orgs", "key", org)["key"].(string)
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.ID("signout")),
		chromedp.WaitVisible(chromedp.ID("signin-key")),
		chromedp.SendKeys(chromedp.ID("signin-key"), orgKey),
		chromedp.Click(chromedp.CSS(`#signin-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("view-pjobs")),
		chromedp.Click(chromedp.CSS(`#nav a[href="#/submit"]`)),
		chromedp.WaitVisible(chromedp.ID("l-pmode")),
		chromedp.SetValue(chromedp.ID("f-mode"), "select"),
		js(`document.getElementById("f-mode").dispatchEvent(new Event("change"))`),
		chromedp.WaitVisible(chromedp.ID("f-alpha")),
		chromedp.SetUploadFiles(chromedp.ID("f-source"), []string{fx.Source}),
		chromedp.SetUploadFiles(chromedp.ID("f-alpha"), []string{fx.StillMatte}),
		chromedp.SendKeys(chromedp.ID("f-prompt"), "<b>blue</b> hour"),
		chromedp.SendKeys(chromedp.ID("f-seed"), "3"),
		chromedp.SetValue(chromedp.ID("f-res"), "720"),
		chromedp.Click(chromedp.ID("f-submit")),
		pollJS(`!document.getElementById("estimate").hidden`, 30*time.Second),
	); err != nil {
		t.Fatalf("product estimate: %v (page says %q)", err, pageSays())
	}
	est, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("estimate-credits").textContent + " | " + document.getElementById("estimate-items").textContent + " | " + document.getElementById("f-submit").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "8 credits | vfx standard 720p: 8 × 1 = 8 | Submit for 8 credits"; est != want {
		t.Errorf("estimate shown: %q, want %q", est, want)
	}
	if updateDocs() {
		shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		writeDoc(t, "web-estimate.png", shot)
	}
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.ID("f-submit")),
		pollJS(`location.hash.startsWith("#/jobs/dap_")`, 30*time.Second),
	); err != nil {
		t.Fatalf("product submit: %v (page says %q)", err, pageSays())
	}
	hash, err = chromedp.Run(bctx, chromedp.Evaluate[string](`location.hash`))
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimPrefix(hash, "#/jobs/")
	prow := fmt.Sprintf(`#pjobs-body tr[data-id=%q]`, pid)
	prowJS := "document.querySelector(`" + prow + "`)"
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(`#nav a[href="#/jobs"]`)),
		pollJS(`(() => { const r = `+prowJS+`; return !!r && ["success", "failed", "cancelled", "credit_required"].includes(r.dataset.status); })()`, 2*time.Minute),
	); err != nil {
		t.Fatalf("product list: %v (page says %q)", err, pageSays())
	}
	prowText, err := chromedp.Run(bctx, chromedp.Evaluate[string](`[...`+prowJS+`.cells].slice(2).map((c) => c.textContent.trim()).join(" | ")`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(prowText, "success | 100% | vfx standard | video | 8 charged | <b>blue</b> hour | ") {
		t.Errorf("product job in the list: %q", prowText)
	}
	if c := cliJSON("admin", "orgs", "credits", org); c["charged"] != 8.0 || c["balance"] != 92.0 {
		t.Errorf("organisation credits after the job: %v; want 8 charged, 92 left", c)
	}
	// Its review: the same wipe; a finish is estimated (8 frames to 1080: 8).
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(prow+` a`)),
		chromedp.WaitVisible(chromedp.ID("review")),
		ready(0),
		chromedp.WaitVisible(chromedp.ID("finish-form")),
		chromedp.SetValue(chromedp.ID("finish-res"), "1080"),
		chromedp.Click(chromedp.ID("finish-submit")),
		pollJS(`document.getElementById("finish-estimate").textContent !== ""`, 10*time.Second),
	); err != nil {
		t.Fatalf("product review: %v (page says %q)", err, pageSays())
	}
	if sd := stddev(shoot(), b); sd < 10 {
		t.Errorf("the product job's wipe looks blank: luma stddev %.1f", sd)
	}
	fin, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("finish-estimate").textContent + " | " + document.getElementById("finish-submit").textContent`))
	if err != nil || fin != "8 credits (vfx_finish 1080: 8 × 1 = 8) | Submit for 8 credits" {
		t.Errorf("finish estimate: %q %v", fin, err)
	}
	if updateDocs() {
		shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		writeDoc(t, "web-product.png", shot)
	}
	// A product job the tab does not know (its list emptied, the page
	// reloaded: still signed in), opened by its id: read, reviewed (a
	// video, by its URL), remembered; no scrubber (no frame count).
	//
	// The reload is the page's own location.reload() and a poll for the new
	// document (a marker the old one had is gone), not chromedp.Reload: that
	// waits for a load event it can miss on a slow machine, and once hung
	// the whole test's budget in CI. Each step has its own limit, so a hang
	// names its step.
	stepDo := func(name string, d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, d)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			t.Fatalf("product job by id, %s: %v (page says %q)", name, err, pageSays())
		}
	}
	stepDo("reload", 60*time.Second,
		js(`sessionStorage.removeItem("vfx.pjobs")`),
		chromedp.Click(chromedp.CSS(`#nav a[href="#/jobs"]`)),
		js(`window.__vfxOldDocument = true; setTimeout(() => location.reload(), 0)`),
		newDocument(45*time.Second),
		chromedp.WaitVisible(chromedp.ID("pjobs-empty")),
	)
	stepDo("open", 60*time.Second,
		chromedp.SendKeys(chromedp.ID("pjob-id"), pid),
		chromedp.Click(chromedp.CSS(`#pjob-open button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("review")),
		pollJS(`document.getElementById("stage").dataset.ready === "1" && !!document.querySelector("#stage video.m-render")`, 45*time.Second),
	)
	if byID, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("job-title").textContent + " " + document.getElementById("frame-control").hidden + " " + document.getElementById("job-fields").textContent`)); err != nil ||
		byID != pid+" true Productvfx standardModelvfx-2.0Credits charged8Created"+byIDCreated(byID) {
		t.Errorf("product job opened by id: %q %v", byID, err)
	}
	if st, err := chromedp.Run(bctx, chromedp.Evaluate[string](`location.href + " " + document.cookie + " " + localStorage.length + " " + sessionStorage.getItem("vfx.pjobs")`)); err != nil ||
		strings.Contains(st, orgKey) || !strings.Contains(st, " 0 [{") || !strings.Contains(st, pid) {
		t.Errorf("the org key outside session storage, or the job not in it: %q %v", st, err)
	}
}

// byIDCreated is the created time at the end of a job's fields text.
func byIDCreated(s string) string {
	_, after, _ := strings.Cut(s, "Created")
	return after
}

// checkComposite checks the alpha view's composite comp against the alpha
// alone (alpha) and the render (rnd), three screenshots of one size: where
// the alpha is 1 (and 4 px around) comp is the render, where it is 0 it is
// the checkerboard (#bbb and #777 squares of 16 px from the corner).
func checkComposite(t *testing.T, comp, alpha, rnd image.Image) {
	t.Helper()
	b := comp.Bounds()
	if alpha.Bounds() != b || rnd.Bounds() != b {
		t.Fatalf("composite %v, alpha %v, render %v: want one size", b, alpha.Bounds(), rnd.Bounds())
	}
	const r = 4
	w, h := b.Dx(), b.Dy()
	lo, hi := make([]float64, w*h), make([]float64, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			mn, mx := 255.0, 0.0
			for dy := -r; dy <= r; dy++ {
				for dx := -r; dx <= r; dx++ {
					xx, yy := min(max(x+dx, 0), w-1), min(max(y+dy, 0), h-1)
					l := luma(alpha.At(b.Min.X+xx, b.Min.Y+yy))
					mn, mx = min(mn, l), max(mx, l)
				}
			}
			lo[y*w+x], hi[y*w+x] = mn, mx
		}
	}
	var nIn, nOut, checker, light, dark int
	var dIn float64
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := luma(comp.At(b.Min.X+x, b.Min.Y+y))
			switch {
			case lo[y*w+x] >= 245:
				nIn++
				dIn += math.Abs(c - luma(rnd.At(b.Min.X+x, b.Min.Y+y)))
			case hi[y*w+x] <= 10:
				nOut++
				want := 187.0 // #bbb
				if (x/16+y/16)%2 == 1 {
					want = 119 // #777
				}
				if math.Abs(c-want) <= 6 {
					checker++
					if want > 150 {
						light++
					} else {
						dark++
					}
				}
			}
		}
	}
	t.Logf("composite: %d px alpha 1 (mean difference from the render %.2f), %d px alpha 0 (%d the checker's: %d light, %d dark)",
		nIn, dIn/float64(max(nIn, 1)), nOut, checker, light, dark)
	if nIn < w*h/50 || nOut < w*h/50 {
		t.Fatalf("the alpha has too little of 0 or 1 to test: %d and %d of %d px", nOut, nIn, w*h)
	}
	if d := dIn / float64(nIn); d > 4 {
		t.Errorf("where the alpha is 1 the composite is not the render: mean difference %.2f", d)
	}
	if float64(checker) < 0.95*float64(nOut) || light < nOut/5 || dark < nOut/5 {
		t.Errorf("where the alpha is 0 the composite is not the checkerboard: %d of %d px (%d light, %d dark)", checker, nOut, light, dark)
	}
}

// js runs a JavaScript expression and drops its value.
func js(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](expr)
}

// newDocument waits, up to timeout, until the tab shows a document that has
// finished loading and lacks the window.__vfxOldDocument marker the one
// before it had. It asks every 100 ms and ignores the errors of asking
// while the old document goes away.
func newDocument(timeout time.Duration) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		deadline := time.Now().Add(timeout)
		for {
			ok, err := chromedp.Evaluate[bool](`window.__vfxOldDocument === undefined && document.readyState === "complete"`)(ctx, tg)
			if err == nil && ok {
				return chromedp.Void{}, nil
			}
			if time.Now().After(deadline) {
				return chromedp.Void{}, fmt.Errorf("no new document after %v (last error: %v)", timeout, err)
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// pollJS waits until a JavaScript expression is truthy.
func pollJS(expr string, timeout time.Duration) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(timeout))
}

// writeDoc writes a screenshot into the repository's docs/ folder.
func writeDoc(t *testing.T, name string, b []byte) {
	t.Helper()
	p := filepath.Join("..", "..", "docs", name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", p)
}

func luma(c interface{ RGBA() (r, g, b, a uint32) }) float64 {
	r, g, b, _ := c.RGBA()
	return (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(b)) / 257
}

// meanDiff is the mean absolute luma difference (0-255) of a and b over r.
func meanDiff(a, b image.Image, r image.Rectangle) float64 {
	var s float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			s += math.Abs(luma(a.At(x, y)) - luma(b.At(x, y)))
		}
	}
	return s / float64(r.Dx()*r.Dy())
}

// stddev is the standard deviation of a's luma over r.
func stddev(a image.Image, r image.Rectangle) float64 {
	var s, s2 float64
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			l := luma(a.At(x, y))
			s += l
			s2 += l * l
		}
	}
	n := float64(r.Dx() * r.Dy())
	return math.Sqrt(max(0, s2/n-(s/n)*(s/n)))
}

func TestS3Origin(t *testing.T) {
	for _, c := range []struct {
		cfg  store.S3Config
		want string
	}{
		{store.S3Config{}, ""},
		{store.S3Config{Endpoint: "minio:9000"}, "http://minio:9000"},
		{store.S3Config{Endpoint: "s3.amazonaws.com", Secure: true}, "https://s3.amazonaws.com"},
		{store.S3Config{Endpoint: "https://s3.example.com/"}, "https://s3.example.com"},
		{store.S3Config{Endpoint: "http://10.0.0.5:9000", Secure: true}, "http://10.0.0.5:9000"},
	} {
		if got := s3Origin(c.cfg); got != c.want {
			t.Errorf("%+v: %q, want %q", c.cfg, got, c.want)
		}
	}
}
