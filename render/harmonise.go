package render

import (
	"fmt"
	"math"

	"github.com/vfxrender/vfx/kernels"
)

// harmoniseStage moves the relit subject's colour part of the way toward
// the background's Reinhard lαβ statistics (partialTarget), with the
// exposure metered on the relit subject and the plate's black level folded
// into the lightness, and makes the frame's gain: harmonised relit subject
// over the source. The harmonisation is a smooth colour change, so it is
// computed at half the working resolution as a gain field (transferred /
// relit) and upsampled: the lαβ conversions are the most expensive
// per-pixel work of the frame.
type harmoniseStage struct {
	dev    kernels.Device
	ops    kernels.Ops
	images []*kernels.Image

	// harmQ: the transferred image at half resolution, ratioQ its ratio
	// to relitQ, harmGain that ratio upsampled.
	harmQ, ratioQ, onesQ, harmGain kernels.Image

	bgLab    kernels.LabStats // the background's statistics (per job)
	strength float32
	// The subject's statistics, smoothed in time.
	fromLab kernels.LabStats
	haveLab bool
	// edge limits the gain on the matte's soft band (nil in fill mode).
	edge *edgeGainStage
}

// harmStrength is how far the subject's colour moves toward the
// background's: further over a reference and with a matte.
func harmStrength(hasRef, fill bool) float32 {
	switch {
	case hasRef && !fill:
		return 0.45
	case hasRef:
		return 0.4
	case !fill:
		return 0.3
	default:
		return 0.15
	}
}

// newHarmoniseStage makes the stage; edge (a matte, not fill mode) adds
// the soft band's gain limit (edgeGainStage) as the gain's last step.
func newHarmoniseStage(dev kernels.Device, ops kernels.Ops, lw, lh int, strength float32, edge bool) (*harmoniseStage, error) {
	s := &harmoniseStage{dev: dev, ops: ops, strength: strength}
	qw, qh := qSize(lw, lh)
	a := allocator{dev: dev}
	a.img(&s.harmQ, qw, qh, 3)
	a.img(&s.ratioQ, qw, qh, 3)
	a.img(&s.onesQ, qw, qh, 3)
	a.img(&s.harmGain, lw, lh, 3)
	s.images = a.made
	if a.err != nil {
		s.free()
		return nil, fmt.Errorf("render: allocate: %w", a.err)
	}
	if err := fillAll(ops, fillOf{s.onesQ, []float32{1, 1, 1}}); err != nil {
		s.free()
		return nil, err
	}
	if edge {
		var err error
		if s.edge, err = newEdgeGainStage(dev, ops, lw, lh, edgeGainSigma); err != nil {
			s.free()
			return nil, err
		}
	}
	return s, nil
}

func (s *harmoniseStage) free() {
	freeImages(s.dev, s.images)
	if s.edge != nil {
		s.edge.free()
		s.edge = nil
	}
}

// setBackground measures the background's statistics (bgLow: the
// background at the working resolution).
func (s *harmoniseStage) setBackground(bgLow kernels.Image) error {
	var err error
	if s.bgLab, err = s.ops.LabStats(bgLow, nil); err != nil {
		return fmt.Errorf("render: background statistics: %w", err)
	}
	return nil
}

// run harmonises f.relit and writes f.gain (relit says whether the frame
// was relit: its exposure is then metered on the relit subject), then
// bounds the gain's turn of the subject's hues (hueBound) and, with a
// matte, the gain on its soft band (edgeGainStage).
func (s *harmoniseStage) run(f *lowFrame, e *exposureStage, relit bool) error {
	if err := s.transfer(f, e, relit); err != nil {
		return err
	}
	if err := step("hue bound", s.ops.HueBound(f.gain, f.gain, f.srcLow, f.mask(), hueBound())); err != nil {
		return err
	}
	return s.edge.run(f)
}

// transfer writes f.gain: the relight and the colour transfer toward the
// background.
func (s *harmoniseStage) transfer(f *lowFrame, e *exposureStage, relit bool) error {
	ops := s.ops
	if err := step("harmonise resize", ops.ResizeArea(f.relitQ, f.relit)); err != nil {
		return err
	}
	from, err := ops.LabStats(f.relitQ, f.maskQ())
	if err != nil {
		return step("subject statistics", err)
	}
	if from.Weight >= 0.25 && finiteLab(from) {
		if s.haveLab {
			from = emaLab(s.fromLab, from, emaNew)
		}
		s.fromLab, s.haveLab = from, true
	}
	if !s.haveLab || s.strength <= 0 {
		return step("gain", ops.RatioRelight(f.gain, f.ones3, f.relit, f.srcLow, nil, gainEps, maxGain))
	}
	to := partialTarget(s.fromLab, s.bgLab, s.strength)
	if relit && !f.fill {
		c, err := e.metered(f)
		if err != nil {
			return step("exposure", err)
		}
		// A shift of l by sqrt(3)*ln(c) scales L, M and S, so RGB, by c.
		to.Mean[0] += math.Sqrt(3) * math.Log(c)
	}
	if err := step("harmonise", ops.LabTransfer(s.harmQ, f.relitQ, nil, s.fromLab, e.blackTarget(to), 1)); err != nil {
		return err
	}
	if !f.fill {
		// Plate matching: the black level (plate.go).
		if err := step("plate black level", e.matchBlack(f, s.harmQ, s.fromLab, to)); err != nil {
			return err
		}
	}
	return steps(
		namedStep{"harmonise", func() error { return ops.RatioRelight(s.ratioQ, s.onesQ, s.harmQ, f.relitQ, nil, gainEps, maxGain) }},
		namedStep{"harmonise", func() error { return ops.ResizeBilinear(s.harmGain, s.ratioQ) }},
		// gain = harmGain * relit / src.
		namedStep{"gain", func() error { return ops.RatioRelight(f.gain, s.harmGain, f.relit, f.srcLow, nil, gainEps, maxGain) }},
	)
}

// hueBound is how far the frame's gain may turn a subject colour's hue
// from the source's, per pixel at the working resolution (issue 31,
// "harmonisation that tints, not dyes"): the relight's colour and the
// harmonisation's shift toward the plate move white balance and exposure,
// which tint greys and near-greys freely (lαβ chroma below C0 = 0.05), but
// a coloured pixel (chroma C1 = 0.15 and above) keeps its hue within
// MaxHue = 10° (the look bench measures the median turn in CIELAB and asks
// under 15°).
func hueBound() kernels.HueParams {
	return kernels.HueParams{MaxHue: 10 * math.Pi / 180, C0: 15, C1: 45, MaxGain: maxGain}
}

// partialTarget returns the lαβ statistics that, applied at strength 1,
// move from part of the way toward to: the colour channels (α, β) by
// strength, the lightness by a third of it (the relight already set the
// exposure). The shifts are limited so that a strongly coloured background
// tints the subject rather than dyeing it (at most maxChromaShift in the
// αβ plane, maxLightShift in l), and the standard-deviation ratios are
// limited (0.8..1.25 for lightness, 0.6..1.6 for colour) so that a flat
// background cannot flatten the subject nor a busy one over-saturate it.
func partialTarget(from, to kernels.LabStats, strength float32) kernels.LabStats {
	const maxLightShift, maxChromaShift = 0.25, 0.2
	out := from
	k := [3]float64{float64(strength) / 3, float64(strength), float64(strength)}
	lo := [3]float64{0.8, 0.6, 0.6}
	hi := [3]float64{1.25, 1.6, 1.6}
	var shift [3]float64
	for c := 0; c < 3; c++ {
		shift[c] = k[c] * (to.Mean[c] - from.Mean[c])
		if from.Std[c] > 1e-6 {
			ratio := math.Min(math.Max(to.Std[c]/from.Std[c], lo[c]), hi[c])
			out.Std[c] = from.Std[c] * (1 + k[c]*(ratio-1))
		}
	}
	shift[0] = math.Min(math.Max(shift[0], -maxLightShift), maxLightShift)
	if n := math.Hypot(shift[1], shift[2]); n > maxChromaShift {
		shift[1] *= maxChromaShift / n
		shift[2] *= maxChromaShift / n
	}
	for c := 0; c < 3; c++ {
		out.Mean[c] = from.Mean[c] + shift[c]
	}
	return out
}

func emaLab(old, cur kernels.LabStats, a float64) kernels.LabStats {
	out := cur
	for c := 0; c < 3; c++ {
		out.Mean[c] = old.Mean[c] + a*(cur.Mean[c]-old.Mean[c])
		out.Std[c] = old.Std[c] + a*(cur.Std[c]-old.Std[c])
	}
	return out
}

func finiteLab(s kernels.LabStats) bool {
	for c := 0; c < 3; c++ {
		for _, v := range [2]float64{s.Mean[c], s.Std[c]} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
	}
	return true
}
