package render

import (
	"fmt"
	"math"
	"slices"

	"github.com/vfxrender/vfx/kernels"
)

// Camera lock: the plate moves as if filmed by the source's camera. Each
// frame, the motion of the source's background (outside the dilated
// matte) from the previous frame is fitted as the matte's motion cue fits
// the camera (matte/motion.go: least squares over the background with
// Tukey's biweight on the residuals), here by direct alignment of the
// luminance at half the working resolution (inverse compositional
// Gauss-Newton, coarse to fine) and with a translation only, since only a
// translation is applied: its accumulation over the frames shifts the
// plate (and its blur for the light wrap) through the Shift op (Warp with
// a constant flow).
// A motion under camDeadband output pixels a frame counts as none, so a
// locked-off shot keeps a still plate.

const (
	// camLevels is the number of pyramid levels above half the working
	// resolution the alignment starts from (each halves the size).
	camLevels = 3
	// camIters is the Gauss-Newton iterations per level.
	camIters = 4
	// camDeadband (output pixels a frame): a smaller motion is none.
	camDeadband = 0.15
	// camMatteFar is the matte value over which a pixel is the subject;
	// camDilate (pixels at half the working resolution) keeps the fit
	// this far from the subject.
	camMatteFar = 0.02
	camDilate   = 2
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

	// lumQ is the frame's luminance at half the working resolution; prev
	// the previous frame's pyramid from it; have says it exists.
	lumQ kernels.Image
	prev []camLevel
	have bool
	// dx, dy is the background's motion accumulated since the first frame
	// (output pixels, x right, y down); step the last frame's.
	dx, dy     float64
	stepX      float64
	stepY      float64
	moved      bool          // the plate is shifted this frame
	bg, bgBlur kernels.Image // the shifted plate and its blur (full resolution)
	onMoved    func()        // Params.PlateMoved
}

// camLevel is one pyramid level of the luminance and its background
// weights.
type camLevel struct {
	w, h int
	lum  []float32
	use  []float32 // 1 on the background, 0 on and near the subject
}

func newCameraStage(dev kernels.Device, ops kernels.Ops, w, h int, off bool, moved func()) *cameraStage {
	return &cameraStage{dev: dev, ops: ops, w: w, h: h, off: off, onMoved: moved}
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
// (f.luma and f.alphaQ, made by the normals) and shifts the plate bg
// and its blur bgBlur when the accumulated motion is not zero.
func (c *cameraStage) run(f *lowFrame, bg, bgBlur kernels.Image) error {
	if c.off {
		return nil
	}
	if c.lumQ == nil {
		var err error
		if c.lumQ, err = c.dev.NewImage(f.alphaQ.Width(), f.alphaQ.Height(), 1); err != nil {
			return fmt.Errorf("render: allocate: %w", err)
		}
		c.images = append(c.images, &c.lumQ)
	}
	if err := step("camera", c.ops.ResizeArea(c.lumQ, f.luma)); err != nil {
		return err
	}
	lum, err := c.dev.ReadPixels(c.lumQ)
	if err != nil {
		return step("camera", err)
	}
	a, err := c.dev.ReadPixels(f.alphaQ)
	if err != nil {
		return step("camera", err)
	}
	qw, qh := f.alphaQ.Width(), f.alphaQ.Height()
	cur := camPyramid(lum, a, qw, qh, camDilate)
	c.stepX, c.stepY = 0, 0
	if c.have {
		if mx, my, ok := cameraShift(c.prev, cur, 2); ok {
			// Half-working-resolution pixels to output pixels.
			mx *= float64(c.w) / float64(qw)
			my *= float64(c.h) / float64(qh)
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
// accumulated motion (kernels Shift: bilinear, the borders clamped), when
// it is not zero.
func (c *cameraStage) shift(bg, bgBlur kernels.Image) error {
	c.moved = c.dx != 0 || c.dy != 0
	if !c.moved {
		return nil
	}
	if c.bg == nil {
		a := allocator{dev: c.dev}
		a.img(&c.bg, c.w, c.h, 3)
		a.img(&c.bgBlur, c.w, c.h, 3)
		c.images = append(c.images, a.made...)
		if a.err != nil {
			return fmt.Errorf("render: allocate: %w", a.err)
		}
		if c.onMoved != nil {
			c.onMoved()
		}
	}
	// The plate at x shows what was at x - d.
	dx, dy := float32(-c.dx), float32(-c.dy)
	return steps(
		namedStep{"camera", func() error { return c.ops.Shift(c.bg, bg, dx, dy) }},
		namedStep{"camera", func() error { return c.ops.Shift(c.bgBlur, bgBlur, dx, dy) }},
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
// camMatteFar within dilate pixels, else 0. Level 0 is lum's size.
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
		if l.w < 32 || l.h < 32 {
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
// motion from prev to cur, in pixels (x right, y down), fitted outside
// the matte dilated by dilate pixels. ok is false when too little
// background is seen or the fit fails. It exists so that the plate's
// motion in a render can be measured against the source's (vfx bench
// look).
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
	return cameraShift(camPyramid(prevLum, prevAlpha, w, h, dilate), camPyramid(curLum, curAlpha, w, h, dilate), 1)
}

// cameraShift fits the translation of the background from the pyramid
// prev to cur (same sizes: camPyramid's), coarse to fine, and returns it
// in pixels of level 0 (x right, y down): the background moved by (dx,
// dy). On level 0 it samples every stride-th pixel in x and y. ok is
// false when too little background is seen or the fit fails.
func cameraShift(prev, cur []camLevel, stride int) (dx, dy float64, ok bool) {
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
		if !camAlign(prev[li], cur[li], &px, &py, s) && li == 0 {
			return 0, 0, false
		}
	}
	if math.IsNaN(px) || math.IsNaN(py) || math.Hypot(px, py) > camMaxStep*float64(cur[0].w) {
		return 0, 0, false
	}
	return -px, -py, true
}

// camAlign refines the translation (px, py) on one level by inverse
// compositional Gauss-Newton on prev(x + p) = cur(x) over the pixels that
// are background in both (every s-th in x and y), with Tukey's biweight on
// the residuals after the first iteration.
func camAlign(prev, cur camLevel, px, py *float64, s int) bool {
	w, h := cur.w, cur.h
	if prev.w != w || prev.h != h {
		return false
	}
	res := make([]float64, 0, w*h/(s*s))
	scale := 0.0
	for it := 0; it < camIters; it++ {
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
		if len(res) < 64 || float64(len(res)) < camMinShare*float64(w*h)/float64(s*s) {
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
		scale = math.Max(1.4826*camMedian(res), 1e-4)
		if math.Abs(dx)+math.Abs(dy) < 1e-3 {
			break
		}
	}
	return true
}

// camMedian is the median of at most 1024 of v's values, evenly spaced
// (v is reordered).
func camMedian(v []float64) float64 {
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
