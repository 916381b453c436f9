package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/frame"
)

// TestRenderPlacement: --placement moves the subject (the render differs
// from the same job without it, the alpha output stays the source's
// matte); a malformed value is a usage error and the limits are
// job.CheckPlacement's, each at its edge.
func TestRenderPlacement(t *testing.T) {
	dir := t.TempDir()
	fx, err := bench.WriteFixture(context.Background(), filepath.Join(dir, "in"), bench.FixtureOptions{Width: 96, Height: 64, Frames: 2})
	if err != nil {
		t.Fatal(err)
	}
	render := func(name string, extra ...string) (int, string) {
		args := append([]string{"render", "--type", "image", "--source", fx.Still, "--alpha-mode", "custom", "--alpha", fx.StillMatte,
			"--reference", fx.Reference, "--prompt", "warm key light", "--seed", "3", "--quiet", "--out", filepath.Join(dir, name)}, extra...)
		code, _, stderr := runCLI(args...)
		return code, stderr
	}
	if code, e := render("plain"); code != 0 {
		t.Fatalf("plain: exit %d: %s", code, e)
	}
	if code, e := render("placed", "--placement", "1.6,-0.2,0.1"); code != 0 {
		t.Fatalf("placed: exit %d: %s", code, e)
	}
	a := decodeFrames(t, filepath.Join(dir, "plain", "render.png"), frame.RGB24)
	b := decodeFrames(t, filepath.Join(dir, "placed", "render.png"), frame.RGB24)
	diff := 0
	for i := range a[0].Planes[0] {
		if a[0].Planes[0][i] != b[0].Planes[0][i] {
			diff++
		}
	}
	if diff < len(a[0].Planes[0])/20 {
		t.Errorf("--placement changed %d of %d bytes of the render", diff, len(a[0].Planes[0]))
	}
	ma := decodeFrames(t, filepath.Join(dir, "plain", "alpha.png"), frame.Gray8)
	mb := decodeFrames(t, filepath.Join(dir, "placed", "alpha.png"), frame.Gray8)
	if string(ma[0].Planes[0]) != string(mb[0].Planes[0]) {
		t.Error("the alpha output of a placed job is not the source's matte")
	}
	for _, c := range []struct {
		value string
		ok    bool
		want  string
	}{
		{"0.25", true, ""},
		{"0.2499", false, "INVALID_PLACEMENT: placement.scale 0.2499"},
		{"4,1,-1", true, ""},
		{"4.0001", false, "placement.scale 4.0001"},
		{"1,1.0001,0", false, "placement.x 1.0001"},
		{"1,0,-1.0001", false, "placement.y -1.0001"},
		{"1,0", false, "--placement \"1,0\": want SCALE or SCALE,X,Y"},
		{"big", false, "want SCALE or SCALE,X,Y"},
	} {
		code, e := render("edge", "--placement", c.value)
		if (code == 0) != c.ok || !strings.Contains(e, c.want) {
			t.Errorf("--placement %s: exit %d, %q; want ok %v naming %q", c.value, code, e, c.ok, c.want)
		}
	}
	code, _, e := runCLI("render", "--type", "image", "--source", fx.Still, "--prompt", "x", "--placement", "2", "--out", filepath.Join(dir, "fill"))
	if code == 0 || !strings.Contains(e, "INVALID_PLACEMENT") || !strings.Contains(e, "fill") {
		t.Errorf("fill with --placement: exit %d, %q", code, e)
	}
}
