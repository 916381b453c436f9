package render

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
)

// Tuning of the look. Distances in pixels are at the low working
// resolution (shorter side lowShortSide).
const (
	// lowShortSide is the shorter side of the working resolution of
	// everything but the final composite.
	lowShortSide = 270
	// envW x envH is the size of the environment image projected on SH.
	envW, envH = 64, 32
	// envFront is the radiance of the mirrored front hemisphere relative
	// to the background behind the subject.
	envFront = 0.6
	// envChroma keeps this much of the environment's colour in the
	// lighting (the rest is its luminance): a red wall tints, not floods.
	envChroma = 0.4
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
	// rimBoost is a rim light's strength on the silhouette relative to
	// its colour: rims are set a stop and a half above the key.
	rimBoost = 3
	// oldTrust is the share of the fitted old shading's variation that
	// the relight removes (the rest is its mean): the fit on
	// pseudo-normals from a matte takes part of the albedo's layout for
	// light (a dark belly, a light back; it explains 10 to 60% of the
	// subject's luminance variance on real footage), so it is only half
	// trusted.
	oldTrust = 0.5
	// ridge is the relative ridge regulariser of the SH fit.
	ridge = 2e-3
	// emaNew is the weight of the new frame in the temporal smoothing of
	// the shading fit, the inflation radius and the colour statistics.
	emaNew = 0.25
	// maxGain bounds every ratio (relight and final gain).
	maxGain = 4
	// oldEpsFrac floors the old shading at this fraction of its mean, so
	// grazing normals at the silhouette cannot produce a huge gain.
	oldEpsFrac = 0.2
	// gainEps floors the source in the final gain division.
	gainEps = 1e-4
	// wrapSigmaFrac is the light-wrap band (Gaussian sigma of the matte)
	// as a fraction of the diagonal; bgBlurFrac the blur of
	// the background that spills.
	wrapSigmaFrac = 0.012
	bgBlurFrac    = 0.02
)

// Params are one job's render settings.
type Params struct {
	// Prompt is the free-text description of the lighting and scene.
	Prompt string
	// Reference is the reference image (RGB24 sRGB, or YUV420P; any
	// size): it becomes the background, cover-fitted, and its light
	// lights the subject. nil synthesises a backdrop from the prompt.
	Reference *frame.HostFrame
	// Seed drives every random choice (backdrop, light jitter, grain).
	Seed uint32
	// Width and Height are the output size of every frame.
	Width, Height int
	// Fill is alpha_mode fill: the whole frame is the subject, relit and
	// harmonised, with no background replacement.
	Fill bool
	// NoPlateMatch turns off matching the subject's grain, black level
	// and highlights to the background (for comparisons; see plate.go).
	NoPlateMatch bool
}

// Renderer renders the frames of one job on a kernels.Device. Create it
// with New, call Frame for each frame in order, then Close. It is not safe
// for concurrent use.
type Renderer struct {
	dev    kernels.Device
	ops    kernels.Ops
	w, h   int
	lw, lh int
	fill   bool
	light  Lighting

	// Job constants.
	bg, bgBlur   kernels.Image    // full resolution; nil in fill mode
	bgCodes      *frame.HostFrame // bg downloaded for FrameFromHost (made on first use)
	newSH        [3][9]float64    // target irradiance, before exposure normalisation
	rimSH        [3][9]float64    // the rims' silhouette term, on the band's normals
	parts        lightParts
	subjFill     float64       // the fill factor set on the subject's halves, smoothed
	nQ           kernels.Image // nDetail at an eighth of the low resolution
	lumQ         kernels.Image // relitQ's luminance
	curX         float64       // this frame's exposure factor (intensity times scene)
	srcSubLum    float64       // this frame's mean source luminance over the matte
	haveRim      bool
	bgLab        kernels.LabStats
	harmStrength float32
	wrap         float32
	wrapSigma    float32
	distSigma    float32
	relightMix   float64       // how much of the new lighting replaces the old
	fillNormals  kernels.Image // fill mode: the dome's normals

	// Low-resolution scratch images.
	srcLow, alphaLow, luma, lumaBlur, detail, dist kernels.Image
	distSmooth                                     kernels.Image
	nSmooth, nDetail, eNew, eOld, relit            kernels.Image
	gain, ones1, ones3, alphaBlur                  kernels.Image
	// The subject's coarse shape: its matte at an eighth of the low
	// resolution (alphaE, for its moments), the dome's height (globalH),
	// and the relief mixed with it (mixH, by the constant weight mixW).
	alphaE, globalH, mixH, mixW kernels.Image
	globalHost                  []float32
	// Rims: the silhouette band's normals, the main and rim irradiance
	// (at twice their value) and a constant 0.5 that averages them.
	// Rims: the silhouette band's normals, the rim's shape on them, the
	// rim's relative colour (1 + its irradiance over the subject's mean)
	// and the relit image before the rim.
	nRim, rimW, rimGain, relit0 kernels.Image
	rimWidth                    float32
	// Foreground estimation and shadows (not in fill mode).
	look lookImages
	// Matching the plate: grain, black level, highlights (plate.go).
	plate plateMatch
	// Harmonisation runs at half the low resolution: relitQ, its matte,
	// the transferred image, its ratio to relitQ, and that ratio
	// upsampled back (harmGain).
	relitQ, alphaQ, harmQ, ratioQ, onesQ, harmGain kernels.Image

	// Temporal state.
	oldSH   [9]float64
	haveOld bool
	radius  float32
	// The coarse shape's centroid and second central moments (x, y, xx,
	// xy, yy; low-resolution pixels) and the dome's strength, smoothed in
	// time.
	shape     [6]float64
	haveShape bool
	fromLab   kernels.LabStats
	haveLab   bool
	// Exposure: the old background's mean luminance (smoothed) and the
	// new one's.
	bgOldLum, bgNewLum float64

	closed bool
}

// lowSize is the working resolution for a w x h output: the shorter side
// scaled to lowShortSide when larger.
func lowSize(w, h int) (int, int) {
	s := min(w, h)
	if s <= lowShortSide {
		return w, h
	}
	f := float64(lowShortSide) / float64(s)
	return max(1, int(math.Round(float64(w)*f))), max(1, int(math.Round(float64(h)*f)))
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
	if err := r.setup(ctx, p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Renderer) setup(ctx context.Context, p Params) error {
	r.light = ParsePrompt(p.Prompt)
	rng := rand.New(rand.NewPCG(uint64(p.Seed), 0x76667872656e6465)) // "vfxrende"
	jitterLights(r.light.Lights, rng)

	var err error
	alloc := func(dst *kernels.Image, w, h, c int) {
		if err == nil {
			*dst, err = r.dev.NewImage(w, h, c)
		}
	}
	lw, lh := r.lw, r.lh
	alloc(&r.srcLow, lw, lh, 3)
	alloc(&r.alphaLow, lw, lh, 1)
	alloc(&r.luma, lw, lh, 1)
	alloc(&r.lumaBlur, lw, lh, 1)
	alloc(&r.detail, lw, lh, 1)
	alloc(&r.dist, lw, lh, 1)
	alloc(&r.distSmooth, lw, lh, 1)
	alloc(&r.nSmooth, lw, lh, 3)
	alloc(&r.nDetail, lw, lh, 3)
	alloc(&r.eNew, lw, lh, 3)
	alloc(&r.eOld, lw, lh, 1)
	alloc(&r.relit, lw, lh, 3)
	qw, qh := max(1, lw/2), max(1, lh/2)
	alloc(&r.relitQ, qw, qh, 3)
	alloc(&r.alphaQ, qw, qh, 1)
	alloc(&r.harmQ, qw, qh, 3)
	alloc(&r.ratioQ, qw, qh, 3)
	alloc(&r.onesQ, qw, qh, 3)
	alloc(&r.harmGain, lw, lh, 3)
	alloc(&r.alphaBlur, qw, qh, 1)
	alloc(&r.lumQ, qw, qh, 1)
	alloc(&r.alphaE, max(1, qw/4), max(1, qh/4), 1)
	alloc(&r.globalH, lw, lh, 1)
	alloc(&r.mixH, lw, lh, 1)
	alloc(&r.mixW, lw, lh, 1)
	alloc(&r.gain, lw, lh, 3)
	alloc(&r.ones1, lw, lh, 1)
	alloc(&r.ones3, lw, lh, 3)
	if err != nil {
		return fmt.Errorf("render: allocate: %w", err)
	}
	if err := r.ops.Fill(r.ones1, []float32{1}); err != nil {
		return fmt.Errorf("render: fill: %w", err)
	}
	// The relief's weight in mixH (see normals).
	if err := r.ops.Fill(r.mixW, []float32{detailStrength / (detailStrength + 1)}); err != nil {
		return fmt.Errorf("render: fill: %w", err)
	}
	if err := r.ops.Fill(r.ones3, []float32{1, 1, 1}); err != nil {
		return fmt.Errorf("render: fill: %w", err)
	}
	if err := r.ops.Fill(r.onesQ, []float32{1, 1, 1}); err != nil {
		return fmt.Errorf("render: fill: %w", err)
	}
	diag := math.Hypot(float64(lw), float64(lh))
	r.wrapSigma = float32(wrapSigmaFrac * diag * float64(max(1, lw/2)) / float64(lw)) // at half resolution
	r.distSigma = float32(max(1, distSigmaPx*float64(min(lw, lh))/lowShortSide))

	// Background: full resolution (composite) and low resolution (light,
	// statistics, blur).
	bgLow, err := r.dev.NewImage(lw, lh, 3)
	if err != nil {
		return fmt.Errorf("render: allocate: %w", err)
	}
	defer r.dev.Free(bgLow)
	env, err := r.dev.NewImage(min(envW, lw), min(envH, lh), 3)
	if err != nil {
		return fmt.Errorf("render: allocate: %w", err)
	}
	defer r.dev.Free(env)
	if !r.fill {
		if r.bg, err = r.dev.NewImage(r.w, r.h, 3); err != nil {
			return fmt.Errorf("render: allocate: %w", err)
		}
	}
	hasRef := p.Reference != nil
	if hasRef {
		if err := r.loadReference(p.Reference, bgLow, env); err != nil {
			return err
		}
	} else {
		cv := synthBackdrop(&r.light, rng, lw, lh)
		salt := rng.Uint32()
		if err := ctx.Err(); err != nil {
			return err
		}
		if r.fill {
			f, err := cv.toRGB24(lw, lh, salt)
			if err != nil {
				return fmt.Errorf("render: backdrop: %w", err)
			}
			if err := r.dev.Upload(bgLow, f); err != nil {
				return fmt.Errorf("render: backdrop upload: %w", err)
			}
		} else {
			f, err := cv.toRGB24(r.w, r.h, salt)
			if err != nil {
				return fmt.Errorf("render: backdrop: %w", err)
			}
			if err := r.dev.Upload(r.bg, f); err != nil {
				return fmt.Errorf("render: backdrop upload: %w", err)
			}
			if err := r.ops.ResizeArea(bgLow, r.bg); err != nil {
				return fmt.Errorf("render: backdrop resize: %w", err)
			}
		}
		if err := r.ops.ResizeArea(env, bgLow); err != nil {
			return fmt.Errorf("render: environment resize: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	// Blurred background for light wrap: a wide blur, so it is made at
	// half the low resolution and upsampled.
	if !r.fill {
		if err := r.ops.ResizeArea(r.relitQ, bgLow); err != nil {
			return fmt.Errorf("render: background blur: %w", err)
		}
		if err := r.ops.GaussianBlur(r.harmQ, r.relitQ, float32(bgBlurFrac*diag/2)); err != nil {
			return fmt.Errorf("render: background blur: %w", err)
		}
		if r.bgBlur, err = r.dev.NewImage(r.w, r.h, 3); err != nil {
			return fmt.Errorf("render: allocate: %w", err)
		}
		if err := r.ops.ResizeBilinear(r.bgBlur, r.harmQ); err != nil {
			return fmt.Errorf("render: background blur: %w", err)
		}
	}

	// Mean luminance of the new background: the subject's exposure
	// follows it.
	if err := r.ops.Luma(r.luma, bgLow); err != nil {
		return fmt.Errorf("render: background luminance: %w", err)
	}
	if st, err := r.ops.MaskedStats(r.luma, nil); err != nil {
		return fmt.Errorf("render: background luminance: %w", err)
	} else {
		r.bgNewLum = st.Mean[0]
	}
	// Plate matching: the new background's grain, black level and
	// highlights, once per job (relitQ is still bgLow area-resized).
	r.plate.off = p.NoPlateMatch
	if err := r.setupPlate(r.luma, r.relitQ, p.Seed); err != nil {
		return err
	}

	// Statistics of the background for harmonisation.
	if r.bgLab, err = r.ops.LabStats(bgLow, nil); err != nil {
		return fmt.Errorf("render: background statistics: %w", err)
	}

	// Target lighting: environment irradiance + prompt lights + ambient.
	envL, err := r.ops.SHProjectEnv(env, envFront)
	if err != nil {
		return fmt.Errorf("render: environment light: %w", err)
	}
	r.parts = lightingParts(&r.light, envL, hasRef)
	r.newSH, r.rimSH = r.parts.combine(r.parts.fill), r.parts.rim
	for _, lt := range r.light.Lights {
		r.haveRim = r.haveRim || lt.Role == RoleRim
	}
	if r.fill {
		// The whole frame is the subject: no silhouette, so the rims'
		// term is evaluated on the frame's dome with the rest.
		for c := range r.newSH {
			for k := range r.newSH[c] {
				r.newSH[c][k] += r.rimSH[c][k]
			}
		}
		r.haveRim = false
	}
	if kd := r.parts.keyDir; r.parts.haveKey && !r.fill && math.Abs(float64(kd[0]))+math.Abs(float64(kd[1])) >= 0.2 {
		alloc(&r.nQ, r.alphaE.Width(), r.alphaE.Height(), 3)
		if err != nil {
			return fmt.Errorf("render: allocate: %w", err)
		}
	}
	if r.haveRim {
		alloc(&r.nRim, lw, lh, 3)
		alloc(&r.rimW, lw, lh, 1)
		alloc(&r.rimGain, lw, lh, 3)
		alloc(&r.relit0, lw, lh, 3)
		if err != nil {
			return fmt.Errorf("render: allocate: %w", err)
		}
		r.rimWidth = float32(max(1.5, rimWidthPx*float64(min(lw, lh))/lowShortSide))
	}
	// The fitted old shading is a guess from a matte: explicit prompt
	// lights replace it (the user asked for them), a reference or a
	// scene's default lights most of it, nothing but ambient light half.
	switch {
	case r.light.Explicit:
		r.relightMix = 1
	case hasRef || len(r.light.Lights) > 0:
		r.relightMix = 0.7
	default:
		r.relightMix = 0.5
	}

	switch {
	case hasRef && !r.fill:
		r.harmStrength = 0.45
	case hasRef:
		r.harmStrength = 0.4
	case !r.fill:
		r.harmStrength = 0.3
	default:
		r.harmStrength = 0.15
	}
	r.wrap = 0.35
	if r.light.Rim {
		r.wrap = 0.55
	}
	if r.fill {
		r.wrap = 0
		if err := r.makeFillNormals(); err != nil {
			return err
		}
	} else if err := r.allocLook(); err != nil {
		return err
	}
	return nil
}

// loadReference uploads the reference, cover-fits it into the background
// (full resolution, or only the low-resolution copy in fill mode) and
// reduces it to the environment image.
func (r *Renderer) loadReference(ref *frame.HostFrame, bgLow, env kernels.Image) error {
	// A reference far larger than the output (a 24 MP photo) is first
	// box-averaged on the host by an integer factor, keeping at least 1.5x
	// the cover-fit size, so the device never holds a huge float copy.
	if ref.Format == frame.RGB24 {
		if k := int(math.Min(float64(ref.Width)/float64(r.w), float64(ref.Height)/float64(r.h)) / 1.5); k >= 2 {
			ref = decimateRGB24(ref, k)
		}
	}
	img, err := r.dev.NewImage(ref.Width, ref.Height, 3)
	if err != nil {
		return fmt.Errorf("render: allocate reference: %w", err)
	}
	defer r.dev.Free(img)
	if err := r.dev.Upload(img, ref); err != nil {
		return fmt.Errorf("render: reference upload: %w", err)
	}
	if r.fill {
		if err := r.ops.CoverFit(bgLow, img); err != nil {
			return fmt.Errorf("render: reference fit: %w", err)
		}
	} else {
		if err := r.ops.CoverFit(r.bg, img); err != nil {
			return fmt.Errorf("render: reference fit: %w", err)
		}
		if err := r.ops.ResizeArea(bgLow, r.bg); err != nil {
			return fmt.Errorf("render: reference resize: %w", err)
		}
	}
	// The environment comes from the whole reference, not the crop.
	if ref.Width >= env.Width() && ref.Height >= env.Height() {
		err = r.ops.ResizeArea(env, img)
	} else {
		err = r.ops.ResizeBilinear(env, img)
	}
	if err != nil {
		return fmt.Errorf("render: environment resize: %w", err)
	}
	return nil
}

// decimateRGB24 averages k x k blocks of an RGB24 frame in linear light
// (the last partial row and column of blocks are dropped).
func decimateRGB24(f *frame.HostFrame, k int) *frame.HostFrame {
	w, h := f.Width/k, f.Height/k
	out, err := frame.New(frame.RGB24, w, h)
	if err != nil {
		return f
	}
	var toLin [256]float32
	for i := range toLin {
		toLin[i] = srgbToLinear(float32(i) / 255)
	}
	const lutN = 4096
	var toSRGB [lutN + 1]uint8
	for i := range toSRGB {
		toSRGB[i] = uint8(linearToSRGB(float32(i)/lutN)*255 + 0.5)
	}
	inv := 1 / float32(k*k)
	acc := make([]float32, 3*w)
	for by := 0; by < h; by++ {
		clear(acc)
		for y := by * k; y < (by+1)*k; y++ {
			row := f.Planes[0][y*f.Strides[0]:]
			for bx := 0; bx < w; bx++ {
				p := row[3*bx*k : 3*(bx+1)*k]
				for i := 0; i < len(p); i += 3 {
					acc[3*bx] += toLin[p[i]]
					acc[3*bx+1] += toLin[p[i+1]]
					acc[3*bx+2] += toLin[p[i+2]]
				}
			}
		}
		o := out.Planes[0][by*out.Strides[0]:]
		for i, v := range acc {
			o[i] = toSRGB[min(int(v*inv*lutN+0.5), lutN)]
		}
	}
	return out
}

// jitterLights perturbs each light's direction (about 3 degrees) and
// colour (about 2 percent) from the seed.
func jitterLights(ls []Light, rng *rand.Rand) {
	for i := range ls {
		d := ls[i].Dir
		for k := range d {
			d[k] += float32(rng.Float64()-0.5) * 0.1
		}
		ls[i].Dir = normalize3(d)
		for k := range ls[i].Color {
			ls[i].Color[k] *= 1 + float32(rng.Float64()-0.5)*0.04
		}
	}
}

// lightParts are the target lighting's parts: the key (and the rims'
// light), the rest (environment, ambient, fills), the rims' silhouette
// term, and the factor on the rest that sets the key/fill ratio on the
// extreme normals (1 without a key).
type lightParts struct {
	key, rest, rim [3][9]float64
	// rimPoly and rimCol split rim: rim[c] ~ rimCol[c]*rimPoly (exact for
	// one rim light; with several, their shapes are averaged weighted by
	// their luminance).
	rimPoly [9]float64
	rimCol  [3]float64
	keyDir  [3]float32
	haveKey bool
	ratio   float64 // KeyFillRatio
	fill    float64
}

// combine is key + f*rest.
func (p *lightParts) combine(f float64) (e [3][9]float64) {
	for c := 0; c < 3; c++ {
		for k := 0; k < 9; k++ {
			e[c][k] = p.key[c][k] + f*p.rest[c][k]
		}
	}
	return e
}

// lightingParts is the target lighting, in parts. It mixes the
// environment's irradiance (the SH radiance of the background convolved
// with the cosine lobe, its chroma reduced to envChroma) with the
// prompt's lights and ambient light. The environment's mean irradiance is scaled to luminance 1 with a reference
// image and no prompt light, 0.6 with a reference and prompt lights, and
// 0.3 for a synthesised backdrop (whose look already follows the prompt).
// When the prompt has a key light, everything but the key and the rims
// (environment, ambient, fills) is the fill side, scaled so that the
// lighting ratio (irradiance of a normal facing the key over that of the
// normal mirrored across the view axis) is KeyFillRatio: the photographic
// ratio the words ask for. The rims' silhouette term (rimIrradiance) is
// kept apart, in p.rim: it is evaluated on the silhouette band's normals.
// The rest of the light is p.combine(p.fill).
func lightingParts(l *Lighting, envL [3]kernels.SH9, hasRef bool) (p lightParts) {
	var rest, key, rim [3][9]float64
	var rimPoly [9]float64
	var rimCol [3]float64
	var rimLum float64
	var envE [3][9]float64
	for c := 0; c < 3; c++ {
		for k := 0; k < 9; k++ {
			envE[c][k] = cosineLobe[shBand[k]] * float64(envL[c][k])
		}
	}
	// Reduce the environment's chroma, coefficient by coefficient.
	for k := 0; k < 9; k++ {
		y := 0.2126*envE[0][k] + 0.7152*envE[1][k] + 0.0722*envE[2][k]
		for c := 0; c < 3; c++ {
			envE[c][k] = y + envChroma*(envE[c][k]-y)
		}
	}
	wEnv := 0.3
	if hasRef {
		wEnv = 0.6
		if len(l.Lights) == 0 {
			wEnv = 1
		}
	}
	dc := (0.2126*envE[0][0] + 0.7152*envE[1][0] + 0.0722*envE[2][0]) * shC0
	if dc > 1e-9 && !math.IsInf(dc, 0) {
		s := wEnv / dc
		for c := 0; c < 3; c++ {
			for k := 0; k < 9; k++ {
				rest[c][k] += s * envE[c][k]
			}
		}
	}
	var keyDir [3]float32
	haveKey := false
	for _, lt := range l.Lights {
		switch {
		case lt.Role == RoleKey && !haveKey:
			lightIrradiance(&key, lt.Dir, lt.Color, lt.Hardness)
			keyDir, haveKey = lt.Dir, true
		case lt.Role == RoleRim:
			lightIrradiance(&key, lt.Dir, lt.Color, lt.Hardness)
			col := scale3(lt.Color, rimBoost)
			rimIrradiance(&rim, lt.Dir, col)
			sh, y := rimShape(lt.Dir), float64(luminance(col))
			for k := range sh {
				rimPoly[k] += y * sh[k]
			}
			for c := range rimCol {
				rimCol[c] += float64(col[c])
			}
			rimLum += y
		default:
			lightIrradiance(&rest, lt.Dir, lt.Color, lt.Hardness)
		}
	}
	amb := l.Ambient
	if hasRef && len(l.Lights) == 0 {
		amb = scale3(amb, 0.35)
	}
	ambientIrradiance(&rest, amb)
	f := 1.0
	if haveKey {
		f = fillScale(key, rest, keyDir, KeyFillRatio(l))
	}
	if rimLum > 0 {
		for k := range rimPoly {
			rimPoly[k] /= rimLum
		}
	}
	return lightParts{key: key, rest: rest, rim: rim, rimPoly: rimPoly, rimCol: rimCol,
		keyDir: keyDir, haveKey: haveKey, ratio: KeyFillRatio(l), fill: f}
}

// KeyFillRatio is the lighting ratio the prompt asks for: the irradiance
// on the key side over the shadow side. It starts at the common 3:1 of a
// portrait and follows the words: the key's hardness (soft 2:1 up to hard
// 4.5:1), its strength ("strong", "faint") and the global contrast
// squared ("dramatic", "low-key" toward 8:1 and beyond, "flat",
// "high-key" toward 2:1). Range 1.5..12.
func KeyFillRatio(l *Lighting) float64 {
	k := 3.0
	for _, lt := range l.Lights {
		if lt.Role == RoleKey {
			k *= 1 + float64(clamp32(lt.Hardness, 0, 1)) - 0.5
			k *= math.Max(0.5, math.Min(1.5, float64(luminance(lt.Color))))
			break
		}
	}
	c := float64(l.Contrast)
	if c <= 0 {
		c = 1
	}
	k *= c * c
	return math.Max(1.5, math.Min(12, k))
}

// fillScale returns the factor f on the fill side rest so that the
// luminance irradiance of key + f*rest at the key's direction over that at
// the direction mirrored across the view axis is ratio; f stays in
// [0.08, 1] (the fill is only ever reduced, never removed).
func fillScale(key, rest [3][9]float64, dir [3]float32, ratio float64) float64 {
	lum := func(e [3][9]float64, d [3]float32) float64 {
		y := shBasis(normalize3(d))
		var v [3]float64
		for c := 0; c < 3; c++ {
			for k := 0; k < 9; k++ {
				v[c] += e[c][k] * y[k]
			}
		}
		return 0.2126*v[0] + 0.7152*v[1] + 0.0722*v[2]
	}
	dark := [3]float32{-dir[0], -dir[1], dir[2]}
	if math.Abs(float64(dir[0]))+math.Abs(float64(dir[1])) < 0.2 {
		return 1 // a frontal key has no dark side to set
	}
	kl, kd := lum(key, dir), lum(key, dark)
	rl, rd := lum(rest, dir), lum(rest, dark)
	den := ratio*rd - rl
	if den <= 1e-9 {
		return 1
	}
	f := (kl - ratio*kd) / den
	if math.IsNaN(f) {
		return 1
	}
	return math.Max(0.08, math.Min(1, f))
}

// makeFillNormals builds, once, the normals of fill mode, where the whole
// frame is the subject: a gentle dome h = -a*rho^2 over the frame (rho the
// distance from the centre) whose slope reaches 0.55 at the corners, so a
// light from one side brightens that side of the picture. There is no
// relief detail in fill mode (every edge of the picture would emboss).
func (r *Renderer) makeFillNormals() error {
	lw, lh := r.lw, r.lh
	n := lw * lh
	hd := math.Hypot(float64(lw), float64(lh)) / 2
	k := 0.55 / hd // slope per pixel of distance from the centre
	data := make([]float32, 3*n)
	cx, cy := float64(lw)/2, float64(lh)/2
	for y := 0; y < lh; y++ {
		for x := 0; x < lw; x++ {
			dx, dy := (float64(x)+0.5-cx)*k, (float64(y)+0.5-cy)*k
			inv := 1 / math.Sqrt(dx*dx+dy*dy+1)
			i := y*lw + x
			data[i], data[n+i], data[2*n+i] = float32(dx*inv), float32(-dy*inv), float32(inv)
		}
	}
	var err error
	if r.fillNormals, err = r.dev.NewImage(lw, lh, 3); err != nil {
		return fmt.Errorf("render: allocate: %w", err)
	}
	if err := r.dev.WritePixels(r.fillNormals, data); err != nil {
		return fmt.Errorf("render: fill normals: %w", err)
	}
	return nil
}

// Lighting returns a copy of the lighting parsed from the prompt, with the
// seed's jitter applied to the lights.
func (r *Renderer) Lighting() Lighting {
	l := r.light
	l.Lights = append([]Light(nil), l.Lights...)
	l.Palette = append([][3]float32(nil), l.Palette...)
	l.Backdrop = append([][3]float32(nil), l.Backdrop...)
	return l
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
	return r.frame(ctx, r.lowImages(src, alpha), r.deviceComp(src, alpha), func(bg, bgBlur, aBlur kernels.Image, wrap float32) error {
		if r.fill {
			return r.ops.GainComposite(dst, src, nil, r.gain, nil, nil, nil, 0, 1)
		}
		return r.ops.GainCompositeLook(dst, src, alpha, r.gain, bg, bgBlur, aBlur, r.compositeLook(), wrap, 1)
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
	return r.frame(ctx, r.lowImages(src, alpha), r.deviceComp(src, alpha), func(bg, bgBlur, aBlur kernels.Image, wrap float32) error {
		if r.fill {
			return r.ops.GainCompositeDownload(dst, src, nil, r.gain, nil, nil, nil, 0, 1)
		}
		return r.ops.GainCompositeLookDownload(dst, src, alpha, r.gain, bg, bgBlur, aBlur, r.compositeLook(), wrap, 1)
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
	if r.fill {
		alpha = nil
	}
	low := func() error {
		if err := r.ops.ResizeAreaFrame(r.srcLow, src); err != nil {
			return fmt.Errorf("render: resize source: %w", err)
		}
		if alpha != nil {
			if err := r.ops.ResizeAreaFrame(r.alphaLow, alpha); err != nil {
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
			return r.ops.GainCompositeLookFrame(dst, src, nil, nil, r.gain, nil, nil, nil, kernels.CompositeLook{}, 0, 1)
		}
		codes, err := r.bgHost(dst)
		if err != nil {
			return err
		}
		return r.ops.GainCompositeLookFrame(dst, src, alpha, codes, r.gain, bg, bgBlur, aBlur, r.compositeLook(), wrap, 1)
	})
}

// bgHost returns the background downloaded in dst's format, colour space
// and range, made on first use and kept for the job (the composite copies
// its codes where the frame is background only).
func (r *Renderer) bgHost(dst *frame.HostFrame) (*frame.HostFrame, error) {
	if c := r.bgCodes; c != nil && c.Format == dst.Format && c.ColorSpace == dst.ColorSpace && c.FullRange == dst.FullRange {
		return c, nil
	}
	if dst.Format != frame.YUV420P {
		return nil, nil // one image: nothing to reuse
	}
	c, err := frame.New(dst.Format, r.w, r.h)
	if err != nil {
		return nil, fmt.Errorf("render: background codes: %w", err)
	}
	c.ColorSpace, c.FullRange = dst.ColorSpace, dst.FullRange
	if err := r.dev.Download(c, r.bg); err != nil {
		return nil, fmt.Errorf("render: background codes: %w", err)
	}
	r.bgCodes = c
	return c, nil
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
		return r.ops.GainCompositeLook(dst, src, alpha, r.gain, r.bg, r.bgBlur, r.alphaBlur, r.compositeLook(), r.wrap, 1)
	}
}

// lowImages returns frame's first step for device images: their
// low-resolution copies.
func (r *Renderer) lowImages(src, alpha kernels.Image) func() error {
	return func() error {
		if err := r.ops.ResizeArea(r.srcLow, src); err != nil {
			return fmt.Errorf("render: resize source: %w", err)
		}
		if !r.fill {
			if err := r.ops.ResizeArea(r.alphaLow, alpha); err != nil {
				return fmt.Errorf("render: resize matte: %w", err)
			}
		}
		return nil
	}
}

// frame runs low (which makes the low-resolution copies srcLow and, but
// in fill mode, alphaLow), the low-resolution analysis of one frame, then
// finish, the fused full-resolution pass, with the matte, background,
// blurred background, blurred low-resolution matte and wrap strength to
// use. comp is the plate's first-frame composite (see matchGrain).
func (r *Renderer) frame(ctx context.Context, low func() error, comp func(dst, alphaDst kernels.Image) error,
	finish func(bg, bgBlur, aBlur kernels.Image, wrap float32) error) error {
	if r.closed {
		return errors.New("render: renderer is closed")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ops := r.ops
	var mask kernels.Image // subject weights at low resolution; nil = all
	if !r.fill {
		mask = r.alphaLow
	}
	step := func(name string, err error) error {
		if err != nil {
			return fmt.Errorf("render: %s: %w", name, err)
		}
		return nil
	}

	// 1. Low resolution copies.
	if err := low(); err != nil {
		return err
	}

	// 2. Pseudo-normals: inflated distance field, and the same plus the
	// relief of the relative high-pass luminance (luma / blur, whose
	// constant offset of 1 has no gradient).
	if err := step("luma", ops.Luma(r.luma, r.srcLow)); err != nil {
		return err
	}
	nSmooth, nDetail := r.fillNormals, r.fillNormals
	if !r.fill {
		if err := r.normals(step); err != nil {
			return err
		}
		nSmooth, nDetail = r.nSmooth, r.nDetail
	}

	// 3. Old shading: SH fit of the subject's luminance, smoothed in time.
	ata, atb, err := ops.SHNormalEquations(r.luma, nSmooth, mask)
	if err != nil {
		return step("shading fit", err)
	}
	meanY, weight := meanBasis(ata)
	relight := weight >= 1
	if relight {
		if x, ok := solveRidge(ata, atb, ridge); ok {
			if r.haveOld {
				for k := range x {
					x[k] = r.oldSH[k] + emaNew*(x[k]-r.oldSH[k])
				}
			}
			r.oldSH, r.haveOld = x, true
		}
		relight = r.haveOld
	}

	if r.nQ != nil {
		if err := r.keyOnSubject(step); err != nil {
			return err
		}
	}

	// 4. New lighting, scaled so that the subject's mean luminance is
	// kept (times the prompt's intensity).
	var coeffs [3]kernels.SH9
	var rimRel [3]float32 // the rim's irradiance over the subject's mean, per unit of rimW
	var oldMean float64
	var oldD [9]float64 // the old shading that the relight removes
	if relight {
		// oldTrust of the fitted shading plus the rest of its mean:
		// the subject's mean shading is kept.
		oldMean = shDot(r.oldSH, meanY)
		for k := range oldD {
			oldD[k] = oldTrust * r.oldSH[k]
		}
		oldD[0] += (1 - oldTrust) * oldMean / shC0
		var mNew [3]float64
		for c := 0; c < 3; c++ {
			mNew[c] = shDot(r.newSH[c], meanY)
		}
		lumNew := 0.2126*mNew[0] + 0.7152*mNew[1] + 0.0722*mNew[2]
		relight = oldMean > 1e-6 && lumNew > 1e-9 && !math.IsInf(oldMean, 0)
		e, err := r.exposure(mask)
		if err != nil {
			return step("exposure", err)
		}
		x := float64(r.light.Intensity) * e
		r.curX = x
		s := x * oldMean / lumNew
		m := r.relightMix
		for c := 0; c < 3; c++ {
			var v [9]float64
			for k := range v {
				v[k] = m*s*r.newSH[c][k] + (1-m)*x*oldD[k]
			}
			coeffs[c] = toSH9(v)
			// The new light's mean is x*oldMean = s*lumNew.
			rimRel[c] = float32(m * r.parts.rimCol[c] / lumNew)
		}
	}

	// 5. Relight gain, then harmonisation toward the background.
	if relight {
		if err := step("shading", ops.SHEval(r.eNew, nDetail, coeffs[:])); err != nil {
			return err
		}
		if err := step("shading", ops.SHEval(r.eOld, nSmooth, []kernels.SH9{toSH9(oldD)})); err != nil {
			return err
		}
		eps := float32(oldEpsFrac * oldMean)
		if !r.haveRim {
			if err := step("relight", ops.RatioRelight(r.relit, r.srcLow, r.eNew, r.eOld, nil, eps, maxGain)); err != nil {
				return err
			}
		} else {
			if err := step("relight", ops.RatioRelight(r.relit0, r.srcLow, r.eNew, r.eOld, nil, eps, maxGain)); err != nil {
				return err
			}
			if err := r.rimLight(step, rimRel); err != nil {
				return err
			}
		}
	} else if err := step("relight", ops.Copy(r.relit, r.srcLow)); err != nil {
		return err
	}
	// The harmonisation is a smooth colour change, so it is computed at
	// half the low resolution as a gain field (transferred / relit) and
	// upsampled: the lαβ conversions are the most expensive per-pixel
	// work of the frame.
	if err := step("harmonise resize", ops.ResizeArea(r.relitQ, r.relit)); err != nil {
		return err
	}
	var maskQ kernels.Image
	if !r.fill {
		maskQ = r.alphaQ // made by normals
	}
	from, err := ops.LabStats(r.relitQ, maskQ)
	if err != nil {
		return step("subject statistics", err)
	}
	if from.Weight >= 0.25 && finiteLab(from) {
		if r.haveLab {
			from = emaLab(r.fromLab, from, emaNew)
		}
		r.fromLab, r.haveLab = from, true
	}
	if r.haveLab && r.harmStrength > 0 {
		to := partialTarget(r.fromLab, r.bgLab, r.harmStrength)
		if relight && !r.fill {
			c, err := r.meteredExposure()
			if err != nil {
				return step("exposure", err)
			}
			// A shift of l by sqrt(3)*ln(c) scales L, M and S, so RGB, by c.
			to.Mean[0] += math.Sqrt(3) * math.Log(c)
		}
		if err := step("harmonise", ops.LabTransfer(r.harmQ, r.relitQ, nil, r.fromLab, r.blackTarget(to), 1)); err != nil {
			return err
		}
		if !r.fill {
			// Plate matching: the black level (plate.go).
			if err := step("plate black level", r.matchBlack(r.fromLab, to)); err != nil {
				return err
			}
		}
		if err := step("harmonise", ops.RatioRelight(r.ratioQ, r.onesQ, r.harmQ, r.relitQ, nil, gainEps, maxGain)); err != nil {
			return err
		}
		if err := step("harmonise", ops.ResizeBilinear(r.harmGain, r.ratioQ)); err != nil {
			return err
		}
		// gain = harmGain * relit / src.
		if err := step("gain", ops.RatioRelight(r.gain, r.harmGain, r.relit, r.srcLow, nil, gainEps, maxGain)); err != nil {
			return err
		}
	} else if err := step("gain", ops.RatioRelight(r.gain, r.ones3, r.relit, r.srcLow, nil, gainEps, maxGain)); err != nil {
		return err
	}

	// 6-7. Light-wrap matte and the fused full-resolution pass.
	if r.fill {
		return step("composite", finish(nil, nil, nil, 0))
	}
	// The wrap band is a wide blur: it runs on the half-resolution matte
	// (GainComposite samples it bilinearly).
	if err := step("wrap matte", ops.GaussianBlur(r.alphaBlur, r.alphaQ, r.wrapSigma)); err != nil {
		return err
	}
	if err := r.foregroundEstimates(step); err != nil {
		return err
	}
	if err := r.shadows(step); err != nil {
		return err
	}
	// Plate matching: the grain (plate.go).
	if err := r.matchGrain(step, comp); err != nil {
		return err
	}
	return step("composite", finish(r.bg, r.bgBlur, r.alphaBlur, r.wrap))
}

// normals builds the subject's pseudo-normals at low resolution: nSmooth
// from the inflated distance field of the matte (radius radiusPerMeanDist
// times the subject's mean interior distance, smoothed in time), nDetail
// the same plus the relief of the relative high-pass luminance (luma over
// its blur, whose constant offset of 1 has no gradient).
func (r *Renderer) normals(step func(string, error) error) error {
	ops := r.ops
	if err := step("detail blur", ops.GaussianBlur(r.lumaBlur, r.luma, detailSigma)); err != nil {
		return err
	}
	if err := step("detail", ops.RatioRelight(r.detail, r.ones1, r.luma, r.lumaBlur, nil, 1e-3, maxGain)); err != nil {
		return err
	}
	if err := step("distance", ops.DistanceTransform(r.dist, r.alphaLow, 0.5)); err != nil {
		return err
	}
	st, err := ops.MaskedStats(r.dist, r.alphaLow)
	if err != nil {
		return step("distance statistics", err)
	}
	rad := float32(radiusPerMeanDist * st.Mean[0])
	rad = clamp32(rad, 2, float32(max(r.lw, r.lh)))
	if r.radius > 0 {
		rad = r.radius + emaNew*(rad-r.radius)
	}
	r.radius = rad
	// The exact distance of a pixel-staircase boundary ripples along the
	// edge; a small blur removes the radial streaks it would leave in the
	// normals.
	if err := step("distance blur", ops.GaussianBlur(r.distSmooth, r.dist, r.distSigma)); err != nil {
		return err
	}
	// The coarse shape: a paraboloid over the subject's ellipse of
	// inertia, so that its whole left half faces left and its top faces
	// up, not only the few pixels at the silhouette (see shapeDome).
	if err := step("shape resize", ops.ResizeArea(r.alphaQ, r.alphaLow)); err != nil {
		return err
	}
	if err := step("shape resize", ops.ResizeArea(r.alphaE, r.alphaQ)); err != nil {
		return err
	}
	if err := r.shapeDome(step); err != nil {
		return err
	}
	// The old shading is fitted on the local normals only: at the scale
	// of the whole subject, luminance differences are mostly albedo
	// (dark trousers, a light shirt), which a fit on the coarse dome
	// would take for light and remove.
	if err := step("normals", ops.NormalsFromMatte(r.nSmooth, r.distSmooth, nil, rad, 0)); err != nil {
		return err
	}
	// The rims' band: the silhouette's own normals, from the unsmoothed
	// distance inflated over rimWidthPx only, so that a rim light is a
	// thin bright line on the edge and not the smooth normals' wide glow.
	if r.haveRim {
		if err := step("rim normals", ops.NormalsFromMatte(r.nRim, r.dist, nil, r.rimWidth, 0)); err != nil {
			return err
		}
	}
	// nDetail's height adds the relief and the dome (globalH, in pixels):
	// mixH = c*detail + (1-c)*globalH with c = detailStrength/(detailStrength+1),
	// scaled back by detailStrength+1.
	if err := step("normals", ops.Composite(r.mixH, r.detail, r.globalH, r.mixW)); err != nil {
		return err
	}
	return step("normals", ops.NormalsFromMatte(r.nDetail, r.distSmooth, r.mixH, rad, detailStrength+1))
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
func (r *Renderer) shapeDome(step func(string, error) error) error {
	a, err := r.dev.ReadPixels(r.alphaE)
	if err != nil {
		return step("shape", err)
	}
	ew, eh := r.alphaE.Width(), r.alphaE.Height()
	sx, sy := float64(r.lw)/float64(ew), float64(r.lh)/float64(eh)
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
		if r.haveShape {
			for i := range cur {
				cur[i] = r.shape[i] + emaNew*(cur[i]-r.shape[i])
			}
		}
		r.shape, r.haveShape = cur, true
	}
	if r.globalHost == nil {
		r.globalHost = make([]float32, r.lw*r.lh)
	}
	g := r.globalHost
	if !r.haveShape {
		clear(g)
		return step("shape", r.dev.WritePixels(r.globalH, g))
	}
	cx, cy, cxx, cxy, cyy := r.shape[0], r.shape[1], r.shape[2], r.shape[3], r.shape[4]
	tr, det := cxx+cyy, cxx*cyy-cxy*cxy
	disc := math.Sqrt(math.Max(tr*tr/4-det, 0))
	l1, l2 := tr/2+disc, math.Max(tr/2-disc, 0)
	th := 0.5 * math.Atan2(2*cxy, cxx-cyy)
	cs, sn := math.Cos(th), math.Sin(th)
	floor := 0.25 // pixels^2: the semi-axes are at least one pixel
	ka := r.shape[5] * domeSlope / 2 / (2 * math.Sqrt(math.Max(l1, floor)))
	kb := r.shape[5] * domeSlope / 2 / (2 * math.Sqrt(math.Max(l2, floor)))
	for y := 0; y < r.lh; y++ {
		dy := float64(y) + 0.5 - cy
		row := g[y*r.lw:][:r.lw]
		for x := range row {
			dx := float64(x) + 0.5 - cx
			u := dx*cs + dy*sn
			v := -dx*sn + dy*cs
			row[x] = float32(-(ka*u*u + kb*v*v))
		}
	}
	return step("shape", r.dev.WritePixels(r.globalH, g))
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
func (r *Renderer) keyOnSubject(step func(string, error) error) error {
	p := &r.parts
	if err := step("key on subject", r.ops.ResizeArea(r.nQ, r.nDetail)); err != nil {
		return err
	}
	nq, err := r.dev.ReadPixels(r.nQ)
	if err != nil {
		return step("key on subject", err)
	}
	aq, err := r.dev.ReadPixels(r.alphaE)
	if err != nil {
		return step("key on subject", err)
	}
	qw, qh := r.nQ.Width(), r.nQ.Height()
	n := qw * qh
	if !r.haveShape || len(nq) != 3*n || len(aq) != n {
		return nil
	}
	// Picture-plane direction of the key (x right, y up) and the centroid
	// in pixels of nQ (y down).
	lx, ly := float64(p.keyDir[0]), float64(p.keyDir[1])
	cx := r.shape[0] * float64(qw) / float64(r.lw)
	cy := r.shape[1] * float64(qh) / float64(r.lh)
	var mk, ma [9]float64
	var wk, wa float64
	for y := 0; y < qh; y++ {
		for x := 0; x < qw; x++ {
			i := y*qw + x
			w := float64(aq[i])
			if !(w > 0) {
				continue
			}
			d := normalize3([3]float32{nq[i], nq[n+i], nq[2*n+i]})
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
	f := p.fill
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
				f = math.Max(0.08, math.Min(p.fill, v))
			}
		}
	}
	if r.subjFill > 0 {
		f = r.subjFill + emaNew*(f-r.subjFill)
	}
	r.subjFill = f
	r.newSH = p.combine(f)
	return nil
}

// rimLight adds the rims to relit0 into relit: the rims' shape rimW
// (rimIrradiance's quadratic, 1 channel) on the silhouette band's normals,
// times their irradiance relative to the subject's mean new light (rel,
// per channel), multiplies the relit subject: relit = relit0 *
// (1 + rimW*rel). The light a rim adds is reflected by the subject's own
// colour, like the rest, and it takes one 1-channel evaluation.
func (r *Renderer) rimLight(step func(string, error) error, rel [3]float32) error {
	ops := r.ops
	if err := step("rim shading", ops.SHEval(r.rimW, r.nRim, []kernels.SH9{toSH9(r.parts.rimPoly)})); err != nil {
		return err
	}
	if err := step("rim shading", ops.Fill(r.rimGain, []float32{1 + rel[0], 1 + rel[1], 1 + rel[2]})); err != nil {
		return err
	}
	return step("rim shading", ops.RatioRelight(r.relit, r.relit0, r.rimGain, r.ones3, r.rimW, gainEps, 1e6))
}

// meteredExposure returns the factor on the relit subject (relitQ) that
// makes its mean luminance over the matte the source's times the exposure
// of this frame (curX): the exposure is metered on the relit subject, so
// that its mean does not follow where a strong key's lit half happens to
// fall on light or dark parts of the subject from frame to frame (the
// shading is normalised on the mean of the normals, not of the colours).
// Between 0.5 and 2; 1 when either mean is unknown.
func (r *Renderer) meteredExposure() (float64, error) {
	if !(r.srcSubLum > 1e-6) || !(r.curX > 0) {
		return 1, nil
	}
	if err := r.ops.Luma(r.lumQ, r.relitQ); err != nil {
		return 1, err
	}
	st, err := r.ops.MaskedStats(r.lumQ, r.alphaQ)
	if err != nil {
		return 1, err
	}
	if !(st.Mean[0] > 1e-6) || st.Weight < 0.25 || math.IsInf(st.Mean[0], 0) {
		return 1, nil
	}
	return math.Max(0.5, math.Min(2, r.curX*r.srcSubLum/st.Mean[0])), nil
}

// exposure returns the factor on the subject's light that follows the
// scene: the new background's mean luminance over the old background's
// (the source outside the matte, smoothed in time), so that the subject
// keeps the relation to its surroundings that the source had: a night
// stays a night and a bright beach is not dim. Between 1/16 and maxGain;
// 1 in fill mode or when too little of the old background is visible.
func (r *Renderer) exposure(mask kernels.Image) (float64, error) {
	if r.fill || mask == nil || !(r.bgNewLum > 0) {
		return 1, nil
	}
	all, err := r.ops.MaskedStats(r.luma, nil)
	if err != nil {
		return 1, err
	}
	sub, err := r.ops.MaskedStats(r.luma, mask)
	if err != nil {
		return 1, err
	}
	r.srcSubLum = sub.Mean[0]
	if bw := all.Weight - sub.Weight; bw >= 0.05*all.Weight {
		old := (all.Mean[0]*all.Weight - sub.Mean[0]*sub.Weight) / bw
		if old > 1e-4 && !math.IsInf(old, 0) {
			if r.bgOldLum > 0 {
				old = r.bgOldLum + emaNew*(old-r.bgOldLum)
			}
			r.bgOldLum = old
		}
	}
	if !(r.bgOldLum > 0) {
		return 1, nil
	}
	x := math.Max(1.0/16, math.Min(maxGain, r.bgNewLum/r.bgOldLum))
	// Plate matching: no clipping on a bright plate (plate.go).
	return r.highlightCap(x, mask)
}

// compositeLook is the fused composite's foreground estimates and shadow.
func (r *Renderer) compositeLook() kernels.CompositeLook {
	look := kernels.CompositeLook{FgLow: r.look.fm, BgOldLow: r.look.bm}
	if r.look.haveShadow {
		look.ShadowLow = r.look.shadow
	}
	r.grainLook(&look)
	return look
}

func (r *Renderer) checkShapes(dst, src, alpha kernels.Image) error {
	is := func(img kernels.Image, c int) bool {
		return img != nil && img.Width() == r.w && img.Height() == r.h && img.Channels() == c
	}
	if !is(dst, 3) || !is(src, 3) {
		return fmt.Errorf("render: frame: dst and src must be %dx%d with 3 channels: %w", r.w, r.h, kernels.ErrShape)
	}
	if !r.fill && !is(alpha, 1) {
		return fmt.Errorf("render: frame: alpha must be %dx%d with 1 channel: %w", r.w, r.h, kernels.ErrShape)
	}
	return nil
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

// Close frees the renderer's device images. It is idempotent and always
// returns nil.
func (r *Renderer) Close() error {
	if r == nil || r.closed {
		return nil
	}
	r.closed = true
	r.freeLook()
	r.freePlate()
	for _, img := range []*kernels.Image{
		&r.bg, &r.bgBlur, &r.fillNormals, &r.srcLow, &r.alphaLow, &r.luma, &r.lumaBlur, &r.detail,
		&r.dist, &r.distSmooth, &r.nSmooth, &r.nDetail, &r.eNew, &r.eOld, &r.relit, &r.gain,
		&r.relitQ, &r.alphaQ, &r.harmQ, &r.ratioQ, &r.onesQ, &r.harmGain,
		&r.ones1, &r.ones3, &r.alphaBlur, &r.alphaE, &r.globalH, &r.nRim, &r.nQ, &r.lumQ, &r.rimW, &r.rimGain, &r.relit0, &r.mixH, &r.mixW,
	} {
		if *img != nil {
			r.dev.Free(*img)
			*img = nil
		}
	}
	return nil
}
