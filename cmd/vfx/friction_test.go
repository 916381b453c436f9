package main

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/client"
	"github.com/vfxrender/vfx/localfile"
)

// TestHelpExitsZero: -h prints the help on stdout and exits 0, with the
// required flags first, one example, and each default said once.
func TestHelpExitsZero(t *testing.T) {
	for _, cmd := range [][]string{{"render", "-h"}, {"submit", "--help"}, {"serve", "-h"}, {"jobs", "list", "-h"}, {"bench", "fixture", "-h"}} {
		code, out, errOut := runCLI(cmd...)
		if code != 0 || !strings.HasPrefix(out, "usage: vfx ") || errOut != "" || !strings.Contains(out, "\nexample:\n  vfx ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", cmd, code, out, errOut)
		}
	}
	_, out, _ := runCLI("render", "-h")
	req, flags, ex := strings.Index(out, "\nrequired:\n  --type string\n"), strings.Index(out, "\nflags:\n"), strings.Index(out, "\nexample:\n")
	if req < 0 || flags < req || ex < flags || !strings.Contains(out[req:flags], "  --source string\n") || strings.Contains(out[flags:ex], "--type ") {
		t.Errorf("required flags are not listed first:\n%s", out)
	}
	if strings.Contains(out, "random) (default") || !strings.Contains(out, "(default: random)") || !strings.Contains(out, "--alpha-mode string\n      alpha mode: fill, custom, select (propagate a keyframe matte) or auto (no matte) (default fill)") {
		t.Errorf("defaults:\n%s", out)
	}
	_, out, _ = runCLI("submit", "-h")
	if !strings.Contains(out, "required:\n  --type string\n      generation_type: image or video\n  --source string") || !strings.Contains(out, "  --alpha-mode string") {
		t.Errorf("submit help:\n%s", out)
	}
}

// TestDidYouMean: a mistyped flag or command is one line with the
// nearest name, exit 2.
func TestDidYouMean(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"render", "--typ", "image"}, "vfx render: unknown flag --typ; did you mean --type? (vfx render -h lists the flags)\n"},
		{[]string{"submit", "--type", "image", "--sorce", "a.png"}, "did you mean --source?"},
		{[]string{"jobs", "list", "--jsn"}, "did you mean --json?"},
		{[]string{"serve", "--listn", ":0"}, "did you mean --listen?"},
		{[]string{"rendr"}, `did you mean "render"?`},
	}
	for _, c := range cases {
		code, out, errOut := runCLI(c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", c.args, code, errOut, c.want)
		}
	}
}

// TestErrorLines: a missing file and a file of no accepted format give one
// line each, with the code and what to do.
func TestErrorLines(t *testing.T) {
	dir := t.TempDir()
	txt := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(txt, []byte("shot list: 1, 2, 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "photo.jpg")
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"render", "--type", "image", "--source", missing, "--prompt", "x"},
			[]string{"vfx render: FILE_NOT_FOUND: source: " + missing + " does not exist; check the path"}},
		{[]string{"submit", "--type", "image", "--source", missing, "--alpha-mode", "fill", "--prompt", "x", "--key", "k", "--server", "http://127.0.0.1:1"},
			[]string{"vfx submit: FILE_NOT_FOUND: upload: " + missing + " does not exist"}},
		{[]string{"render", "--type", "image", "--source", txt, "--prompt", "x", "--out", filepath.Join(dir, "o")},
			[]string{"INVALID_FILE_FORMAT: source: ", "accepted: PNG, JPEG or WebP images and MP4 or MOV videos (H.264 or HEVC)"}},
		{[]string{"render", "--type", "image", "--source", txt},
			[]string{"vfx render: missing required flag", "--prompt"}},
	}
	// The last case: --prompt is not required by flags (a reference may
	// stand for it); the check is the worker's.
	cases[3].want = []string{"MISSING_STYLE_INPUT", "give --prompt or --reference"}
	for _, c := range cases {
		code, _, errOut := runCLI(c.args...)
		ok := code == 1 && strings.Count(errOut, "\n") == 1 && strings.Count(errOut, "unsupported format") == 0
		for _, w := range c.want {
			ok = ok && strings.Contains(errOut, w)
		}
		if !ok {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", c.args, code, errOut, c.want)
		}
	}
}

// writePhoto writes a w x h PNG with a gradient.
func writePhoto(t *testing.T, path string, w, h int) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), 120, 255})
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(f, img); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFit: a 4 MP photo and a 2560x1440 video are refused without --fit,
// with the flag and the fitting size named, and render with it.
func TestFit(t *testing.T) {
	if w, h := localfile.FitSize(2560, 1600, 2_770_000); w != 2104 || h != 1314 {
		t.Errorf("localfile.FitSize(2560x1600) = %dx%d", w, h)
	}
	if w, h := localfile.FitSize(1920, 1080, 2_770_000); w != 1920 || h != 1080 {
		t.Errorf("localfile.FitSize(1920x1080) = %dx%d", w, h)
	}
	dir := t.TempDir()
	photo := filepath.Join(dir, "photo.png")
	writePhoto(t, photo, 2560, 1600)
	clip := filepath.Join(dir, "clip.mp4")
	ff := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=2560x1440:rate=24", "-frames:v", "3",
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", clip)
	if out, err := ff.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v %s", err, out)
	}
	for _, c := range []struct {
		typ, src, fitted string
	}{{"image", photo, "2104x1314"}, {"video", clip, "2218x1248"}} {
		out := filepath.Join(dir, "out-"+c.typ)
		args := []string{"render", "--type", c.typ, "--source", c.src, "--alpha-mode", "fill", "--prompt", "warm key light",
			"--max-resolution", "720", "--preset", "ultrafast", "--out", out}
		code, _, errOut := runCLI(args...)
		if code != 1 || !strings.Contains(errOut, "SOURCE_TOO_LARGE") || !strings.Contains(errOut, "add --fit to downscale it to "+c.fitted) ||
			strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s without --fit: exit %d, %q", c.typ, code, errOut)
		}
		code, stdout, errOut := runCLI(append(args, "--fit")...)
		if code != 0 || !strings.Contains(stdout, "over the 2.77 MP limit: downscaled to "+c.fitted) {
			t.Fatalf("%s with --fit: exit %d, %q %q", c.typ, code, stdout, errOut)
		}
		ext := map[string]string{"image": ".png", "video": ".mp4"}[c.typ]
		if st, err := os.Stat(filepath.Join(out, "render"+ext)); err != nil || st.Size() == 0 {
			t.Errorf("%s: render: %v", c.typ, err)
		}
	}
}

// TestJobTable: `vfx jobs list` prints one row per job with its type,
// alpha mode, frames, a short prompt and its age.
func TestJobTable(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	raw := `{"jobs":[
	{"id":"vfx_aaa","status":"processing","progress":40,"generation_type":"video","alpha_mode":"custom","prompt":"warm golden hour key light from the left, soft blue rim","frames":48,"created_at":"2026-03-01T11:57:00Z"},
	{"id":"vfx_bbb","status":"completed","progress":100,"generation_type":"image","alpha_mode":"fill","frames":1,"created_at":"2026-02-27T10:00:00Z"}],
	"next_page_token":"tok123"}`
	var b strings.Builder
	if err := printJobTable(&b, []byte(raw), now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[0], "PROMPT") || !strings.HasSuffix(lines[0], "AGE") {
		t.Fatalf("table:\n%s", b.String())
	}
	for _, want := range []string{"vfx_aaa", "processing 40%", "video", "custom", " 48 ", `"warm golden hour key light from…"`, " 3m"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("row 1 lacks %q: %q", want, lines[1])
		}
	}
	for _, want := range []string{"vfx_bbb", "completed", "image", "fill", " 1 ", " - ", " 2d"} {
		if !strings.Contains(lines[2]+" ", want) {
			t.Errorf("row 2 lacks %q: %q", want, lines[2])
		}
	}
	if lines[3] != "more: vfx jobs list --page-token tok123" {
		t.Errorf("next page line %q", lines[3])
	}
}

// TestProgressBars: both bars show a percentage and the time left.
func TestProgressBars(t *testing.T) {
	var b strings.Builder
	bar := &progressBar{w: &b, start: time.Now().Add(-10 * time.Second)}
	bar.update(50, 100)
	if s := b.String(); !strings.Contains(s, "  50% 50/100 frames") || !strings.Contains(s, "ETA 10s") {
		t.Errorf("render bar %q", s)
	}
	b.Reset()
	p := 25
	jb := &jobBar{w: &b, tty: true, start: time.Now()}
	jb.Update(client.Job{ID: "vfx_x", Status: "processing", Progress: &p})
	jb.procStart = time.Now().Add(-30 * time.Second)
	jb.Update(client.Job{ID: "vfx_x", Status: "processing", Progress: &p})
	if s := b.String(); !strings.Contains(s, " 25% processing") || !strings.Contains(s, "ETA 1m30s") {
		t.Errorf("job bar %q", s)
	}
}

// TestSubmitFit: against a real `vfx serve`, a 4 MP photo is refused
// without --fit (the message names the flag and the size) and renders with
// it; the development key polls without rate-limit waits.
func TestSubmitFit(t *testing.T) {
	for _, k := range []string{"VFX_API_URL", "VFX_API_KEY", "VFX_ADMIN_TOKEN"} {
		t.Setenv(k, "")
	}
	srv := startServe(t)
	dir := t.TempDir()
	photo := filepath.Join(dir, "photo.png")
	writePhoto(t, photo, 2560, 1600)
	args := []string{"submit", "--server", srv.url, "--key", srv.devKey, "--type", "image", "--source", photo,
		"--alpha-mode", "fill", "--prompt", "soft window light", "--max-resolution", "720", "--out", filepath.Join(dir, "out")}
	code, _, errOut := runCLI(args...)
	if code != 1 || !strings.Contains(errOut, "SOURCE_TOO_LARGE") || !strings.Contains(errOut, "add --fit to downscale it to 2104x1314") ||
		strings.Count(errOut, "\n") != 1 {
		t.Errorf("without --fit: exit %d, %q", code, errOut)
	}
	t.Logf("without --fit: %s", strings.TrimSpace(errOut))
	start := time.Now()
	code, out, errOut := runCLI(append(args, "--fit")...)
	if code != 0 || !strings.Contains(errOut, "fit: source "+photo+" is 2560x1600, over the 2.77 MP limit: downscaled to 2104x1314") ||
		!strings.Contains(out, " completed in ") || strings.Contains(errOut, "rate limited") {
		t.Fatalf("with --fit: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	t.Logf("submit --fit took %s", time.Since(start).Round(time.Millisecond))
	if st, err := os.Stat(filepath.Join(dir, "out", "render.png")); err != nil || st.Size() == 0 {
		t.Errorf("render: %v", err)
	}
	// Text in place of an image: by name (refused at upload) or by content
	// (refused at submission); each one line that says what is accepted.
	txt, fake := filepath.Join(dir, "notes.txt"), filepath.Join(dir, "notes.png")
	for _, p := range []string{txt, fake} {
		if err := os.WriteFile(p, []byte("shot list: 1, 2, 3\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ src, want string }{
		{txt, "INVALID_FILE_FORMAT: upload: " + txt + ": the name must end in .png, .jpg, .jpeg or .webp (images), .mp4 or .mov (videos), or .zip or .tar (an archive of PNG or EXR frames, a video); accepted: PNG, JPEG"},
		// Text named .png: refused at the upload's content check (one sniffing rule for uploads
		// and data:, issue 19), before the codec sees it.
		{fake, "INVALID_FILE_FORMAT: source: "},
	} {
		args[8] = c.src
		code, _, errOut := runCLI(args...)
		if code != 1 || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 || strings.Count(errOut, "unsupported format") > 0 {
			t.Errorf("%s: exit %d, %q", c.src, code, errOut)
		}
	}
}
