package render

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render/prompt"
)

// Tuning of the look shared by its stages. Distances in pixels are at
// the low working resolution (shorter side lowShortSide).
const (
	// lowShortSide is the shorter side of the working resolution of
	// everything but the final composite.
	lowShortSide = 270
	// envW x envH is the size of the environment image projected on SH.
	envW, envH = 64, 32
	// emaNew is the weight of the new frame in the temporal smoothing of
	// the shading fit, the inflation radius and the colour statistics.
	emaNew = 0.25
	// maxGain bounds every ratio (relight and final gain).
	maxGain = 4
	// gainEps floors the source in the final gain division.
	gainEps = 1e-4
)

// Renderer renders the frames of one job on a kernels.Device. Create it
// with New, call Frame for each frame in order, then Close. It is not safe
// for concurrent use. Its frame is a list of stages (stage.go), each with
// its own images and state.
type Renderer struct {
	dev    kernels.Device
	ops    kernels.Ops
	w, h   int
	lw, lh int
	fill   bool
	closed bool

	low       *lowFrame
	plan      *lightPlan
	normals   *normalStage
	key       *keyStage
	exposure  *exposureStage
	harmonise *harmoniseStage
	camera    *cameraStage
	comp      *compositeStage
	place     *placeStage // nil: no placement
}

// New prepares a job: it parses the prompt, builds the background B (the
// cover-fitted reference, or a backdrop synthesised from the prompt and
// seed), its blurred copy for light wrap, the target lighting (the SH
// irradiance of B mixed with the prompt's lights) and B's lαβ statistics.
// It returns an error wrapping the device's error when an allocation or op
// fails, and ctx.Err() when ctx is done.
func New(ctx context.Context, dev kernels.Device, p Params) (*Renderer, error) {
	if dev == nil {
		return nil, errors.New("render: nil device")
	}
	if p.Width <= 0 || p.Height <= 0 {
		return nil, fmt.Errorf("render: invalid output size %dx%d", p.Width, p.Height)
	}
	if p.Reference != nil {
		if err := p.Reference.Validate(); err != nil {
			return nil, fmt.Errorf("render: reference: %w", err)
		}
		if p.Reference.Format == frame.Gray8 {
			return nil, errors.New("render: reference must be a colour image")
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &Renderer{dev: dev, ops: dev.Ops(), w: p.Width, h: p.Height, fill: p.Fill}
	r.lw, r.lh = lowSize(p.Width, p.Height)
	var err error
	if r.place, err = placeFor(dev, p); err != nil {
		return nil, err
	}
	if err := r.setup(ctx, p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// setup makes the job's stages. The seed's random draws come in a fixed
// order: the lights' jitter, then the backdrop.
func (r *Renderer) setup(ctx context.Context, p Params) error {
	rng := rand.New(rand.NewPCG(uint64(p.Seed), 0x76667872656e6465)) // "vfxrende"
	r.plan = newLightPlan(p.Prompt, rng)
	lw, lh := r.lw, r.lh
	hasRef := p.Reference != nil
	var err error
	if r.low, err = newLowFrame(r.dev, r.ops, lw, lh, r.fill); err != nil {
		return err
	}
	// The background at the working resolution, at half of it, and the
	// environment image it lights the subject with.
	var bgLow, bgQ, env kernels.Image
	a := allocator{dev: r.dev}
	a.img(&bgLow, lw, lh, 3)
	qw, qh := qSize(lw, lh)
	a.img(&bgQ, qw, qh, 3)
	a.img(&env, min(envW, lw), min(envH, lh), 3)
	defer freeImages(r.dev, a.made)
	if a.err != nil {
		return fmt.Errorf("render: allocate: %w", a.err)
	}
	r.comp = newCompositeStage(r.dev, r.ops, r.w, r.h, r.fill)
	if err := r.comp.setBackground(ctx, r.plan, p.Reference, rng, bgLow, env); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.ops.ResizeArea(bgQ, bgLow); err != nil {
		return fmt.Errorf("render: background blur: %w", err)
	}
	r.comp.look.contactReach = p.ContactReach
	if err := r.comp.setWrap(bgQ, lw, lh, r.plan); err != nil {
		return err
	}
	if r.exposure, err = newExposureStage(r.dev, r.ops, r.w, r.h, lw, lh, r.fill, p.NoPlateMatch, r.plan.light); err != nil {
		return err
	}
	r.comp.focus = r.plan.light.Focus
	r.exposure.plate.edges = !p.NoFocusMatch && r.comp.focus != prompt.FocusDeep
	if err := r.exposure.setBackground(r.low, r.comp.bg, bgLow, bgQ, p.Seed); err != nil {
		return err
	}
	if r.harmonise, err = newHarmoniseStage(r.dev, r.ops, lw, lh, harmStrength(hasRef, r.fill), !r.fill); err != nil {
		return err
	}
	if err := r.harmonise.setBackground(bgLow); err != nil {
		return err
	}
	// Target lighting: environment irradiance + prompt lights + ambient.
	envL, err := r.ops.SHProjectEnv(env, envFront)
	if err != nil {
		return fmt.Errorf("render: environment light: %w", err)
	}
	r.plan.setEnvironment(envL, hasRef, r.fill)
	if r.normals, err = newNormalStage(r.dev, r.ops, lw, lh, r.fill, r.plan.haveRim); err != nil {
		return err
	}
	if !r.fill {
		r.camera = newCameraStage(r.dev, r.ops, r.w, r.h, p.NoCameraLock)
	}
	r.key, err = newKeyStage(r.dev, r.ops, r.plan, lw, lh)
	return err
}

// Frame renders one frame. src is 3-channel linear RGB of the output size;
// alpha is its 1-channel matte (1 keeps the subject), ignored (and may be
// nil) in fill mode; dst receives the 3-channel linear RGB composite.
// Frames of a video are passed in order: the shading fit and colour
// statistics are smoothed over time so the look does not flicker. It
// returns an error wrapping kernels.ErrShape for images of the wrong size,
// the device's error when an op fails, and ctx.Err() when ctx is done.
func (r *Renderer) Frame(ctx context.Context, dst, src, alpha kernels.Image) error {
	if err := r.checkShapes(dst, src, alpha); err != nil {
		return err
	}
	src, alpha, err := r.place.run(src, alpha)
	if err != nil {
		return err
	}
	return r.frame(ctx, r.lowImages(src, alpha), r.deviceComp(src, alpha), func(bg, bgBlur, aBlur kernels.Image, wrap float32) error {
		if r.fill {
			return r.ops.GainComposite(dst, src, nil, r.low.gain, nil, nil, nil, 0, 1)
		}
		return r.ops.GainCompositeLook(dst, src, alpha, r.low.gain, bg, bgBlur, aBlur, r.compositeLook(), wrap, 1)
	})
}

// FrameHost is Frame with the result converted straight into the host
// frame dst (YUV420P or RGB24, Width x Height, planes allocated, ColorSpace
// and FullRange set by the caller): the fused composite-and-download pass
// never writes the full-resolution linear image, which saves a quarter of
// the per-frame memory traffic.
func (r *Renderer) FrameHost(ctx context.Context, dst *frame.HostFrame, src, alpha kernels.Image) error {
	if err := r.checkShapes(src, src, alpha); err != nil {
		return err
	}
	if dst == nil || dst.Width != r.w || dst.Height != r.h {
		return fmt.Errorf("render: frame: host dst must be %dx%d: %w", r.w, r.h, kernels.ErrShape)
	}
	src, alpha, err := r.place.run(src, alpha)
	if err != nil {
		return err
	}
	return r.frame(ctx, r.lowImages(src, alpha), r.deviceComp(src, alpha), func(bg, bgBlur, aBlur kernels.Image, wrap float32) error {
		if r.fill {
			return r.ops.GainCompositeDownload(dst, src, nil, r.low.gain, nil, nil, nil, 0, 1)
		}
		return r.ops.GainCompositeLookDownload(dst, src, alpha, r.low.gain, bg, bgBlur, aBlur, r.compositeLook(), wrap, 1)
	})
}

// FrameFromHost is FrameHost with the source and the matte given as the
// decoded host frames (src YUV420P or RGB24, alpha Gray8, both Width x
// Height; alpha is ignored, and may be nil, in fill mode), with the same
// result as uploading them first: the device reads the 8-bit planes twice
// (the low-resolution copies, then the fused composite) and no
// full-resolution float image of the frame is made.
func (r *Renderer) FrameFromHost(ctx context.Context, dst, src, alpha *frame.HostFrame) error {
	for _, f := range []struct {
		name string
		f    *frame.HostFrame
	}{{"dst", dst}, {"src", src}, {"alpha", alpha}} {
		if f.name == "alpha" && r.fill {
			continue
		}
		if f.f == nil || f.f.Width != r.w || f.f.Height != r.h {
			return fmt.Errorf("render: frame: host %s must be %dx%d: %w", f.name, r.w, r.h, kernels.ErrShape)
		}
	}
	if r.place != nil { // placed on the device: FrameHost's path
		s, a, err := r.place.upload(src, alpha)
		if err != nil {
			return err
		}
		return r.FrameHost(ctx, dst, s, a)
	}
	if r.fill {
		alpha = nil
	}
	low := func() error {
		if err := r.ops.ResizeAreaFrame(r.low.srcLow, src); err != nil {
			return fmt.Errorf("render: resize source: %w", err)
		}
		if alpha != nil {
			if err := r.ops.ResizeAreaFrame(r.low.alphaLow, alpha); err != nil {
				return fmt.Errorf("render: resize matte: %w", err)
			}
		}
		return nil
	}
	// The plate's first-frame measure composites the uploads (once per
	// job): the same result as FrameHost's.
	comp := func(dst, alphaDst kernels.Image) error {
		s, err := r.dev.NewImage(r.w, r.h, 3)
		if err != nil {
			return err
		}
		defer r.dev.Free(s)
		if err := r.dev.Upload(s, src); err != nil {
			return err
		}
		if err := r.dev.Upload(alphaDst, alpha); err != nil {
			return err
		}
		return r.deviceComp(s, alphaDst)(dst, alphaDst)
	}
	return r.frame(ctx, low, comp, func(bg, bgBlur, aBlur kernels.Image, wrap float32) error {
		if alpha == nil {
			return r.ops.GainCompositeLookFrame(dst, src, nil, nil, r.low.gain, nil, nil, nil, kernels.CompositeLook{}, 0, 1)
		}
		codes, err := r.comp.bgHost(dst)
		if err != nil {
			return err
		}
		return r.ops.GainCompositeLookFrame(dst, src, alpha, codes, r.low.gain, bg, bgBlur, aBlur, r.compositeLook(), wrap, 1)
	})
}

// deviceComp returns frame's first-frame composite for device images:
// GainCompositeLook into dst (without grain: the plate's grain is set
// after it) and the matte copied into alphaDst.
func (r *Renderer) deviceComp(src, alpha kernels.Image) func(dst, alphaDst kernels.Image) error {
	return func(dst, alphaDst kernels.Image) error {
		if alphaDst != alpha {
			if err := r.ops.Copy(alphaDst, alpha); err != nil {
				return err
			}
		}
		return r.ops.GainCompositeLook(dst, src, alpha, r.low.gain, r.comp.bg, nil, nil, r.comp.compositeLook(r.exposure), r.comp.wrap, 1)
	}
}

// lowImages returns frame's first step for device images: their
// low-resolution copies.
func (r *Renderer) lowImages(src, alpha kernels.Image) func() error {
	return func() error {
		if err := r.ops.ResizeArea(r.low.srcLow, src); err != nil {
			return fmt.Errorf("render: resize source: %w", err)
		}
		if !r.fill {
			if err := r.ops.ResizeArea(r.low.alphaLow, alpha); err != nil {
				return fmt.Errorf("render: resize matte: %w", err)
			}
		}
		return nil
	}
}

// frame runs low (which makes the working-resolution copies srcLow and,
// but in fill mode, alphaLow), the stages of the look, then finish, the
// fused full-resolution pass, with the background, blurred background,
// wrap matte and wrap strength to use. comp is the plate's first-frame
// composite (see matchGrain).
func (r *Renderer) frame(ctx context.Context, low func() error, comp func(dst, alphaDst kernels.Image) error,
	finish func(bg, bgBlur, aBlur kernels.Image, wrap float32) error) error {
	if r.closed {
		return errors.New("render: renderer is closed")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f := r.low
	if err := low(); err != nil {
		return err
	}
	if err := r.normals.run(f); err != nil {
		return err
	}
	relit, err := r.key.fit(f, r.normals)
	if err != nil {
		return err
	}
	if relit {
		e, err := r.exposure.scene(f)
		if err != nil {
			return step("exposure", err)
		}
		x := float64(r.plan.light.Intensity) * e
		r.exposure.curX = x
		relit = r.key.lightFor(x)
	}
	if err := r.key.relight(f, r.normals, relit); err != nil {
		return err
	}
	if err := r.harmonise.run(f, r.exposure, relit); err != nil {
		return err
	}
	if r.fill {
		return step("composite", finish(nil, nil, nil, 0))
	}
	if err := r.camera.run(f); err != nil {
		return err
	}
	var plate kernels.CompositeLook // the camera lock's plate offset
	r.camera.setLook(&plate)
	if err := r.comp.prepare(f, r.exposure, plate.PlateX, plate.PlateY, comp); err != nil {
		return err
	}
	c := r.comp
	// The wrap's light is the look's WrapLow: no blurred plate or wrap
	// matte at full resolution.
	return step("composite", finish(c.bg, nil, nil, c.wrap))
}

// Close frees the renderer's device images. It is idempotent and always
// returns nil.
func (r *Renderer) Close() error {
	if r == nil || r.closed {
		return nil
	}
	r.closed = true
	if r.comp != nil {
		r.comp.free()
	}
	if r.exposure != nil {
		r.exposure.free()
	}
	if r.harmonise != nil {
		r.harmonise.free()
	}
	if r.normals != nil {
		r.normals.free()
	}
	if r.key != nil {
		r.key.free()
	}
	if r.camera != nil {
		r.camera.free()
	}
	r.place.free()
	r.low.free(r.dev)
	return nil
}
