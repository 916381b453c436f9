package look

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render"
	"github.com/vfxrender/vfx/render/plate"
)

// TestPlateGrainDAVIS is the plate matching's grain regression on real
// footage (issue 15): a real plate (the first frame of DAVIS surf, read
// from ../shared/datasets at test time) gets known synthetic grain
// (kernels.GrainOps.AddGrain, 0.02 in square-root luminance, about 4
// code values), every look subject is composited over it, and the
// subject's grain measured on the output must be within 0.7-1.4x the
// plate's. On the clean plate no grain is added (the subjects are
// grainier than it): the renderer adds none, and the output subject's
// grain is the one the renderer measured before adding grain. (Its ratio
// to the plate's still moves with plate matching on, through the
// highlight cap and black level: a subject kept from clipping shows its
// grain.)
func TestPlateGrainDAVIS(t *testing.T) {
	if testing.Short() {
		t.Skip("renders real subjects; skipped with -short")
	}
	if _, err := os.Stat(filepath.Join(lookDataset, ReferenceClip, "source.mp4")); err != nil {
		t.Skipf("dataset not found at %s: %v", lookDataset, err)
	}
	ctx := context.Background()
	dev := kernels.NewCPU(0)
	defer dev.Close()
	refs, err := decodeFrames(ctx, filepath.Join(lookDataset, ReferenceClip, "source.mp4"), 1)
	if err != nil {
		t.Fatal(err)
	}
	clean := refs[0]
	const added = 0.02
	grainy, err := bench.AddPlateGrain(dev, clean, added)
	if err != nil {
		t.Fatal(err)
	}

	// ratio renders subject s over ref and returns the output's subject
	// grain over its plate grain, the grain the renderer added, and the
	// output subject's grain over the one the renderer measured on its
	// composite before adding grain.
	ratio := func(s *lookSubject, ref *frame.HostFrame, off bool) (float64, float32, float64) {
		r, err := render.New(ctx, dev, render.Params{Reference: ref, Seed: 1, Width: s.w, Height: s.h, NoPlateMatch: off})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		out, err := renderOne(ctx, dev, r, s, s.alpha)
		if err != nil {
			t.Fatal(err)
		}
		g, _, _ := plateMeasure(s, out)
		_, sub, add, _ := r.PlateMatch()
		n := s.w * s.h
		y := make([]float32, n)
		for i := range y {
			y[i] = float32(0.2126*float64(out[i]) + 0.7152*float64(out[n+i]) + 0.0722*float64(out[2*n+i]))
		}
		return g, add, plate.Measure(y, s.w, s.h, s.alpha).Grain / sub.Grain
	}
	for _, name := range Subjects {
		dir := filepath.Join(lookDataset, name)
		frames, err := decodeFrames(ctx, filepath.Join(dir, "source.mp4"), 1)
		if err != nil {
			t.Fatal(err)
		}
		s, err := loadSubject(ctx, dev, dir, frames[0], filepath.Join(dir, "masks", "00000.png"))
		if err != nil {
			t.Fatal(err)
		}
		gOff, _, _ := ratio(s, grainy, true)
		gOn, add, _ := ratio(s, grainy, false)
		t.Logf("%-16s grainy plate: grain ratio %.3f (matching off %.3f), added %.4f", name, gOn, gOff, add)
		if !(gOn >= 0.7 && gOn <= 1.4) {
			t.Errorf("%s on the grainy plate: subject / plate grain %.3f, want 0.7-1.4 (off: %.3f)", name, gOn, gOff)
		}
		cOff, _, _ := ratio(s, clean, true)
		cOn, cAdd, same := ratio(s, clean, false)
		t.Logf("%-16s clean plate:  grain ratio %.3f (matching off %.3f), added %.4f, output / measured subject grain %.4f",
			name, cOn, cOff, cAdd, same)
		if !(cOn > 1) || cAdd != 0 {
			t.Errorf("%s on the clean plate: grain ratio %.3f, grain %.4f added: want a subject grainier than the plate and none added", name, cOn, cAdd)
		}
		// float32 vs float64 luminance differ by about 1e-5; and the
		// renderer measures the subject before matched focus defocuses the
		// plate, which the measure's pixels with 0.98 <= A < 1 then show:
		// dog-agility reads 0.99888 with the masked wrap (its median
		// absolute deviation moved one step; 1.00000 before it), 0.99711
		// since the masked wrap's light fades as a*a (issue 31 session 15:
		// 2% less wrap on those pixels; 0.99888 with a*a only below
		// a = 1/2). The grain added itself is checked above (cAdd).
		if math.Abs(same-1) > 3e-3 {
			t.Errorf("%s on the clean plate: output subject grain %.6fx the renderer's measure before grain: grain was added", name, same)
		}
	}
}
