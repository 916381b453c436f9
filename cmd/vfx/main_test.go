package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/bench"
)

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsage(t *testing.T) {
	if code, _, _ := runCLI(); code != 2 {
		t.Errorf("no args: exit %d, want 2", code)
	}
	if code, _, e := runCLI("frobnicate"); code != 2 || !strings.Contains(e, "unknown command") {
		t.Errorf("unknown command: exit %d, %q", code, e)
	}
	if code, _, e := runCLI("render", "--type", "image"); code != 2 || !strings.Contains(e, "missing required flag --source;") {
		t.Errorf("missing source: exit %d, %q", code, e)
	}
	if code, out, _ := runCLI("version"); code != 0 || !strings.HasPrefix(out, "vfx ") {
		t.Errorf("version: exit %d, %q", code, out)
	}
}

// TestUsageListsCommands checks that `vfx -h` names every command and
// bench subcommand that the README and docs/ document.
func TestUsageListsCommands(t *testing.T) {
	code, out, _ := runCLI("-h")
	if code != 0 {
		t.Fatalf("vfx -h: exit %d", code)
	}
	for _, c := range []string{"serve", "api", "worker", "submit", "jobs", "admin", "render",
		"bench fixture", "bench ffmpeg", "bench matte", "bench calibrate", "selftest", "probe", "version"} {
		if !strings.Contains(out, "\n  vfx "+c+" ") {
			t.Errorf("vfx -h does not list %q:\n%s", "vfx "+c, out)
		}
	}
	if !strings.Contains(out, "product organisations") {
		t.Errorf("vfx -h does not mention vfx admin orgs:\n%s", out)
	}
}

func TestRenderCLI(t *testing.T) {
	dir := t.TempDir()
	fx, err := bench.WriteFixture(context.Background(), filepath.Join(dir, "in"), bench.FixtureOptions{Width: 64, Height: 48, Frames: 3})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI("render", "--type", "video", "--source", fx.Source, "--alpha-mode", "custom",
		"--alpha", fx.Matte, "--prompt", "blue rim light", "--seed", "4", "--preset", "ultrafast", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "rendered 3 frame(s) 64x48") || strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, "seed 4") {
		t.Errorf("summary %q", stdout)
	}
	for _, f := range []string{"render.mp4", "source.mp4", "alpha.mp4"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestRenderCLIBadInput(t *testing.T) {
	dir := t.TempDir()
	bogus := filepath.Join(dir, "clip.mp4")
	os.WriteFile(bogus, []byte("not a video at all"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--type", "video", "--source", bogus, "--prompt", "x"}, "INVALID_FILE_FORMAT"},
		{[]string{"--type", "video", "--source", filepath.Join(dir, "missing.mp4"), "--prompt", "x"}, "FILE_NOT_FOUND: source: "},
		{[]string{"--type", "video", "--source", bogus, "--prompt", "x", "--seed", "4294967296"}, "INVALID_SEED"},
		{[]string{"--type", "video", "--source", bogus, "--prompt", "x", "--preset", "warp"}, "preset"},
		{[]string{"--type", "video", "--source", bogus, "--prompt", "x", "--alpha-mode", "select", "--alpha", bogus}, "INVALID_FILE_FORMAT"},
		{[]string{"--type", "video", "--source", bogus, "--prompt", "x", "--alpha-mode", "magic"}, "INVALID_ALPHA_MODE"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(append([]string{"render", "--out", filepath.Join(dir, "o")}, c.args...)...)
		if code != 1 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", c.args, code, stderr, c.want)
		}
	}
}

// TestRenderCLICRF checks --crf at its edges: 1 and 51 render, 0 and 52
// are refused as usage errors before any input is read (0 used to give
// CRF 18 without a word, where x264's own 0 is lossless).
func TestRenderCLICRF(t *testing.T) {
	dir := t.TempDir()
	fx, err := bench.WriteFixture(context.Background(), filepath.Join(dir, "in"), bench.FixtureOptions{Width: 64, Height: 48, Frames: 2})
	if err != nil {
		t.Fatal(err)
	}
	args := func(crf string) []string {
		return []string{"render", "--type", "video", "--source", fx.Source, "--alpha-mode", "custom", "--alpha", fx.Matte,
			"--prompt", "blue rim light", "--preset", "ultrafast", "--crf", crf, "--out", filepath.Join(dir, "out-"+crf)}
	}
	for _, crf := range []string{"1", "51"} {
		if code, _, stderr := runCLI(args(crf)...); code != 0 {
			t.Errorf("--crf %s: exit %d: %s", crf, code, stderr)
		}
		opts, err := os.ReadFile(filepath.Join(dir, "out-"+crf, "render.mp4"))
		if err != nil || !bytes.Contains(opts, []byte("crf="+crf+".0")) {
			t.Errorf("--crf %s: render.mp4's x264 options do not say crf=%s.0 (%v)", crf, crf, err)
		}
	}
	for _, crf := range []string{"0", "52", "-1"} {
		code, _, stderr := runCLI(args(crf)...)
		if code != 2 || !strings.Contains(stderr, "--crf "+crf+": want 1..51") {
			t.Errorf("--crf %s: exit %d, stderr %q: want a usage error", crf, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "out-"+crf)); err == nil {
			t.Errorf("--crf %s: an output folder was made", crf)
		}
	}
	code, _, stderr := runCLI("bench", "ffmpeg", "--crf", "0", "--out", filepath.Join(dir, "bench"))
	if code != 2 || !strings.Contains(stderr, "--crf 0: want 1..51") {
		t.Errorf("bench ffmpeg --crf 0: exit %d, stderr %q: want a usage error", code, stderr)
	}
}
