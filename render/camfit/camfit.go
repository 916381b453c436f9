// Package camfit fits the source camera's motion between two frames for
// render's camera lock: the motion of the background (outside the dilated
// matte) is fitted as the matte's motion cue fits the camera
// (matte/motion.go: least squares over the background with Tukey's
// biweight on the residuals), here by direct alignment of the luminance
// (inverse compositional Gauss-Newton, coarse to fine) and with a
// translation only, since only a translation is applied.
package camfit

import (
	"math"
	"slices"
)

const (
	// levels is the number of pyramid levels above level 0 the alignment
	// starts from (each halves the size).
	levels = 3
	// iters is the Gauss-Newton iterations per level.
	iters = 4
	// matteFar is the matte value over which a pixel is the subject.
	matteFar = 0.02
	// minShare is the least share of the frame the background must cover
	// for the fit.
	minShare = 0.05
	// maxStep bounds one frame's motion (a share of the width): a larger
	// fit is a failure.
	maxStep = 0.25
)

// Level is one pyramid level of the luminance and its background
// weights.
type Level struct {
	w, h int
	lum  []float32
	use  []float32 // 1 on the background, 0 on and near the subject
}

// Pyramid is the pyramid of the luminance lum (w x h) with the
// background weights from the matte a: 1 where the matte is under
// matteFar within dilate pixels, else 0. Level 0 is lum's size (and lum
// itself: Builder.Build copies it instead).
func Pyramid(lum, a []float32, w, h, dilate int) []Level {
	var b Builder
	return b.build(lum, a, w, h, dilate, false)
}

// Builder makes pyramids in buffers it keeps from one Build to the next,
// so that a camera lock allocates nothing per frame once its sizes are
// set. A Build's levels are valid until the next Build on the same
// Builder (keep two and alternate to hold the previous frame's).
type Builder struct {
	tmp    []float32
	levels []Level
}

// Build is Pyramid with level 0's luminance copied from lum (which the
// caller may then reuse) and every buffer the Builder's.
func (b *Builder) Build(lum, a []float32, w, h, dilate int) []Level {
	return b.build(lum, a, w, h, dilate, true)
}

// grow returns v with length n, reusing its memory when it is large
// enough.
func grow(v []float32, n int) []float32 {
	if cap(v) < n {
		return make([]float32, n)
	}
	return v[:n]
}

func (b *Builder) build(lum, a []float32, w, h, dilate int, copyLum bool) []Level {
	if len(b.levels) == 0 {
		b.levels = make([]Level, 1, levels+1)
	}
	l0 := &b.levels[0]
	l0.w, l0.h = w, h
	l0.use = grow(l0.use, w*h)
	if copyLum {
		l0.lum = grow(l0.lum, w*h)
		copy(l0.lum, lum[:w*h])
	} else {
		l0.lum = lum
	}
	use := l0.use
	clear(use)
	// Dilate the subject: a running maximum over rows, then columns.
	b.tmp = grow(b.tmp, w*h)
	tmp := b.tmp
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			m := float32(0)
			for k := max(0, x-dilate); k <= min(w-1, x+dilate); k++ {
				m = max(m, a[y*w+k])
			}
			tmp[y*w+x] = m
		}
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			m := float32(0)
			for k := max(0, y-dilate); k <= min(h-1, y+dilate); k++ {
				m = max(m, tmp[k*w+x])
			}
			if m < matteFar {
				use[y*w+x] = 1
			}
		}
	}
	n := 1
	for n <= levels {
		l := b.levels[n-1]
		if l.w < 32 || l.h < 32 {
			break
		}
		if n == len(b.levels) {
			b.levels = append(b.levels, Level{})
		}
		halveInto(&b.levels[n], l)
		n++
	}
	return b.levels[:n:n]
}

// halveInto makes o the half of l: it averages 2x2 blocks; a block is
// background only if all four pixels are. o's buffers are reused.
func halveInto(o *Level, l Level) {
	w, h := l.w/2, l.h/2
	o.w, o.h = w, h
	o.lum, o.use = grow(o.lum, w*h), grow(o.use, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i0, i1 := 2*y*l.w+2*x, (2*y+1)*l.w+2*x
			o.lum[y*w+x] = (l.lum[i0] + l.lum[i0+1] + l.lum[i1] + l.lum[i1+1]) / 4
			o.use[y*w+x] = min(l.use[i0], l.use[i0+1], l.use[i1], l.use[i1+1])
		}
	}
}

// Shift is render's camera-lock measure on two frames' luminance
// (w x h, planar) with their mattes (nil: no subject): the background's
// motion from prev to cur, in pixels (x right, y down), fitted outside
// the matte dilated by dilate pixels. ok is false when too little
// background is seen or the fit fails. It exists so that the plate's
// motion in a render can be measured against the source's (vfx bench
// look).
func Shift(prevLum, prevAlpha, curLum, curAlpha []float32, w, h, dilate int) (dx, dy float64, ok bool) {
	if len(prevLum) != w*h || len(curLum) != w*h {
		return 0, 0, false
	}
	zero := make([]float32, w*h)
	if prevAlpha == nil {
		prevAlpha = zero
	}
	if curAlpha == nil {
		curAlpha = zero
	}
	return Fit(Pyramid(prevLum, prevAlpha, w, h, dilate), Pyramid(curLum, curAlpha, w, h, dilate), 1)
}

// Fit fits the translation of the background from the pyramid
// prev to cur (same sizes: Pyramid's), coarse to fine, and returns it
// in pixels of level 0 (x right, y down): the background moved by (dx,
// dy). On level 0 it samples every stride-th pixel in x and y. ok is
// false when too little background is seen or the fit fails.
func Fit(prev, cur []Level, stride int) (dx, dy float64, ok bool) {
	var res []float64
	return FitScratch(prev, cur, stride, &res)
}

// FitScratch is Fit with the residuals' buffer *res kept by the caller
// from one call to the next (grown as needed).
func FitScratch(prev, cur []Level, stride int, res *[]float64) (dx, dy float64, ok bool) {
	if len(prev) != len(cur) || len(cur) == 0 {
		return 0, 0, false
	}
	// The background at x now was at x + p in the previous frame.
	var px, py float64
	for li := len(cur) - 1; li >= 0; li-- {
		if li < len(cur)-1 {
			px, py = 2*px, 2*py
		}
		s := 1
		if li == 0 {
			s = stride
		}
		// A coarse level with too little background is skipped.
		if !align(prev[li], cur[li], &px, &py, s, res) && li == 0 {
			return 0, 0, false
		}
	}
	if math.IsNaN(px) || math.IsNaN(py) || math.Hypot(px, py) > maxStep*float64(cur[0].w) {
		return 0, 0, false
	}
	return -px, -py, true
}

// align refines the translation (px, py) on one level by inverse
// compositional Gauss-Newton on prev(x + p) = cur(x) over the pixels that
// are background in both (every s-th in x and y), with Tukey's biweight on
// the residuals after the first iteration.
func align(prev, cur Level, px, py *float64, s int, buf *[]float64) bool {
	w, h := cur.w, cur.h
	if prev.w != w || prev.h != h {
		return false
	}
	if n := w * h / (s * s); cap(*buf) < n {
		*buf = make([]float64, 0, n)
	}
	res := (*buf)[:0]
	defer func() { *buf = res[:0] }()
	scale := 0.0
	for it := 0; it < iters; it++ {
		var hxx, hxy, hyy, bx, by float64
		res = res[:0]
		ix, iy := int(math.Floor(*px)), int(math.Floor(*py))
		fx, fy := float32(*px-float64(ix)), float32(*py-float64(iy))
		for y := 1; y < h-1; y += s {
			sy := y + iy
			if sy < 0 || sy >= h-1 {
				continue
			}
			for x := 1; x < w-1; x += s {
				sx := x + ix
				i, j := y*w+x, sy*w+sx
				if sx < 0 || sx >= w-1 || cur.use[i] == 0 ||
					prev.use[j] == 0 || prev.use[j+1] == 0 || prev.use[j+w] == 0 || prev.use[j+w+1] == 0 {
					continue
				}
				l := prev.lum
				v := (1-fy)*((1-fx)*l[j]+fx*l[j+1]) + fy*((1-fx)*l[j+w]+fx*l[j+w+1])
				e := float64(v - cur.lum[i])
				res = append(res, math.Abs(e))
				wt := 1.0
				if scale > 0 {
					r := e / (4.685 * scale)
					if r*r >= 1 {
						continue
					}
					wt = (1 - r*r) * (1 - r*r)
				}
				gx := float64(cur.lum[i+1]-cur.lum[i-1]) / 2
				gy := float64(cur.lum[i+w]-cur.lum[i-w]) / 2
				hxx += wt * gx * gx
				hxy += wt * gx * gy
				hyy += wt * gy * gy
				bx += wt * gx * e
				by += wt * gy * e
			}
		}
		if len(res) < 64 || float64(len(res)) < minShare*float64(w*h)/float64(s*s) {
			return false
		}
		// A little ridge: a flat background stays put.
		hxx, hyy = hxx*(1+1e-6)+1e-12, hyy*(1+1e-6)+1e-12
		det := hxx*hyy - hxy*hxy
		if !(det > 0) {
			return false
		}
		dx := (hyy*bx - hxy*by) / det
		dy := (hxx*by - hxy*bx) / det
		*px -= dx
		*py -= dy
		scale = math.Max(1.4826*median(res), 1e-4)
		if math.Abs(dx)+math.Abs(dy) < 1e-3 {
			break
		}
	}
	return true
}

// median is the median of at most 1024 of v's values, evenly spaced
// (v is reordered).
func median(v []float64) float64 {
	if k := len(v) / 1024; k > 1 {
		n := 0
		for i := 0; i < len(v); i += k {
			v[n] = v[i]
			n++
		}
		v = v[:n]
	}
	slices.Sort(v)
	return v[len(v)/2]
}
