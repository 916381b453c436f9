package render

import (
	"fmt"
	"math"

	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render/colour"
)

// Tuning (distances in pixels at the working resolution).
const (
	// oldTrust is the share of the fitted old shading's variation that
	// the relight removes (the rest is its mean): the fit on
	// pseudo-normals from a matte takes part of the albedo's layout for
	// light (a dark belly, a light back; it explains 10 to 60% of the
	// subject's luminance variance on real footage), so it is only half
	// trusted.
	oldTrust = 0.5
	// ridge is the relative ridge regulariser of the SH fit.
	ridge = 2e-3
	// oldEpsFrac floors the old shading at this fraction of its mean, so
	// grazing normals at the silhouette cannot produce a huge gain.
	oldEpsFrac = 0.2
)

// rimPeak is a rim's shape on the silhouette where it faces the light
// squarely (rimBandShape), before its colour: the rim lights one side of
// the silhouette only (its mean round the silhouette is rimPeak/pi), so
// it peaks above the all-round band it replaced (1 + k cos, at most 1.5,
// mean 1). Chosen on the look bench's fold A (bench/look FoldSubjects),
// the least of 3, 5 and 8 that meets both rim checks there (edge band
// over interior >= 1.5: 1.74, 1.86, 1.90; the rim's side over the other
// >= 1.5: 1.85, 1.83, 1.79): the side ratio does not grow with the peak
// (not traced: something later in the look compresses it), so a larger
// peak only brightens the band.
const rimPeak = 3

// keyStage relights the subject at the working resolution: it fits the
// subject's old shading (least squares on the smooth normals, smoothed in
// time), meters the key/fill ratio on the subject's two halves
// (keyOnSubject), evaluates the new light (the plan's, scaled by the
// exposure) over the old on the detailed normals, and adds the rims on the
// silhouette band. It writes lowFrame.relit.
type keyStage struct {
	dev    kernels.Device
	ops    kernels.Ops
	plan   *lightPlan
	images []*kernels.Image
	// nqHost, aqHost: keyOnSubject's read-backs, kept for the job.
	nqHost, aqHost []float32

	eNew, eOld kernels.Image
	// nQ: nDetail at an eighth of the working resolution (with a key off
	// the view axis). Rims: their shape on the band's normals (rimW), their
	// relative colour (rimGain) and the relit image before them (relit0).
	nQ, rimW, rimGain, relit0 kernels.Image

	// newSH is the target irradiance with the fill side set on the
	// subject (subjFill, smoothed in time).
	newSH    [3][9]float64
	subjFill float64
	// The old shading's fit, smoothed in time.
	oldSH   [9]float64
	haveOld bool

	// This frame's relight: the old shading's mean, the part of it that
	// is removed, and the new light's coefficients and rims.
	meanY   [9]float64
	oldMean float64
	oldD    [9]float64
	coeffs  [3]kernels.SH9
	rimRel  [3]float32
}

func newKeyStage(dev kernels.Device, ops kernels.Ops, plan *lightPlan, lw, lh int) (*keyStage, error) {
	k := &keyStage{dev: dev, ops: ops, plan: plan, newSH: plan.newSH}
	a := allocator{dev: dev}
	a.img(&k.eNew, lw, lh, 3)
	a.img(&k.eOld, lw, lh, 1)
	if plan.hasKeyDir {
		ew, eh := eSize(lw, lh)
		a.img(&k.nQ, ew, eh, 3)
	}
	if plan.haveRim {
		a.img(&k.rimW, lw, lh, 1)
		a.img(&k.rimGain, lw, lh, 3)
		a.img(&k.relit0, lw, lh, 3)
	}
	k.images = a.made
	if a.err != nil {
		k.free()
		return nil, fmt.Errorf("render: allocate: %w", a.err)
	}
	return k, nil
}

func (k *keyStage) free() { freeImages(k.dev, k.images) }

// fit fits the old shading on the subject's luminance and meters the
// key on the subject. It reports whether the frame is relit (enough of
// the subject, and a fit).
func (k *keyStage) fit(f *lowFrame, n *normalStage) (bool, error) {
	ata, atb, err := k.ops.SHNormalEquations(f.luma, n.smooth(), f.mask())
	if err != nil {
		return false, step("shading fit", err)
	}
	meanY, weight := meanBasis(ata)
	k.meanY = meanY
	relight := weight >= 1
	if relight {
		if x, ok := solveRidge(ata, atb, ridge); ok {
			if k.haveOld {
				for i := range x {
					x[i] = k.oldSH[i] + emaNew*(x[i]-k.oldSH[i])
				}
			}
			k.oldSH, k.haveOld = x, true
		}
		relight = k.haveOld
	}
	if k.nQ != nil {
		if err := k.keyOnSubject(f, n); err != nil {
			return false, err
		}
	}
	return relight, nil
}

// lightFor sets the frame's new light at exposure x (the prompt's
// intensity times the scene's): oldTrust of the fitted shading plus the
// rest of its mean is removed (the subject's mean shading is kept), and
// the new light is scaled so that its mean is x times the old one's. It
// reports whether the frame can be relit.
func (k *keyStage) lightFor(x float64) bool {
	k.oldMean = shDot(k.oldSH, k.meanY)
	for i := range k.oldD {
		k.oldD[i] = oldTrust * k.oldSH[i]
	}
	k.oldD[0] += (1 - oldTrust) * k.oldMean / shC0
	var mNew [3]float64
	for c := 0; c < 3; c++ {
		mNew[c] = shDot(k.newSH[c], k.meanY)
	}
	lumNew := 0.2126*mNew[0] + 0.7152*mNew[1] + 0.0722*mNew[2]
	ok := k.oldMean > 1e-6 && lumNew > 1e-9 && !math.IsInf(k.oldMean, 0)
	s := x * k.oldMean / lumNew
	m := k.plan.relightMix
	for c := 0; c < 3; c++ {
		var v [9]float64
		for i := range v {
			v[i] = m*s*k.newSH[c][i] + (1-m)*x*k.oldD[i]
		}
		k.coeffs[c] = toSH9(v)
		// The new light's mean is x*oldMean = s*lumNew.
		k.rimRel[c] = float32(m * k.plan.parts.rimCol[c] / lumNew)
	}
	return ok
}

// relight writes the relit subject into f.relit: the source times the
// new shading over the old (and the rims), or the source itself when the
// frame is not relit.
func (k *keyStage) relight(f *lowFrame, n *normalStage, relight bool) error {
	ops := k.ops
	if !relight {
		return step("relight", ops.Copy(f.relit, f.srcLow))
	}
	if err := step("shading", ops.SHEval(k.eNew, n.detailed(), k.coeffs[:])); err != nil {
		return err
	}
	if err := step("shading", ops.SHEval(k.eOld, n.smooth(), []kernels.SH9{toSH9(k.oldD)})); err != nil {
		return err
	}
	eps := float32(oldEpsFrac * k.oldMean)
	if !k.plan.haveRim {
		return step("relight", ops.RatioRelight(f.relit, f.srcLow, k.eNew, k.eOld, nil, eps, maxGain))
	}
	if err := step("relight", ops.RatioRelight(k.relit0, f.srcLow, k.eNew, k.eOld, nil, eps, maxGain)); err != nil {
		return err
	}
	return k.rimLight(f, n, k.rimRel)
}

// keyOnSubject sets the key/fill ratio on the subject itself: the factor
// on the fill side is chosen so that the mean irradiance of the subject's
// half that faces the key (split through its centroid across the key's
// direction in the picture plane) over that of the other half is the
// ratio the words ask for (KeyFillRatio), as a gaffer meters it on the
// two sides of a face, rather than on the two ideal normals facing toward
// and away from the key, which a subject's pseudo-normals rarely reach.
// The means are taken over nDetail (the normals the new light is
// evaluated on) averaged to an eighth of the low resolution, weighted by
// the matte; the
// factor stays within [0.08, 1] like fillScale's, never above it (the
// ratio on the extreme normals is kept at least), and is smoothed in time.
func (k *keyStage) keyOnSubject(f *lowFrame, n *normalStage) error {
	p := &k.plan.parts
	if err := step("key on subject", k.ops.ResizeArea(k.nQ, n.nDetail)); err != nil {
		return err
	}
	var err error
	if k.nqHost, err = k.dev.ReadPixelsTo(k.nqHost, k.nQ); err != nil {
		return step("key on subject", err)
	}
	if k.aqHost, err = k.dev.ReadPixelsTo(k.aqHost, f.alphaE); err != nil {
		return step("key on subject", err)
	}
	nq, aq := k.nqHost, k.aqHost
	qw, qh := k.nQ.Width(), k.nQ.Height()
	if !n.haveShape || len(nq) != 3*qw*qh || len(aq) != qw*qh {
		return nil
	}
	// Picture-plane direction of the key (x right, y up) and the centroid
	// in pixels of nQ (y down).
	lx, ly := float64(p.keyDir[0]), float64(p.keyDir[1])
	cx := n.shape[0] * float64(qw) / float64(f.w)
	cy := n.shape[1] * float64(qh) / float64(f.h)
	mk, ma, wk, wa := halfBasisMeans(nq, aq, qw, qh, cx, cy, lx, ly)
	fs := p.fill
	if wk > 0 && wa > 0 {
		lum := func(e [3][9]float64, m [9]float64, wt float64) float64 {
			var v [3]float64
			for c := 0; c < 3; c++ {
				v[c] = shDot(e[c], m) / wt
			}
			return 0.2126*v[0] + 0.7152*v[1] + 0.0722*v[2]
		}
		kk, ka := lum(p.key, mk, wk), lum(p.key, ma, wa)
		rk, ra := lum(p.rest, mk, wk), lum(p.rest, ma, wa)
		if den := p.ratio*ra - rk; den > 1e-9 {
			if v := (kk - p.ratio*ka) / den; !math.IsNaN(v) {
				fs = math.Max(0.08, math.Min(p.fill, v))
			}
		}
	}
	if k.subjFill > 0 {
		fs = k.subjFill + emaNew*(fs-k.subjFill)
	}
	k.subjFill = fs
	k.newSH = p.combine(fs)
	return nil
}

// halfBasisMeans sums the SH basis of the normals nq (3 planes, qw x qh)
// weighted by the matte aq over the subject's two halves, split through
// the centroid (cx, cy; pixels, y down) across the direction (lx, ly; y
// up): the key's half (mk, weight wk) and the other (ma, wa).
func halfBasisMeans(nq, aq []float32, qw, qh int, cx, cy, lx, ly float64) (mk, ma [9]float64, wk, wa float64) {
	n := qw * qh
	for y := 0; y < qh; y++ {
		for x := 0; x < qw; x++ {
			i := y*qw + x
			w := float64(aq[i])
			if !(w > 0) {
				continue
			}
			d := colour.Normalize3([3]float32{nq[i], nq[n+i], nq[2*n+i]})
			yb := shBasis(d)
			side := (float64(x)+0.5-cx)*lx - (float64(y)+0.5-cy)*ly
			if side >= 0 {
				for k := range yb {
					mk[k] += w * yb[k]
				}
				wk += w
			} else {
				for k := range yb {
					ma[k] += w * yb[k]
				}
				wa += w
			}
		}
	}
	return mk, ma, wk, wa
}

// rimLight adds the rims to relit0 into relit: the rims' shape rimW
// (rimBandShape's on the silhouette band's normals, 1 channel,
// clamped at 0 so that only the normals facing away from the camera
// toward the rim's side are lit), times their irradiance relative to the
// subject's mean new light (rel, per channel), multiplies the relit
// subject: relit = relit0 * (1 + rimW*rel). The light a rim adds is
// reflected by the subject's own colour (its albedo, in relit0), and as
// a gain on the subject it never reaches past the matte (the composite
// weighs the foreground by the alpha).
func (k *keyStage) rimLight(f *lowFrame, n *normalStage, rel [3]float32) error {
	ops := k.ops
	if err := step("rim shading", ops.SHEval(k.rimW, n.nRim, []kernels.SH9{toSH9(k.plan.parts.rimPoly)})); err != nil {
		return err
	}
	cl, ok := k.dev.(kernels.ClampOps)
	if !ok {
		return step("rim shading", fmt.Errorf("device %T has no Clamp", k.dev))
	}
	if err := step("rim shading", cl.Clamp(k.rimW, k.rimW, 0, rimPeak)); err != nil {
		return err
	}
	if err := step("rim shading", ops.Fill(k.rimGain, []float32{1 + rel[0], 1 + rel[1], 1 + rel[2]})); err != nil {
		return err
	}
	return step("rim shading", ops.RatioRelight(f.relit, k.relit0, k.rimGain, f.ones3, k.rimW, gainEps, 1e6))
}
