package render

import (
	"fmt"
	"math"

	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render/colour"
)

// Tuning (distances in pixels at the working resolution).
const (
	// radiusPerMeanDist: the inflation radius is this times the subject's
	// mean interior distance (a disc of radius R has mean distance R/3,
	// so it inflates to a hemisphere).
	radiusPerMeanDist = 3
	// detailSigma is the blur whose ratio to the luminance is the relief
	// detail; detailStrength is its height (pixels per unit of relative
	// contrast).
	detailSigma    = 2
	detailStrength = 1.5
	// distSigmaPx is the blur of the distance field (pixels at a shorter
	// side of lowShortSide).
	distSigmaPx = 2
	// domeSlope is the slope of the subject's coarse shape (a paraboloid
	// over its ellipse of inertia) on that ellipse: 1 is a surface at 45
	// degrees to the camera there, about where a sphere of the same
	// outline is at 60 degrees.
	domeSlope = 2.0
	// rimWidthPx is the width (pixels at a shorter side of lowShortSide)
	// of the silhouette band that a rim light lights.
	rimWidthPx = 4.5
)

// normalStage makes the subject's pseudo-normals at the working
// resolution: nSmooth (the inflated distance field of the matte, on which
// the old shading is fitted), nDetail (the same with the subject's coarse
// dome and its luminance relief, on which the new light is evaluated) and,
// with a rim light, nRim (the silhouette band's own normals). In fill mode
// the whole frame is the subject and both are a fixed dome (fillNormals).
type normalStage struct {
	dev                 kernels.Device
	ops                 kernels.Ops
	aHost               []float32 // shapeDome's read-back, kept for the job
	lw, lh              int
	fill                bool
	haveRim             bool
	images              []*kernels.Image
	distSigma, rimWidth float32

	lumaBlur, detail, dist, distSmooth kernels.Image
	nSmooth, nDetail, nRim             kernels.Image
	// The subject's coarse shape: the dome's height (globalH), and the
	// relief mixed with it (mixH, by the constant weight mixW).
	globalH, mixH, mixW kernels.Image
	globalHost          []float32
	fillNormals         kernels.Image

	// Temporal state: the inflation radius, and the coarse shape's
	// centroid and second central moments (x, y, xx, xy, yy;
	// working-resolution pixels) and the dome's strength.
	radius    float32
	shape     [6]float64
	haveShape bool
}

func newNormalStage(dev kernels.Device, ops kernels.Ops, lw, lh int, fill, haveRim bool) (*normalStage, error) {
	n := &normalStage{dev: dev, ops: ops, lw: lw, lh: lh, fill: fill, haveRim: haveRim}
	n.distSigma = float32(max(1, distSigmaPx*float64(min(lw, lh))/lowShortSide))
	if fill {
		if err := n.makeFillNormals(); err != nil {
			return nil, err
		}
		n.images = []*kernels.Image{&n.fillNormals}
		return n, nil
	}
	a := allocator{dev: dev}
	for _, p := range []*kernels.Image{&n.lumaBlur, &n.detail, &n.dist, &n.distSmooth, &n.globalH, &n.mixH, &n.mixW} {
		a.img(p, lw, lh, 1)
	}
	a.img(&n.nSmooth, lw, lh, 3)
	a.img(&n.nDetail, lw, lh, 3)
	if haveRim {
		a.img(&n.nRim, lw, lh, 3)
		n.rimWidth = float32(max(1.5, rimWidthPx*float64(min(lw, lh))/lowShortSide))
	}
	n.images = a.made
	if a.err != nil {
		n.free()
		return nil, fmt.Errorf("render: allocate: %w", a.err)
	}
	// The relief's weight in mixH (see inflate).
	if err := fillAll(ops, fillOf{n.mixW, []float32{detailStrength / (detailStrength + 1)}}); err != nil {
		n.free()
		return nil, err
	}
	return n, nil
}

func (n *normalStage) free() { freeImages(n.dev, n.images) }

// run makes the frame's luminance and normals.
func (n *normalStage) run(f *lowFrame) error {
	if err := step("luma", n.ops.Luma(f.luma, f.srcLow)); err != nil {
		return err
	}
	if n.fill {
		return nil
	}
	return n.inflate(f)
}

// smooth and detailed are the normals the old shading is fitted on and
// the new light evaluated on.
func (n *normalStage) smooth() kernels.Image {
	if n.fill {
		return n.fillNormals
	}
	return n.nSmooth
}

func (n *normalStage) detailed() kernels.Image {
	if n.fill {
		return n.fillNormals
	}
	return n.nDetail
}

// inflate builds the subject's pseudo-normals at low resolution: nSmooth
// from the inflated distance field of the matte (radius radiusPerMeanDist
// times the subject's mean interior distance, smoothed in time), nDetail
// the same plus the relief of the relative high-pass luminance (luma over
// its blur, whose constant offset of 1 has no gradient).
func (n *normalStage) inflate(f *lowFrame) error {
	ops := n.ops
	if err := step("detail blur", ops.GaussianBlur(n.lumaBlur, f.luma, detailSigma)); err != nil {
		return err
	}
	if err := step("detail", ops.RatioRelight(n.detail, f.ones1, f.luma, n.lumaBlur, nil, 1e-3, maxGain)); err != nil {
		return err
	}
	if err := step("distance", ops.DistanceTransform(n.dist, f.alphaLow, 0.5)); err != nil {
		return err
	}
	st, err := ops.MaskedStats(n.dist, f.alphaLow)
	if err != nil {
		return step("distance statistics", err)
	}
	rad := float32(radiusPerMeanDist * st.Mean[0])
	rad = colour.Clamp32(rad, 2, float32(max(n.lw, n.lh)))
	if n.radius > 0 {
		rad = n.radius + emaNew*(rad-n.radius)
	}
	n.radius = rad
	// The exact distance of a pixel-staircase boundary ripples along the
	// edge; a small blur removes the radial streaks it would leave in the
	// normals.
	if err := step("distance blur", ops.GaussianBlur(n.distSmooth, n.dist, n.distSigma)); err != nil {
		return err
	}
	// The coarse shape: a paraboloid over the subject's ellipse of
	// inertia, so that its whole left half faces left and its top faces
	// up, not only the few pixels at the silhouette (see shapeDome).
	if err := step("shape resize", ops.ResizeArea(f.alphaQ, f.alphaLow)); err != nil {
		return err
	}
	if err := step("shape resize", ops.ResizeArea(f.alphaE, f.alphaQ)); err != nil {
		return err
	}
	if err := n.shapeDome(f); err != nil {
		return err
	}
	// The old shading is fitted on the local normals only: at the scale
	// of the whole subject, luminance differences are mostly albedo
	// (dark trousers, a light shirt), which a fit on the coarse dome
	// would take for light and remove.
	if err := step("normals", ops.NormalsFromMatte(n.nSmooth, n.distSmooth, nil, rad, 0)); err != nil {
		return err
	}
	// The rims' band: the silhouette's own normals, from the unsmoothed
	// distance inflated over rimWidthPx only, so that a rim light is a
	// thin bright line on the edge and not the smooth normals' wide glow.
	if n.haveRim {
		if err := step("rim normals", ops.NormalsFromMatte(n.nRim, n.dist, nil, n.rimWidth, 0)); err != nil {
			return err
		}
	}
	// nDetail's height adds the relief and the dome (globalH, in pixels):
	// mixH = c*detail + (1-c)*globalH with c = detailStrength/(detailStrength+1),
	// scaled back by detailStrength+1.
	if err := step("normals", ops.Composite(n.mixH, n.detail, n.globalH, n.mixW)); err != nil {
		return err
	}
	return step("normals", ops.NormalsFromMatte(n.nDetail, n.distSmooth, n.mixH, rad, detailStrength+1))
}

// shapeDome writes into globalH (low resolution, pixels) the height of the
// subject's coarse shape: the paraboloid
//
//	h = -domeSlope/2 * (u^2/a + v^2/b)
//
// over the principal axes (u, v) of the matte's ellipse of inertia, whose
// semi-axes a and b are twice the standard deviations along them (the
// edge of a uniform ellipse). Its slope grows linearly from the centroid
// and reaches domeSlope on the ellipse along both axes, whatever its
// length: a long subject (a standing person, a walking bear) is round
// across both its width and its height, as a body is, so that its left
// half faces left and its upper half faces up. The moments are taken on
// the matte at an eighth of the low resolution and smoothed in time.
func (n *normalStage) shapeDome(f *lowFrame) error {
	var err error
	if n.aHost, err = n.dev.ReadPixelsTo(n.aHost, f.alphaE); err != nil {
		return step("shape", err)
	}
	a := n.aHost
	ew, eh := f.alphaE.Width(), f.alphaE.Height()
	sx, sy := float64(n.lw)/float64(ew), float64(n.lh)/float64(eh)
	var m0, mx, my, mxx, mxy, myy float64
	for y := 0; y < eh; y++ {
		py := (float64(y) + 0.5) * sy
		for x := 0; x < ew; x++ {
			w := float64(a[y*ew+x])
			if !(w > 0) {
				continue
			}
			px := (float64(x) + 0.5) * sx
			m0 += w
			mx += w * px
			my += w * py
			mxx += w * px * px
			mxy += w * px * py
			myy += w * py * py
		}
	}
	// A subject that fills the frame shows no outline to round: the dome
	// fades out as the background's share falls below a tenth.
	bgShare := 1 - m0/float64(ew*eh)
	if m0 > 0.5 {
		cx, cy := mx/m0, my/m0
		// A pixel's own spread (sx^2/12) keeps a one-pixel-wide subject round.
		cur := [6]float64{cx, cy, mxx/m0 - cx*cx + sx*sx/12, mxy/m0 - cx*cy, myy/m0 - cy*cy + sy*sy/12,
			math.Min(1, math.Max(bgShare, 0)/0.1)}
		if n.haveShape {
			for i := range cur {
				cur[i] = n.shape[i] + emaNew*(cur[i]-n.shape[i])
			}
		}
		n.shape, n.haveShape = cur, true
	}
	if n.globalHost == nil {
		n.globalHost = make([]float32, n.lw*n.lh)
	}
	g := n.globalHost
	if !n.haveShape {
		clear(g)
		return step("shape", n.dev.WritePixels(n.globalH, g))
	}
	cx, cy, cxx, cxy, cyy := n.shape[0], n.shape[1], n.shape[2], n.shape[3], n.shape[4]
	tr, det := cxx+cyy, cxx*cyy-cxy*cxy
	disc := math.Sqrt(math.Max(tr*tr/4-det, 0))
	l1, l2 := tr/2+disc, math.Max(tr/2-disc, 0)
	th := 0.5 * math.Atan2(2*cxy, cxx-cyy)
	cs, sn := math.Cos(th), math.Sin(th)
	floor := 0.25 // pixels^2: the semi-axes are at least one pixel
	ka := n.shape[5] * domeSlope / 2 / (2 * math.Sqrt(math.Max(l1, floor)))
	kb := n.shape[5] * domeSlope / 2 / (2 * math.Sqrt(math.Max(l2, floor)))
	for y := 0; y < n.lh; y++ {
		dy := float64(y) + 0.5 - cy
		row := g[y*n.lw:][:n.lw]
		for x := range row {
			dx := float64(x) + 0.5 - cx
			u := dx*cs + dy*sn
			v := -dx*sn + dy*cs
			row[x] = float32(-(ka*u*u + kb*v*v))
		}
	}
	return step("shape", n.dev.WritePixels(n.globalH, g))
}

// makeFillNormals builds, once, the normals of fill mode, where the whole
// frame is the subject: a gentle dome h = -a*rho^2 over the frame (rho the
// distance from the centre) whose slope reaches 0.55 at the corners, so a
// light from one side brightens that side of the picture. There is no
// relief detail in fill mode (every edge of the picture would emboss).
func (n *normalStage) makeFillNormals() error {
	lw, lh := n.lw, n.lh
	np := lw * lh
	hd := math.Hypot(float64(lw), float64(lh)) / 2
	k := 0.55 / hd // slope per pixel of distance from the centre
	data := make([]float32, 3*np)
	cx, cy := float64(lw)/2, float64(lh)/2
	for y := 0; y < lh; y++ {
		for x := 0; x < lw; x++ {
			dx, dy := (float64(x)+0.5-cx)*k, (float64(y)+0.5-cy)*k
			inv := 1 / math.Sqrt(dx*dx+dy*dy+1)
			i := y*lw + x
			data[i], data[np+i], data[2*np+i] = float32(dx*inv), float32(-dy*inv), float32(inv)
		}
	}
	var err error
	if n.fillNormals, err = n.dev.NewImage(lw, lh, 3); err != nil {
		return fmt.Errorf("render: allocate: %w", err)
	}
	if err := n.dev.WritePixels(n.fillNormals, data); err != nil {
		return fmt.Errorf("render: fill normals: %w", err)
	}
	return nil
}
