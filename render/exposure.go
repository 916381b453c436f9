package render

import (
	"fmt"
	"math"
	"slices"

	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render/plate"
	"github.com/vfxrender/vfx/render/prompt"
)

// exposureStage sets the subject's exposure from the scene (the new
// background's mean luminance over the old one's, smoothed in time),
// meters it on the relit subject, and matches the plate: the highlight
// cap, the black level and the grain (plate.go), measured on the first
// frame and applied as per-job constants.
type exposureStage struct {
	dev  kernels.Device
	ops  kernels.Ops
	w, h int // the output size
	fill bool
	lumQ kernels.Image // scratch luminance at half the working resolution

	// bgNewLum is the new background's mean luminance, bgOldLum the old
	// one's (smoothed); srcSubLum this frame's mean source luminance over
	// the matte, curX its exposure factor (intensity times scene).
	bgNewLum, bgOldLum, srcSubLum, curX float64

	// night: the prompt asks for night; plateTop is then the mean
	// luminance of the plate's brightest tenth, intensity the light's
	// (nightFloor).
	night               bool
	plateTop, intensity float64

	plate plateMatch
}

// nightShare is the least mean luminance of a night subject as a share of
// the plate's brightest tenth (issue 31, "night keeps the subject
// readable"): a dark plate darkens the subject with it (scene), but not
// below this.
const nightShare = 0.3

func newExposureStage(dev kernels.Device, ops kernels.Ops, w, h, lw, lh int, fill, noPlateMatch bool, light prompt.Lighting) (*exposureStage, error) {
	e := &exposureStage{dev: dev, ops: ops, w: w, h: h, fill: fill, night: light.Time == prompt.TimeNight && !fill && light.Intensity > 0,
		intensity: float64(light.Intensity)}
	e.plate.off = noPlateMatch
	e.plate.blackK = 1
	qw, qh := qSize(lw, lh)
	var err error
	if e.lumQ, err = dev.NewImage(qw, qh, 1); err != nil {
		return nil, fmt.Errorf("render: allocate: %w", err)
	}
	return e, nil
}

func (e *exposureStage) free() {
	freeImages(e.dev, []*kernels.Image{&e.lumQ, &e.plate.tile})
}

// meteredExposure returns the factor on the relit subject (relitQ) that
// makes its mean luminance over the matte the source's times the exposure
// of this frame (curX): the exposure is metered on the relit subject, so
// that its mean does not follow where a strong key's lit half happens to
// fall on light or dark parts of the subject from frame to frame (the
// shading is normalised on the mean of the normals, not of the colours).
// Between 0.5 and 2; 1 when either mean is unknown.
func (e *exposureStage) metered(f *lowFrame) (float64, error) {
	if !(e.srcSubLum > 1e-6) || !(e.curX > 0) {
		return 1, nil
	}
	if err := e.ops.Luma(e.lumQ, f.relitQ); err != nil {
		return 1, err
	}
	st, err := e.ops.MaskedStats(e.lumQ, f.alphaQ)
	if err != nil {
		return 1, err
	}
	if !(st.Mean[0] > 1e-6) || st.Weight < 0.25 || math.IsInf(st.Mean[0], 0) {
		return 1, nil
	}
	return math.Max(0.5, math.Min(2, e.curX*e.srcSubLum/st.Mean[0])), nil
}

// exposure returns the factor on the subject's light that follows the
// scene: the new background's mean luminance over the old background's
// (the source outside the matte, smoothed in time), so that the subject
// keeps the relation to its surroundings that the source had: a night
// stays a night and a bright beach is not dim. Between 1/16 and maxGain;
// 1 in fill mode or when too little of the old background is visible.
func (e *exposureStage) scene(f *lowFrame) (float64, error) {
	mask := f.mask()
	if e.fill || mask == nil || !(e.bgNewLum > 0) {
		return 1, nil
	}
	all, err := e.ops.MaskedStats(f.luma, nil)
	if err != nil {
		return 1, err
	}
	sub, err := e.ops.MaskedStats(f.luma, mask)
	if err != nil {
		return 1, err
	}
	e.srcSubLum = sub.Mean[0]
	if bw := all.Weight - sub.Weight; bw >= 0.05*all.Weight {
		old := (all.Mean[0]*all.Weight - sub.Mean[0]*sub.Weight) / bw
		if old > 1e-4 && !math.IsInf(old, 0) {
			if e.bgOldLum > 0 {
				old = e.bgOldLum + emaNew*(old-e.bgOldLum)
			}
			e.bgOldLum = old
		}
	}
	if !(e.bgOldLum > 0) {
		return 1, nil
	}
	x, err := e.nightFloor(math.Max(1.0/16, math.Min(maxGain, e.bgNewLum/e.bgOldLum)), f)
	if err != nil {
		return 1, err
	}
	// Plate matching: no clipping on a bright plate (plate.go).
	return e.highlightCap(x, f)
}

// nightFloor raises a night subject's scene exposure x so that its
// median luminance (the source's median over the matte times the light's
// intensity times x) is at least nightShare of the plate's brightest
// tenth (within maxGain): a night plate darkens the subject with it, but
// the subject does not vanish into it. The median is taken at half the
// working resolution, only in night jobs.
func (e *exposureStage) nightFloor(x float64, f *lowFrame) (float64, error) {
	if !e.night || !(e.plateTop > 0) || f.mask() == nil {
		return x, nil
	}
	if err := e.ops.ResizeArea(e.lumQ, f.luma); err != nil {
		return x, err
	}
	l, err := e.dev.ReadPixels(e.lumQ)
	if err != nil {
		return x, err
	}
	a, err := e.dev.ReadPixels(f.alphaQ)
	if err != nil {
		return x, err
	}
	var sub []float32
	for i, v := range a {
		if v >= 0.5 {
			sub = append(sub, l[i])
		}
	}
	if len(sub) < 16 {
		return x, nil
	}
	med := float64(plate.Percentile32(sub, 0.5))
	if !(med > 1e-6) {
		return x, nil
	}
	return math.Max(x, math.Min(maxGain, nightShare*e.plateTop/(med*e.intensity))), nil
}

// topTenth is the mean of the brightest tenth of v (0 when empty).
func topTenth(v []float32) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	k := len(s) - max(1, len(s)/10)
	var sum float64
	for _, x := range s[k:] {
		sum += float64(x)
	}
	return sum / float64(len(s)-k)
}

// setBackground measures the new background once per job: its mean
// luminance (the subject's exposure follows it) and the plate's grain,
// black level and highlights (setupPlate; bg at full resolution, bgLow
// and bgQ at the working resolution and half of it).
func (e *exposureStage) setBackground(f *lowFrame, bg, bgLow, bgQ kernels.Image, seed uint32) error {
	if err := e.ops.Luma(f.luma, bgLow); err != nil {
		return fmt.Errorf("render: background luminance: %w", err)
	}
	st, err := e.ops.MaskedStats(f.luma, nil)
	if err != nil {
		return fmt.Errorf("render: background luminance: %w", err)
	}
	e.bgNewLum = st.Mean[0]
	if e.night {
		l, err := e.dev.ReadPixels(f.luma)
		if err != nil {
			return fmt.Errorf("render: background luminance: %w", err)
		}
		e.plateTop = topTenth(l)
	}
	return e.setupPlate(bg, f.luma, bgQ, seed)
}
