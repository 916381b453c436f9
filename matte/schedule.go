package matte

import (
	"context"
	"fmt"
	"math"

	"github.com/vfxrender/vfx/kernels"
)

// A schedule that follows the motion (Schedule.Motion). The fixed
// schedule runs the network on every Every-th frame whatever happens:
// fast limbs fail between its runs while a slow stretch wastes them. The
// motion schedule spends the same number of runs (or fewer) where the
// picture changes: each frame's change from the one before is measured
// at a quarter of the flow size after the best whole-pixel shift of the
// frame (so a camera pan, which the flow carries well, counts little and
// what moves against the frame counts: the subject's own motion and
// deformation), and the runs are placed at equal steps of the clip's
// accumulated change. Frame 0, the last frame and the keyframe always
// run, as in the fixed schedule.

const (
	// motionScale is the size the change is measured at, as a divisor
	// of the flow size.
	motionScale = 4
	// motionSearch is the largest whole-pixel shift (at that size, so 12
	// flow pixels, about 5% of the flow size's short side) the change is
	// measured after: faster pans count as change.
	motionSearch = 3
)

// Fixed reports whether the schedule is the fixed one (every Every-th
// frame), decided frame by frame as the frames arrive (Runs): Motion 0,
// or the network on every frame.
func (s Schedule) Fixed() bool { return !(s.Motion > 0) || s.Every <= 1 }

// Plan returns the frames the network runs on in a clip whose frame i
// changed by change[i] from frame i-1 (change[0] is ignored; see
// ClipChanges) with keyframe key (< 0: none). The fixed schedule gives
// Runs; the motion schedule at most as many runs as the fixed one:
// frame 0, the last frame and the keyframe, and the rest at equal steps of
// the accumulated change, where each frame's step is Motion x its change
// (relative to the clip's mean change) + (1 - Motion). A clip with no
// change (a still, or frozen frames) takes the fixed schedule.
func (s Schedule) Plan(change []float64, key int) []bool {
	n := len(change)
	runs := make([]bool, n)
	budget := 0
	for i := range runs {
		runs[i] = s.Runs(i, n, key)
		if runs[i] {
			budget++
		}
	}
	if s.Fixed() || n < 3 {
		return runs
	}
	mean := 0.0
	for _, c := range change[1:] {
		mean += max(c, 0)
	}
	mean /= float64(n - 1)
	if !(mean > 0) || math.IsInf(mean, 0) {
		return runs
	}
	m := min(s.Motion, 1)
	acc := make([]float64, n) // acc[i]: the accumulated step from frame 0 to i
	for i := 1; i < n; i++ {
		acc[i] = acc[i-1] + m*max(change[i], 0)/mean + (1 - m)
	}
	clear(runs)
	runs[0], runs[n-1] = true, true
	fixed := 2
	if key > 0 && key < n-1 {
		runs[key] = true
		fixed++
	}
	free := budget - fixed
	total := acc[n-1]
	i := 1
	for j := 1; j <= free; j++ {
		target := float64(j) * total / float64(free+1)
		for i < n-1 && acc[i] < target {
			i++
		}
		// The frame nearer the target of the two around it.
		k := i
		if k > 1 && target-acc[k-1] < acc[k]-target {
			k--
		}
		runs[k] = true // a frame picked twice is one run fewer
	}
	return runs
}

// ClipChanges measures each frame's change from the frame before (see
// Schedule.Plan): the mean absolute difference of their luminance at a
// quarter of the flow size (sRGB values in [0,1]) after the whole-pixel
// shift, within motionSearch, that makes it least. change[0] is 0.
func ClipChanges(ctx context.Context, dev kernels.Device, src Frames, w, h int) ([]float64, error) {
	n := src.Len()
	img, err := dev.NewImage(w, h, 3)
	if err != nil {
		return nil, err
	}
	defer dev.Free(img)
	qw, qh := max(1, w/motionScale), max(1, h/motionScale)
	prev, cur := make([]float32, qw*qh), make([]float32, qw*qh)
	luma := make([]float32, w*h)
	change := make([]float64, n)
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := src.Frame(ctx, i, img); err != nil {
			return nil, fmt.Errorf("matte: frame %d: %w", i, err)
		}
		pix, err := dev.ReadPixels(img)
		if err != nil {
			return nil, err
		}
		lumaSmall(cur, qw, qh, luma, pix, w, h)
		if i > 0 {
			change[i] = shiftedChange(prev, cur, qw, qh, motionSearch)
		}
		prev, cur = cur, prev
	}
	return change, nil
}

// lumaSmall writes the luminance (Rec. 709 weights) of the planar RGB
// frame pix (w x h) shrunk to qw x qh by box averages into dst (l: w*h
// scratch). It stays on the host with boxResize rather than the device's
// Luma and ResizeArea: the motion schedule's fold figures were measured
// with it, and the exact area weights move some planned runs by a frame.
func lumaSmall(dst []float32, qw, qh int, l, pix []float32, w, h int) {
	n := w * h
	for p := 0; p < n; p++ {
		l[p] = 0.2126*pix[p] + 0.7152*pix[n+p] + 0.0722*pix[2*n+p]
	}
	boxResize(dst, qw, qh, l, w, h)
}

// shiftedChange is the least, over whole-pixel shifts (dx, dy) within r,
// of the mean |cur(x, y) - prev(x - dx, y - dy)| over the pixels both
// cover.
func shiftedChange(prev, cur []float32, w, h, r int) float64 {
	best := math.Inf(1)
	for dy := -r; dy <= r; dy++ {
		for dx := -r; dx <= r; dx++ {
			x0, x1 := max(0, dx), min(w, w+dx)
			y0, y1 := max(0, dy), min(h, h+dy)
			if x1-x0 < 1 || y1-y0 < 1 {
				continue
			}
			s := 0.0
			for y := y0; y < y1; y++ {
				c := cur[y*w+x0 : y*w+x1]
				p := prev[(y-dy)*w+x0-dx : (y-dy)*w+x1-dx]
				for k, v := range c {
					s += math.Abs(float64(v - p[k]))
				}
			}
			best = min(best, s/float64((x1-x0)*(y1-y0)))
		}
	}
	if math.IsInf(best, 1) {
		return 0
	}
	return best
}
