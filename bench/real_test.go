package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vfxrender/vfx/internal/modeltest"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/matte"
)

// TestRealMattes runs every matte mode through the real runtime and model
// on three short real clips with hand-made masks, with the default
// schedule, and holds each to a J floor a little below its benchmark
// figure (`vfx bench matte`, see docs/mattes.md).
func TestRealMattes(t *testing.T) {
	root := filepath.Join("..", "..", "shared", "datasets", "davis2016-train")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("real footage not found (%v): the dataset lives in ../shared/datasets beside the repository", err)
	}
	if testing.Short() {
		t.Skip("-short: the network runs about 40 times here")
	}
	net := modeltest.Load(t)
	dev := kernels.NewCPU(0)
	defer dev.Close()
	ctx := context.Background()
	// About 0.05 below each clip's figure here with select's memory
	// (session 16: dog-agility select 0.721, select-mid 0.760, select-inv
	// 0.957; rollerblade 0.570, 0.767, 0.960; motorbike 0.813, 0.848, 0.989;
	// session 19, the network's regions trusted per frame: rollerblade
	// select 0.836, select-mid 0.739, select-inv 0.959; dog-agility
	// 0.712, 0.744, 0.956; motorbike 0.811, 0.834, 0.989).
	floors := map[string]map[MatteMode]float64{
		"dog-agility": {SelectFirst: 0.67, SelectMiddle: 0.71, SelectInverse: 0.90, AutoVideo: 0.55, AutoStill: 0.74},
		"rollerblade": {SelectFirst: 0.78, SelectMiddle: 0.71, SelectInverse: 0.91, AutoVideo: 0.42, AutoStill: 0.07},
		"motorbike":   {SelectFirst: 0.76, SelectMiddle: 0.79, SelectInverse: 0.93, AutoVideo: 0.52, AutoStill: 0.83},
	}
	nc := &NetCache{Net: net}
	for _, name := range []string{"dog-agility", "rollerblade", "motorbike"} {
		clip, err := OpenDAVISVideo(ctx, filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		modes := append(slices.Clone(AllMatteModes), NetSelect)
		rs, err := RunRealMattes(ctx, dev, clip, RealMatteConfig{Modes: modes, Schedule: matte.DefaultCPUSchedule, Net: nc})
		if err != nil {
			t.Fatal(err)
		}
		checkSelectOnNet(t, rs, clip.Len())
		for _, r := range rs {
			t.Logf("%-12s %-10s %s copyJ %.3f", r.Clip, r.Mode, r.Scores, r.CopyJ)
			if f := floors[name][r.Mode]; r.Scores.J < f {
				t.Errorf("%s %s: J %.3f below its floor %.2f", name, r.Mode, r.Scores.J, f)
			}
		}
		nc.Forget(clip)
	}
}

// checkSelectOnNet: the net-select row carries select's scores on its own
// frames (the network's but the keyframe, frame 0), frame for frame
// select's.
func checkSelectOnNet(t *testing.T, rs []ClipResult, n int) {
	t.Helper()
	var sel, ns *ClipResult
	for k := range rs {
		switch rs[k].Mode {
		case SelectFirst:
			sel = &rs[k]
		case NetSelect:
			ns = &rs[k]
		}
	}
	if sel == nil || ns == nil || ns.SelectOnNet == nil {
		t.Fatalf("no select, net-select or select-on-net scores: %+v", rs)
	}
	var frames []int
	for i := 1; i < n; i++ {
		if matte.DefaultCPUSchedule.ForSelect().Runs(i, n, 0) {
			frames = append(frames, i)
		}
	}
	on := ns.SelectOnNet
	if len(on.PerJ) != len(frames) || len(ns.Scores.PerJ) != len(frames) {
		t.Fatalf("%s: select on net-select's frames has %d frames, net-select %d, the schedule %d", sel.Clip, len(on.PerJ), len(ns.Scores.PerJ), len(frames))
	}
	for k, i := range frames {
		if on.PerJ[k] != sel.Scores.PerJ[i] {
			t.Fatalf("%s: select on net-select's frame %d: J %.4f, select's own %.4f", sel.Clip, i, on.PerJ[k], sel.Scores.PerJ[i])
		}
	}
	t.Logf("%s: select %.3f on the network's frames, net-select %.3f", sel.Clip, on.J, ns.Scores.J)
}
