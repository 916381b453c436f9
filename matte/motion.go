package matte

import (
	"math"
	"slices"
)

// Motion cue for auto. A segmentation network marks every salient thing
// in view; the subject of a shot is the one that moves on its own (the
// convention of unsupervised video segmentation). On each network frame
// the camera's motion is fitted to the flow of the background (an affine
// model, least squares with one robust reweighting), and each region's
// own motion is the mean distance of its flow from that model. Where some
// region clearly moves on its own, the regions that move much less than
// it (poles, a flower pot the camera passes) are another object's.

// motionMinMove is the least own motion (flow pixels a frame) of the
// fastest region for the cue to apply; below it nothing clearly moves.
const motionMinMove = 1.0

// motionStaticShare is the share of the fastest region's own motion
// under which a region counts as still.
const motionStaticShare = 0.25

// motionMinArea is the least region area (flow pixels) that counts as a
// mover: smaller regions' means are noise.
const motionMinArea = 64

// affine is x' = a0 + a1 x + a2 y, y' = a3 + a4 x + a5 y.
type affine [6]float64

func (a affine) at(x, y float64) (float64, float64) {
	return a[0] + a[1]*x + a[2]*y, a[3] + a[4]*x + a[5]*y
}

// fitAffine fits the flow (planar dx, dy at w x h) over the pixels where
// use is true, weighted by wt (nil: 1), by least squares. ok is false when
// the system is singular (too few pixels).
func fitAffine(flow []float32, w, h int, use []bool, wt []float32) (affine, bool) {
	n := w * h
	var ata [3][3]float64
	var atx, aty [3]float64
	cnt := 0
	for i := 0; i < n; i++ {
		if !use[i] {
			continue
		}
		wi := 1.0
		if wt != nil {
			wi = float64(wt[i])
		}
		if wi <= 0 {
			continue
		}
		cnt++
		v := [3]float64{1, float64(i%w) / float64(w), float64(i/w) / float64(h)}
		for r := 0; r < 3; r++ {
			for c := 0; c < 3; c++ {
				ata[r][c] += wi * v[r] * v[c]
			}
			atx[r] += wi * v[r] * float64(flow[i])
			aty[r] += wi * v[r] * float64(flow[n+i])
		}
	}
	if cnt < 16 {
		return affine{}, false
	}
	bx, okx := solve3(ata, atx)
	by, oky := solve3(ata, aty)
	if !okx || !oky {
		return affine{}, false
	}
	// Back from normalised coordinates to pixels.
	return affine{bx[0], bx[1] / float64(w), bx[2] / float64(h), by[0], by[1] / float64(w), by[2] / float64(h)}, true
}

// solve3 solves the 3x3 system m x = b by Cramer's rule.
func solve3(m [3][3]float64, b [3]float64) ([3]float64, bool) {
	det := func(m [3][3]float64) float64 {
		return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) -
			m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) +
			m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
	}
	d := det(m)
	if math.Abs(d) < 1e-12 {
		return [3]float64{}, false
	}
	var x [3]float64
	for c := 0; c < 3; c++ {
		mc := m
		for r := 0; r < 3; r++ {
			mc[r][c] = b[r]
		}
		x[c] = det(mc) / d
	}
	return x, true
}

// stillRegions marks, in sel, the network's regions (labelled in f.lab)
// that move much less than the fastest one as other objects, when that
// one clearly moves on its own. flow is planar (dx, dy) at the flow size.
// It reports how many regions it marked.
func (f *netFuser) stillRegions(sel []regionKind, flow []float32) int {
	w, h := f.w, f.h
	n := w * h
	if len(flow) != 2*n || len(sel) < 3 {
		return 0 // fewer than two regions: nothing to choose between
	}
	bg := make([]bool, n)
	for i, l := range f.lab {
		bg[i] = l == 0
	}
	cam, ok := fitAffine(flow, w, h, bg, nil)
	if !ok {
		return 0
	}
	res := func(i int) float64 {
		x, y := cam.at(float64(i%w), float64(i/w))
		return math.Hypot(float64(flow[i])-x, float64(flow[n+i])-y)
	}
	// One robust reweighting: background pixels that move on their own
	// (a second subject, water, leaves) weigh less in the final fit.
	var rs []float64
	for i := 0; i < n; i += 7 {
		if bg[i] {
			rs = append(rs, res(i))
		}
	}
	if len(rs) == 0 {
		return 0
	}
	slices.Sort(rs)
	s := max(rs[len(rs)/2]*1.4826, 0.05)
	wt := make([]float32, n)
	for i := range wt {
		if bg[i] {
			r := res(i) / (3 * s)
			if r < 1 {
				wt[i] = float32((1 - r*r) * (1 - r*r)) // Tukey's biweight
			}
		}
	}
	if cam, ok = fitAffine(flow, w, h, bg, wt); !ok {
		return 0
	}
	own := make([]float64, len(sel))
	for i, l := range f.lab {
		if l != 0 {
			own[l] += res(i)
		}
	}
	fastest := 0.0
	for l := 1; l < len(sel); l++ {
		own[l] /= float64(max(f.area[l], 1))
		if f.area[l] >= motionMinArea {
			fastest = max(fastest, own[l])
		}
	}
	if fastest < motionMinMove {
		return 0
	}
	marked := 0
	for l := 1; l < len(sel); l++ {
		if sel[l] == regionObject && own[l] < motionStaticShare*fastest {
			sel[l] = regionOther
			marked++
		}
	}
	return marked
}
