package render

import (
	"fmt"
	"math"

	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render/camfit"
)

// Camera lock: the plate moves as if filmed by the source's camera. Each
// frame, the motion of the source's background (outside the dilated
// matte) from the previous frame is fitted at half the working resolution
// (package camfit: a translation by direct alignment): its accumulation
// over the frames, rounded to whole output pixels, moves the plate (and
// its blur for the light wrap): the composite reads them at the shifted
// position itself (kernels.CompositeLook.PlateX, PlateY: what the Shift
// op would give, bit for bit, without the two shifted full-resolution
// images). A motion under camDeadband output pixels a frame counts as
// none, so a locked-off shot keeps a still plate.
//
// Whole pixels, not the fitted fraction (since session 20): a plate
// resampled at a fractional offset is blurred by the bilinear filter by
// an amount that changes from frame to frame (none at a whole offset,
// most at a half), so a sharp plate's texture pumps as it pans; moved by
// whole pixels it keeps its sharpness and its exact codes, which the
// composite copies (kernels.PlateCodes) instead of converting every
// background pixel again, and x264 finds its blocks again in the last
// frame. The cost is a position within half an output pixel of the
// fitted one (a slow pan steps by one pixel every few frames).

const (
	// camDeadband (output pixels a frame): a smaller motion is none.
	camDeadband = 0.15
	// camDilate (pixels at half the working resolution) keeps the fit
	// this far from the subject (camfit.Pyramid).
	camDilate = 2
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
	prev []camfit.Level
	have bool
	// The frames' read-backs, pyramids (two: the previous frame's and
	// this one's, alternating) and the fit's residuals, kept for the job.
	lum, alpha []float32
	pyr        [2]camfit.Builder
	cur        int
	res        []float64
	// dx, dy is the background's motion accumulated since the first frame
	// (output pixels, x right, y down); step the last frame's.
	dx, dy float64
	stepX  float64
	stepY  float64
	moved  bool // the plate is moved this frame
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
// (f.luma and f.alphaQ, made by the normals): the plate moves when the
// accumulated motion is not zero (see setLook).
func (c *cameraStage) run(f *lowFrame) error {
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
	var err error
	if c.lum, err = c.dev.ReadPixelsTo(c.lum, c.lumQ); err != nil {
		return step("camera", err)
	}
	if c.alpha, err = c.dev.ReadPixelsTo(c.alpha, f.alphaQ); err != nil {
		return step("camera", err)
	}
	qw, qh := f.alphaQ.Width(), f.alphaQ.Height()
	c.cur ^= 1 // the other Builder holds c.prev
	cur := c.pyr[c.cur].Build(c.lum, c.alpha, qw, qh, camDilate)
	c.stepX, c.stepY = 0, 0
	if c.have {
		if mx, my, ok := camfit.FitScratch(c.prev, cur, 2, &c.res); ok {
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
	c.moved = c.dx != 0 || c.dy != 0
	return nil
}

// plateMoved reports whether the plate is moved this frame.
func (c *cameraStage) plateMoved() bool { return c != nil && c.moved }

// setLook sets the composite's plate offset: the plate at x shows what
// was at x - d (d the accumulated motion rounded to whole pixels), as
// Shift(plate, -dx, -dy) would; a still plate is read as it is.
func (c *cameraStage) setLook(look *kernels.CompositeLook) {
	if c.plateMoved() {
		look.PlateX, look.PlateY = float32(math.Round(-c.dx)), float32(math.Round(-c.dy))
	}
}

// compositeLook is the composite's look inputs for this frame: the
// compositing stage's, with the camera lock's plate offset.
func (r *Renderer) compositeLook() kernels.CompositeLook {
	look := r.comp.compositeLook(r.exposure)
	r.camera.setLook(&look)
	return look
}
