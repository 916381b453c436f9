package render

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render/plate"
)

// Matching the plate (issue 15): the subject takes the new background's
// grain and black level, and its bright end is kept below the plate's.
//
// Everything is measured once per job: the plate in New, the subject on
// the first frame that shows enough of it (among the first plateTries);
// the frames then apply per-job constants on the device (no per-frame
// readback, sort or host loop once measured).
//
// Applied:
//   - grain: the subject's grain is measured on the first frame's
//     composite without added grain (after relight and gain, as it will
//     be seen), and grain of the missing standard deviation in
//     quadrature, sqrt(plate^2 - subject^2), is added in the fused
//     composite (kernels.CompositeLook.Grain) from a noise tile made once
//     per job (kernels.GrainNoise of the job's seed), read at offsets
//     drawn from the seed and the frame's index: temporally varying,
//     deterministic. Only when the plate is grainier than the subject: a
//     compositor adds grain, this does not denoise.
//   - black level: the harmonisation's lαβ transfer scales the subject's
//     log-luminance deviation by k (a contrast about its geometric mean
//     G), with k = ln(bt/G)/ln(bs/G) chosen on the first frame so that
//     its black bs (2nd percentile over the matte at a quarter of the
//     working size) goes to the plate's bt, within [1/blackMaxK,
//     blackMaxK]; a per-job constant.
//   - highlight cap: a light subject put on a bright plate takes the
//     scene's exposure only until its 95th percentile (of the source, on
//     the first frame) reaches the plate's 95th percentile (at least
//     hiFloor).
//   - defocus: not applied. MeasurePlate's edge width compares the
//     subject's sharpness with the plate's (vfx bench look reports it),
//     but blurring the subject means blurring the full-resolution
//     source and matte every frame (FrameFromHost has no float source
//     to blur), more than the render's budget for plate matching.

const (
	// plateMinGrain: less grain to add (square-root units, about a tenth
	// of a code value) is skipped, and so is grain for a subject whose
	// grain is already grainNear of the plate's or more.
	plateMinGrain = 0.0005
	grainNear     = 0.85
	// plateMaxGrain caps the grain added.
	plateMaxGrain = 0.05
	// blackMaxK bounds the black level's contrast factor either way.
	blackMaxK = 1.35
	// blackMin is the smallest black level considered (linear).
	blackMin = 1e-4
	// grainTile is the side of the noise tile (a prime: the tile's
	// repeats do not line up with 8x8 codec blocks).
	grainTile = 509
	// hiFloor is the least highlight target of the highlight cap
	// (linear; about code 203).
	hiFloor = 0.6
	// plateTries: the subject is measured on the first frame that shows
	// enough of it, among the first plateTries frames (then never).
	plateTries = 8
)

// plateMatch is the renderer's plate-matching state.
type plateMatch struct {
	off      bool        // Params.NoPlateMatch
	active   bool        // not off, not fill, a plate measured
	edges    bool        // measure edge widths (focus matching: focus.go)
	plate    plate.Stats // the new background at full resolution (New)
	blackQ   float64     // the plate's black level at a quarter of the working size
	plateHi  float64     // the highlight cap's target: the plate's 95th percentile of luminance at the working size, at least hiFloor
	measured bool        // the subject's grain has been measured (or plateTries frames tried)
	subject  plate.Stats // the first frame's composite over the matte's interior
	grain    float32     // grain added (square-root units); 0 = none
	hiCap    float64     // the exposure's cap (0 = none yet)
	capSet   bool
	blackK   float64 // the subject's log-luminance contrast factor (1 = none)
	blackSet bool
	seed     uint32
	frameN   uint32
	tile     kernels.Image // the grain's noise tile (made when grain > 0)
	gx, gy   int           // this frame's tile offsets

	// Frames tried for the cap, the black level and the grain.
	capTries, blackTries, grainTries int
}

// setupPlate measures the new background once per job: its grain at
// full resolution (r.bg), its 95th percentile at the
// working size, at least hiFloor (lumLow: bgLow's luminance) and its black level at a
// quarter of it (bgQ: bgLow area-resized). Not in fill mode.
func (e *exposureStage) setupPlate(bg, lumLow, bgQ kernels.Image, seed uint32) error {
	pm := &e.plate
	pm.blackK = 1
	if e.fill || bg == nil || pm.off {
		return nil
	}
	pm.seed = seed*0x9e3779b1 ^ 0x706c6174 // "plat"
	lum, err := e.lumaHost(bg)
	if err != nil {
		return fmt.Errorf("render: plate: %w", err)
	}
	pm.plate = measureEdges(lum, e.w, e.h, nil, pm.edges) // grain and edge width: blackQ is the black level used
	low, err := e.dev.ReadPixels(lumLow)
	if err != nil {
		return fmt.Errorf("render: plate: %w", err)
	}
	pm.plateHi = math.Max(float64(plate.Percentile32(low, 0.95)), hiFloor)
	q, err := e.lumaHost(bgQ)
	if err != nil {
		return fmt.Errorf("render: plate: %w", err)
	}
	pm.blackQ = float64(plate.Percentile32(q, 0.02))
	pm.active = pm.plate.Pixels > 0
	return nil
}

// lumaHost returns img's luminance on the host.
func (e *exposureStage) lumaHost(img kernels.Image) ([]float32, error) {
	l, err := e.dev.NewImage(img.Width(), img.Height(), 1)
	if err != nil {
		return nil, err
	}
	defer e.dev.Free(l)
	if err := e.ops.Luma(l, img); err != nil {
		return nil, err
	}
	return e.dev.ReadPixels(l)
}

// highlightCap limits the subject's exposure factor x (the scene's, from
// exposure) so that the subject's bright end (the 95th percentile of its
// source luminance over the matte at the working size, on the first
// frame) is lifted at most to the plate's 95th percentile (at least
// hiFloor): a light subject put on a bright beach takes the scene's
// light without clipping to white. Never below 1: a dark scene still darkens. The cap is a
// per-job constant. A device that fails to read the images back is an
// error (not a frame without the cap).
func (e *exposureStage) highlightCap(x float64, f *lowFrame) (float64, error) {
	mask := f.mask()
	pm := &e.plate
	if !pm.active || mask == nil {
		return x, nil
	}
	if !pm.capSet {
		pm.capTries++
		pm.capSet = pm.capTries >= plateTries
		l, err := e.dev.ReadPixels(f.luma)
		if err != nil {
			return x, fmt.Errorf("highlight cap: luminance: %w", err)
		}
		a, err := e.dev.ReadPixels(mask)
		if err != nil {
			return x, fmt.Errorf("highlight cap: matte: %w", err)
		}
		if len(a) != len(l) {
			return x, fmt.Errorf("highlight cap: matte of %d values, luminance of %d: %w", len(a), len(l), kernels.ErrShape)
		}
		var vals []float32
		for i := range a {
			if a[i] >= 0.5 {
				vals = append(vals, l[i])
			}
		}
		if len(vals) >= 32 {
			pm.capSet = true
			if hi := float64(plate.Percentile32(vals, 0.95)); hi > 1e-4 && pm.plateHi > 0 {
				pm.hiCap = math.Max(1, pm.plateHi/hi)
			}
		}
	}
	if pm.hiCap > 0 {
		return math.Min(x, pm.hiCap), nil
	}
	return x, nil
}

// blackTarget is the harmonisation's target with the black level's
// contrast factor applied (measured on the first frame by matchBlack).
func (e *exposureStage) blackTarget(to kernels.LabStats) kernels.LabStats {
	if k := e.plate.blackK; e.plate.blackSet && k != 1 {
		to.Std[0] *= k
	}
	return to
}

// matchBlack runs on the first frame (until one shows enough of the
// subject, see plateTries) after the harmonisation's transfer
// into harmQ (from relitQ, with from and to): it measures the subject's
// black level bs and geometric mean G (luminance over the matte's
// interior at a quarter of the working size), sets the job's contrast
// factor so that bs goes to the plate's black, and when it is not 1
// redoes the transfer with it. Later frames use blackTarget.
func (e *exposureStage) matchBlack(f *lowFrame, harmQ kernels.Image, from, to kernels.LabStats) error {
	pm := &e.plate
	if !pm.active || pm.blackSet {
		return nil
	}
	pm.blackTries++
	pm.blackSet = pm.blackTries >= plateTries
	if err := e.ops.Luma(e.lumQ, harmQ); err != nil {
		return err
	}
	l, err := e.dev.ReadPixels(e.lumQ)
	if err != nil {
		return err
	}
	a, err := e.dev.ReadPixels(f.alphaQ)
	if err != nil {
		return err
	}
	var vals []float32
	var logSum float64
	for i := range a {
		if a[i] >= 0.9 {
			v := math.Max(float64(l[i]), blackMin)
			vals = append(vals, float32(v))
			logSum += math.Log(v)
		}
	}
	if len(vals) < 32 {
		return nil // too little of the subject: the next frame tries
	}
	pm.blackSet = true
	g := math.Exp(logSum / float64(len(vals)))
	bs := math.Max(float64(plate.Percentile32(vals, 0.02)), blackMin)
	bt := math.Max(pm.blackQ, blackMin)
	if !(g > 2*bs) || !(g > 2*bt) || math.Abs(bt-bs) < 0.05*bs {
		return nil
	}
	k := math.Log(bt/g) / math.Log(bs/g)
	k = math.Min(blackMaxK, math.Max(1/blackMaxK, k))
	if math.Abs(k-1) < 0.01 {
		return nil
	}
	pm.blackK = k
	return e.ops.LabTransfer(harmQ, f.relitQ, nil, from, e.blackTarget(to), 1)
}

// PlateMatch reports the renderer's plate measures and the matching it
// applies (after the first frame): the plate's and the subject's
// grain and pixels measured (Edge and Black not measured: 0), the grain
// added (square-root luminance) and the black
// level's contrast factor (1 = none).
func (r *Renderer) PlateMatch() (plate, subject plate.Stats, grain float32, blackK float64) {
	pm := &r.exposure.plate
	return pm.plate, pm.subject, pm.grain, pm.blackK
}

// matchGrain runs before the composite of each frame. On the first frame
// (until one shows enough of the subject, see plateTries) comp
// composites it without grain into a full-resolution image and copies
// its matte into another; the subject's grain is measured there and the
// job's grain set (and its noise tile made). Every frame then gets its
// tile offsets from the seed and its index.
func (e *exposureStage) matchGrain(comp func(dst, alphaDst kernels.Image) error) error {
	pm := &e.plate
	if !pm.active {
		return nil
	}
	if !pm.measured {
		pm.grainTries++
		if err := step("plate measure", e.measureSubject(comp)); err != nil {
			return err
		}
		pm.measured = pm.subject.Pixels > 0 || pm.grainTries >= plateTries
		if pm.measured {
			// The measure's full-resolution images are one-off: the
			// pool would keep them live for the rest of the job, above
			// the heap the job's memory limit allows for (the GC then
			// runs without pause: 3,175 collections in a 240-frame
			// 1080p job instead of 18).
			if t, ok := e.dev.(kernels.PoolTrimmer); ok {
				t.TrimPool()
			}
		}
	}
	fn := pm.frameN
	pm.frameN++
	if pm.grain > 0 {
		// The frame's offsets into the tile, from the job's seed and
		// the frame's index.
		rng := rand.New(rand.NewPCG(uint64(pm.seed), uint64(fn)^0x677261696e)) // "grain"
		pm.gx, pm.gy = rng.IntN(grainTile), rng.IntN(grainTile)
	}
	return nil
}

// measureSubject measures the subject on the first frame's composite and
// sets the job's grain.
func (e *exposureStage) measureSubject(comp func(dst, alphaDst kernels.Image) error) error {
	pm := &e.plate
	out, err := e.dev.NewImage(e.w, e.h, 3)
	if err != nil {
		return err
	}
	defer e.dev.Free(out)
	al, err := e.dev.NewImage(e.w, e.h, 1)
	if err != nil {
		return err
	}
	defer e.dev.Free(al)
	if err := comp(out, al); err != nil {
		return err
	}
	lum, err := e.lumaHost(out)
	if err != nil {
		return err
	}
	a, err := e.dev.ReadPixels(al)
	if err != nil {
		return err
	}
	pm.subject = measureEdges(lum, e.w, e.h, a, pm.edges)
	p, s := pm.plate, pm.subject
	if s.Pixels == 0 || !(s.Grain < grainNear*p.Grain) {
		return nil // a compositor adds grain; this does not denoise
	}
	add := math.Sqrt(p.Grain*p.Grain - s.Grain*s.Grain)
	if add < plateMinGrain {
		return nil
	}
	pm.grain = float32(math.Min(add, plateMaxGrain))
	if pm.tile, err = e.dev.NewImage(grainTile, grainTile, 1); err != nil {
		return err
	}
	noise := make([]float32, grainTile*grainTile)
	for y := range grainTile {
		for x := range grainTile {
			noise[y*grainTile+x] = kernels.GrainNoise(x, y, pm.seed)
		}
	}
	return e.dev.WritePixels(pm.tile, noise)
}

// grainLook adds this frame's grain to the composite's look.
func (e *exposureStage) grainLook(look *kernels.CompositeLook) {
	if pm := &e.plate; pm.grain > 0 && pm.tile != nil {
		look.Grain, look.GrainAmount, look.GrainX, look.GrainY = pm.tile, pm.grain, pm.gx, pm.gy
	}
}
