package render

import (
	"fmt"
	"math"
	"slices"

	"github.com/vfxrender/vfx/kernels"
)

// Camera lock: the plate moves as if filmed by the source's camera. Each
// frame, the motion of the source's background (outside the matte) from
// the previous frame is fitted with an affine model, as the matte's
// motion cue fits the camera (matte/motion.go), here by direct image
// alignment (Gauss-Newton on the luminance, coarse to fine, with Tukey's
// biweight on the residuals): the background at x in this frame was at
// A(x) in the previous one. Its translation at the frame's centre,
// accumulated over the frames, shifts the plate (and its blur for the
// light wrap) through the existing Warp op; rotation and zoom are
// measured but not applied. A motion under camDeadband output pixels a
// frame counts as none, so a locked-off shot keeps a still plate.

const (
	// camLevels is the number of pyramid levels above the working
	// resolution the alignment starts from (each halves the size).
	camLevels = 3
	// camIters is the Gauss-Newton iterations per level.
	camIters = 6
	// camDeadband (output pixels a frame): a smaller motion is none.
	camDeadband = 0.15
	// camMatteFar is the matte value over which a pixel is the subject;
	// camDilate (working-resolution pixels) keeps the fit this far from
	// the subject.
	camMatteFar = 0.02
	camDilate   = 3
	// camMinShare is the least share of the frame the background must
	// cover for the fit.
	camMinShare = 0.05
	// camMaxStep bounds one frame's motion (a share of the working
	// width): a larger fit is a failure, and the frame counts as still.
	camMaxStep = 0.25
)

// cameraStage estimates the source camera's motion and moves the plate
// with it. Not in fill mode (there is no plate).
type cameraStage struct {
	dev    kernels.Device
	ops    kernels.Ops
	w, h   int // output size
	off    bool
	images []*kernels.Image

	// prev is the previous frame's pyramid (level 0 the working
	// resolution); have says it exists.
	prev []camLevel
	have bool
	// dx, dy is the background's motion accumulated since the first frame
	// (output pixels, x right, y down); step the last frame's.
	dx, dy     float64
	stepX      float64
	stepY      float64
	moved      bool // the plate is shifted this frame
	flow       kernels.Image
	bg, bgBlur kernels.Image // the shifted plate and its blur (full resolution)
}

// camLevel is one pyramid level of the luminance and its background
// weights.
type camLevel struct {
	w, h int
	lum  []float32
	use  []float32 // 1 on the background, 0 on and near the subject
}

func newCameraStage(dev kernels.Device, ops kernels.Ops, w, h int, off bool) *cameraStage {
	return &cameraStage{dev: dev, ops: ops, w: w, h: h, off: off}
}

func (c *cameraStage) free() { freeImages(c.dev, c.images) }

// Motion returns the camera stage's last frame's motion and its
// accumulation since the first frame (output pixels, x right, y down):
// the plate is shifted by the accumulation.
func (r *Renderer) Motion() (stepX, stepY, totalX, totalY float64) {
	if r.camera == nil {
		return 0, 0, 0, 0
	}
	c := r.camera
	return c.stepX, c.stepY, c.dx, c.dy
}

// run measures this frame's camera motion from f's luminance and matte
// (f.luma and f.alphaLow, made by the normals) and shifts the plate bg
// and its blur bgBlur when the accumulated motion is not zero.
func (c *cameraStage) run(f *lowFrame, bg, bgBlur kernels.Image) error {
	if c.off {
		return nil
	}
	lum, err := c.dev.ReadPixels(f.luma)
	if err != nil {
		return step("camera", err)
	}
	a, err := c.dev.ReadPixels(f.alphaLow)
	if err != nil {
		return step("camera", err)
	}
	cur := camPyramid(lum, a, f.w, f.h, camDilate)
	c.stepX, c.stepY = 0, 0
	if c.have {
		if mx, my, ok := cameraShift(c.prev, cur); ok {
			// Working-resolution pixels to output pixels.
			mx *= float64(c.w) / float64(f.w)
			my *= float64(c.h) / float64(f.h)
			if math.Hypot(mx, my) >= camDeadband {
				c.stepX, c.stepY = mx, my
			}
		}
	}
	c.prev, c.have = cur, true
	c.dx += c.stepX
	c.dy += c.stepY
	return c.shift(bg, bgBlur)
}

// shift makes c.bg and c.bgBlur, the plate and its blur moved by the
// accumulated motion (bilinear, the borders clamped), when it is not
// zero.
func (c *cameraStage) shift(bg, bgBlur kernels.Image) error {
	c.moved = c.dx != 0 || c.dy != 0
	if !c.moved {
		return nil
	}
	if c.flow == nil {
		a := allocator{dev: c.dev}
		a.img(&c.flow, c.w, c.h, 2)
		a.img(&c.bg, c.w, c.h, 3)
		a.img(&c.bgBlur, c.w, c.h, 3)
		c.images = a.made
		if a.err != nil {
			return fmt.Errorf("render: allocate: %w", a.err)
		}
	}
	// The plate at x shows what was at x - d.
	return steps(
		namedStep{"camera", func() error { return c.ops.Fill(c.flow, []float32{float32(-c.dx), float32(-c.dy)}) }},
		namedStep{"camera", func() error { return c.ops.Warp(c.bg, bg, c.flow, 1) }},
		namedStep{"camera", func() error { return c.ops.Warp(c.bgBlur, bgBlur, c.flow, 1) }},
	)
}

// plate returns the plate and its blur to composite this frame: moved,
// or bg and bgBlur as they are.
func (c *cameraStage) plate(bg, bgBlur kernels.Image) (kernels.Image, kernels.Image) {
	if c != nil && c.moved {
		return c.bg, c.bgBlur
	}
	return bg, bgBlur
}

// camPyramid is the pyramid of the luminance lum (w x h) with the
// background weights from the matte a: 1 where the matte is under
// camMatteFar within dilate pixels, else 0.
func camPyramid(lum, a []float32, w, h, dilate int) []camLevel {
	use := make([]float32, w*h)
	// Dilate the subject: a running maximum over rows, then columns.
	tmp := make([]float32, w*h)
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
			if m < camMatteFar {
				use[y*w+x] = 1
			}
		}
	}
	levels := []camLevel{{w: w, h: h, lum: lum, use: use}}
	for len(levels) <= camLevels {
		l := levels[len(levels)-1]
		if l.w < 16 || l.h < 16 {
			break
		}
		levels = append(levels, camHalve(l))
	}
	return levels
}

// camHalve averages 2x2 blocks; a block is background only if all four
// pixels are.
func camHalve(l camLevel) camLevel {
	w, h := l.w/2, l.h/2
	o := camLevel{w: w, h: h, lum: make([]float32, w*h), use: make([]float32, w*h)}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i0, i1 := 2*y*l.w+2*x, (2*y+1)*l.w+2*x
			o.lum[y*w+x] = (l.lum[i0] + l.lum[i0+1] + l.lum[i1] + l.lum[i1+1]) / 4
			o.use[y*w+x] = min(l.use[i0], l.use[i0+1], l.use[i1], l.use[i1+1])
		}
	}
	return o
}

// CameraShift is the camera stage's measure on two frames' luminance
// (w x h, planar) with their mattes (nil: no subject): the background's
// motion from prev to cur at the frame's centre, in pixels (x right, y
// down), fitted outside the matte dilated by dilate pixels. ok is false
// when too little background is seen or the fit fails. It exists so that
// the plate's motion in a render can be measured against the source's
// (vfx bench look).
func CameraShift(prevLum, prevAlpha, curLum, curAlpha []float32, w, h, dilate int) (dx, dy float64, ok bool) {
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
	return cameraShift(camPyramid(prevLum, prevAlpha, w, h, dilate), camPyramid(curLum, curAlpha, w, h, dilate))
}

// cameraShift fits the affine motion of the background from the
// pyramid prev to cur (same sizes: camPyramid's) and returns its
// translation at the frame's centre, in pixels of level 0 (x right, y
// down): the background moved by (dx, dy). ok is false when too little
// background is seen or the fit fails.
func cameraShift(prev, cur []camLevel) (dx, dy float64, ok bool) {
	if len(prev) != len(cur) || len(cur) == 0 {
		return 0, 0, false
	}
	var p [6]float64 // A(x) = x + (p0 + p1 u + p2 v, p3 + p4 u + p5 v), u, v in [0, 1]
	for li := len(cur) - 1; li >= 0; li-- {
		if li < len(cur)-1 {
			p[0] *= 2
			p[3] *= 2
			p[1], p[2], p[4], p[5] = 2*p[1], 2*p[2], 2*p[4], 2*p[5]
		}
		if !camAlign(prev[li], cur[li], &p, li == len(cur)-1) {
			return 0, 0, false
		}
	}
	l := cur[0]
	// The background at x now was at A(x): it moved by x - A(x).
	dx = -(p[0] + 0.5*p[1] + 0.5*p[2])
	dy = -(p[3] + 0.5*p[4] + 0.5*p[5])
	if math.IsNaN(dx) || math.IsNaN(dy) || math.Hypot(dx, dy) > camMaxStep*float64(l.w) {
		return 0, 0, false
	}
	return dx, dy, true
}

// camAlign refines p on one level: Gauss-Newton on prev(A(x)) = cur(x)
// over the pixels that are background in both, with Tukey's biweight on
// the residuals after the first iteration (all iterations when robust is
// false on the coarsest level's first). p's linear terms are in pixels
// per unit of the level's normalised coordinates.
func camAlign(prev, cur camLevel, p *[6]float64, coarsest bool) bool {
	w, h := cur.w, cur.h
	if prev.w != w || prev.h != h {
		return false
	}
	n := 0
	for _, u := range cur.use {
		if u > 0 {
			n++
		}
	}
	if float64(n) < camMinShare*float64(w*h) || n < 64 {
		return false
	}
	res := make([]float64, 0, n)
	scale := 0.0
	for it := 0; it < camIters; it++ {
		var ata [6][6]float64
		var atb [6]float64
		res = res[:0]
		for y := 1; y < h-1; y++ {
			v := float64(y) / float64(h)
			for x := 1; x < w-1; x++ {
				i := y*w + x
				if cur.use[i] == 0 {
					continue
				}
				u := float64(x) / float64(w)
				px := float64(x) + p[0] + p[1]*u + p[2]*v
				py := float64(y) + p[3] + p[4]*u + p[5]*v
				if px < 1 || py < 1 || px > float64(w-3) || py > float64(h-3) {
					continue
				}
				iv, gx, gy, bg := camSample(prev, px, py)
				if !bg {
					continue
				}
				e := float64(cur.lum[i]) - iv
				res = append(res, math.Abs(e))
				wt := 1.0
				if scale > 0 {
					r := e / (4.685 * scale)
					if r*r >= 1 {
						continue
					}
					wt = (1 - r*r) * (1 - r*r)
				}
				j := [6]float64{gx, gx * u, gx * v, gy, gy * u, gy * v}
				for a := 0; a < 6; a++ {
					for b := a; b < 6; b++ {
						ata[a][b] += wt * j[a] * j[b]
					}
					atb[a] += wt * j[a] * e
				}
			}
		}
		if len(res) < 64 {
			return false
		}
		for a := 0; a < 6; a++ {
			for b := 0; b < a; b++ {
				ata[a][b] = ata[b][a]
			}
			ata[a][a] *= 1 + 1e-6 // a little ridge: a flat background stays put
		}
		d, ok := solve6(ata, atb)
		if !ok {
			return false
		}
		for k := range p {
			p[k] += d[k]
		}
		// The robust scale from this iteration's residuals.
		slices.Sort(res)
		scale = math.Max(1.4826*res[len(res)/2], 1e-4)
		if math.Abs(d[0])+math.Abs(d[3]) < 1e-3 && !coarsest {
			break
		}
	}
	return true
}

// camSample is prev's luminance at (x, y) (bilinear), its gradient
// (central differences, bilinear) and whether the four pixels are all
// background.
func camSample(l camLevel, x, y float64) (v, gx, gy float64, bg bool) {
	x0, y0 := int(x), int(y)
	fx, fy := x-float64(x0), y-float64(y0)
	i := y0*l.w + x0
	if l.use[i] == 0 || l.use[i+1] == 0 || l.use[i+l.w] == 0 || l.use[i+l.w+1] == 0 {
		return 0, 0, 0, false
	}
	at := func(k int) float64 { return float64(l.lum[k]) }
	bil := func(a, b, c, d float64) float64 {
		return (1-fy)*((1-fx)*a+fx*b) + fy*((1-fx)*c+fx*d)
	}
	v = bil(at(i), at(i+1), at(i+l.w), at(i+l.w+1))
	gx = bil(at(i+1)-at(i-1), at(i+2)-at(i), at(i+l.w+1)-at(i+l.w-1), at(i+l.w+2)-at(i+l.w)) / 2
	gy = bil(at(i+l.w)-at(i-l.w), at(i+l.w+1)-at(i-l.w+1), at(i+2*l.w)-at(i), at(i+2*l.w+1)-at(i+1)) / 2
	return v, gx, gy, true
}

// solve6 solves the 6x6 system m x = b by Gaussian elimination with
// partial pivoting.
func solve6(m [6][6]float64, b [6]float64) ([6]float64, bool) {
	for c := 0; c < 6; c++ {
		piv := c
		for r := c + 1; r < 6; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[piv][c]) {
				piv = r
			}
		}
		if math.Abs(m[piv][c]) < 1e-12 {
			return [6]float64{}, false
		}
		m[c], m[piv] = m[piv], m[c]
		b[c], b[piv] = b[piv], b[c]
		for r := c + 1; r < 6; r++ {
			f := m[r][c] / m[c][c]
			for k := c; k < 6; k++ {
				m[r][k] -= f * m[c][k]
			}
			b[r] -= f * b[c]
		}
	}
	var x [6]float64
	for r := 5; r >= 0; r-- {
		s := b[r]
		for k := r + 1; k < 6; k++ {
			s -= m[r][k] * x[k]
		}
		x[r] = s / m[r][r]
	}
	return x, true
}
