package render

import (
	"math"
	"math/rand/v2"

	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render/colour"
	"github.com/vfxrender/vfx/render/prompt"
)

// Tuning (distances in pixels at the working resolution).
const (
	// envFront is the radiance of the mirrored front hemisphere relative
	// to the background behind the subject.
	envFront = 0.6
	// envChroma keeps this much of the environment's colour in the
	// lighting (the rest is its luminance): a red wall tints, not floods.
	envChroma = 0.4
	// rimBoost is a rim light's strength on the silhouette relative to
	// its colour: rims are set a stop and a half above the key.
	rimBoost = 3
)

// lightPlan is the look's first stage, a per-job constant: the lighting
// parsed from the prompt (its lights jittered by the seed) and the target
// irradiance in parts (lightingParts), from which the key stage takes the
// new light, the rims' term and how much of the old shading to replace.
type lightPlan struct {
	light prompt.Lighting
	parts lightParts
	// newSH is the target irradiance before exposure normalisation with
	// the fill side at parts.fill; rimSH the rims' silhouette term, on
	// the band's normals.
	newSH, rimSH [3][9]float64
	haveRim      bool
	// relightMix is how much of the new lighting replaces the old.
	relightMix float64
	// hasKeyDir: a key off the view axis, whose ratio the key stage
	// meters on the subject.
	hasKeyDir bool
}

// newLightPlan parses the prompt and jitters its lights from rng (the
// job's first random draws).
func newLightPlan(text string, rng *rand.Rand) *lightPlan {
	p := &lightPlan{light: prompt.Parse(text)}
	jitterLights(p.light.Lights, rng)
	return p
}

// setEnvironment sets the target lighting from the environment's SH
// radiance envL (hasRef: it is a reference image; fill: the whole frame is
// the subject, so the rims' term is evaluated on the frame's dome with the
// rest).
func (p *lightPlan) setEnvironment(envL [3]kernels.SH9, hasRef, fill bool) {
	p.parts = lightingParts(&p.light, envL, hasRef)
	p.newSH, p.rimSH = p.parts.combine(p.parts.fill), p.parts.rim
	for _, lt := range p.light.Lights {
		p.haveRim = p.haveRim || lt.Role == prompt.RoleRim
	}
	if fill {
		for c := range p.newSH {
			for k := range p.newSH[c] {
				p.newSH[c][k] += p.rimSH[c][k]
			}
		}
		p.haveRim = false
	}
	kd := p.parts.keyDir
	p.hasKeyDir = p.parts.haveKey && !fill && math.Abs(float64(kd[0]))+math.Abs(float64(kd[1])) >= 0.2
	// The fitted old shading is a guess from a matte: explicit prompt
	// lights replace it (the user asked for them), a reference or a
	// scene's default lights most of it, nothing but ambient light half.
	switch {
	case p.light.Explicit:
		p.relightMix = 1
	case hasRef || len(p.light.Lights) > 0:
		p.relightMix = 0.7
	default:
		p.relightMix = 0.5
	}
}

// jitterLights perturbs each light's direction (about 3 degrees) and
// colour (about 2 percent) from the seed.
func jitterLights(ls []prompt.Light, rng *rand.Rand) {
	for i := range ls {
		d := ls[i].Dir
		for k := range d {
			d[k] += float32(rng.Float64()-0.5) * 0.1
		}
		ls[i].Dir = colour.Normalize3(d)
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
func lightingParts(l *prompt.Lighting, envL [3]kernels.SH9, hasRef bool) (p lightParts) {
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
		case lt.Role == prompt.RoleKey && !haveKey:
			lightIrradiance(&key, lt.Dir, lt.Color, lt.Hardness)
			keyDir, haveKey = lt.Dir, true
		case lt.Role == prompt.RoleRim:
			lightIrradiance(&key, lt.Dir, lt.Color, lt.Hardness)
			col := colour.Scale3(lt.Color, rimBoost)
			rimIrradiance(&rim, lt.Dir, col)
			sh, y := rimBandShape(lt.Dir), float64(colour.Luminance(col))
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
		amb = colour.Scale3(amb, 0.35)
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
func KeyFillRatio(l *prompt.Lighting) float64 {
	k := 3.0
	for _, lt := range l.Lights {
		if lt.Role == prompt.RoleKey {
			k *= 1 + float64(colour.Clamp32(lt.Hardness, 0, 1)) - 0.5
			k *= math.Max(0.5, math.Min(1.5, float64(colour.Luminance(lt.Color))))
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
		y := shBasis(colour.Normalize3(d))
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

// Lighting returns a copy of the lighting parsed from the prompt, with the
// seed's jitter applied to the lights.
func (r *Renderer) Lighting() prompt.Lighting {
	l := r.plan.light
	l.Lights = append([]prompt.Light(nil), l.Lights...)
	l.Palette = append([][3]float32(nil), l.Palette...)
	l.Backdrop = append([][3]float32(nil), l.Backdrop...)
	return l
}
