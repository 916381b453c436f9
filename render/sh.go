package render

import (
	"math"

	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render/colour"
)

// Real SH basis constants (bands 0..2), in the kernels' order Y00, Y1-1,
// Y10, Y11, Y2-2, Y2-1, Y20, Y21, Y22.
const (
	shC0 = 0.282094791773878 // 1/(2 sqrt(pi))
	shC1 = 0.488602511902920 // sqrt(3/(4 pi))
	shC2 = 1.092548430592079 // sqrt(15/(4 pi))
	shC3 = 0.315391565252520 // sqrt(5/(16 pi))
	shC4 = 0.546274215296039 // sqrt(15/(16 pi))
)

// shBand is the band l of each coefficient.
var shBand = [9]int{0, 1, 1, 1, 2, 2, 2, 2, 2}

// cosineLobe is the clamped-cosine kernel's convolution factor per band
// (Ramamoorthi and Hanrahan): irradiance E_lm = Â_l L_lm.
var cosineLobe = [3]float64{math.Pi, 2 * math.Pi / 3, math.Pi / 4}

// shBasis evaluates the 9 basis functions at unit direction d.
func shBasis(d [3]float32) [9]float64 {
	x, y, z := float64(d[0]), float64(d[1]), float64(d[2])
	return [9]float64{
		shC0,
		shC1 * y,
		shC1 * z,
		shC1 * x,
		shC2 * x * y,
		shC2 * y * z,
		shC3 * (3*z*z - 1),
		shC2 * x * z,
		shC4 * (x*x - y*y),
	}
}

// lightIrradiance adds to e (per channel, irradiance SH) a distant light
// of radiance col from unit direction dir: E_lm += col * Â_l' * Y_lm(dir).
// Hardness sharpens the lobe: bands 1 and 2 are scaled by
// 1+0.5(h-0.5) and 1+1.2(h-0.5), which steepens the falloff toward the
// terminator (a hard light) or flattens it (a soft, wrapping one) while
// keeping the mean irradiance (band 0) unchanged.
func lightIrradiance(e *[3][9]float64, dir, col [3]float32, hardness float32) {
	y := shBasis(dir)
	h := float64(colour.Clamp32(hardness, 0, 1)) - 0.5
	band := [3]float64{cosineLobe[0], cosineLobe[1] * (1 + 0.5*h), cosineLobe[2] * (1 + 1.2*h)}
	for c := 0; c < 3; c++ {
		for k := 0; k < 9; k++ {
			e[c][k] += float64(col[c]) * band[shBand[k]] * y[k]
		}
	}
}

// ambientIrradiance adds light from every direction whose irradiance is
// col on every normal (all in band 0).
func ambientIrradiance(e *[3][9]float64, col [3]float32) {
	for c := 0; c < 3; c++ {
		e[c][0] += float64(col[c]) / shC0
	}
}

// shDot is sum_k a_k b_k.
func shDot(a, b [9]float64) float64 {
	var s float64
	for k := range a {
		s += a[k] * b[k]
	}
	return s
}

// solveRidge solves (A + lambda I) x = b for the symmetric positive
// semi-definite 9x9 A by Cholesky decomposition, with lambda = rel *
// trace(A)/9 (plus a tiny absolute floor). It reports false when the
// system is empty or not finite.
func solveRidge(a [81]float64, b [9]float64, rel float64) ([9]float64, bool) {
	var tr float64
	for i := 0; i < 9; i++ {
		tr += a[i*9+i]
	}
	if !(tr > 1e-12) || math.IsInf(tr, 0) {
		return [9]float64{}, false
	}
	lambda := rel*tr/9 + 1e-12
	for i := 0; i < 9; i++ {
		a[i*9+i] += lambda
	}
	// Cholesky: A = L L^T, L stored in the lower triangle of a.
	for j := 0; j < 9; j++ {
		s := a[j*9+j]
		for k := 0; k < j; k++ {
			s -= a[j*9+k] * a[j*9+k]
		}
		if !(s > 0) {
			return [9]float64{}, false
		}
		d := math.Sqrt(s)
		a[j*9+j] = d
		for i := j + 1; i < 9; i++ {
			t := a[i*9+j]
			for k := 0; k < j; k++ {
				t -= a[i*9+k] * a[j*9+k]
			}
			a[i*9+j] = t / d
		}
	}
	var y, x [9]float64
	for i := 0; i < 9; i++ {
		t := b[i]
		for k := 0; k < i; k++ {
			t -= a[i*9+k] * y[k]
		}
		y[i] = t / a[i*9+i]
	}
	for i := 8; i >= 0; i-- {
		t := y[i]
		for k := i + 1; k < 9; k++ {
			t -= a[k*9+i] * x[k]
		}
		x[i] = t / a[i*9+i]
	}
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return [9]float64{}, false
		}
	}
	return x, true
}

// meanBasis returns the mask-weighted mean of each basis function over the
// pixels of a normal-equation system and the total weight: the first row
// of A is sum w*Y0*Y_k with Y0 constant.
func meanBasis(a [81]float64) ([9]float64, float64) {
	w := a[0] / (shC0 * shC0)
	var m [9]float64
	if !(w > 0) {
		return m, 0
	}
	for k := 0; k < 9; k++ {
		m[k] = a[k] / (shC0 * w)
	}
	return m, w
}

func toSH9(c [9]float64) kernels.SH9 {
	var s kernels.SH9
	for k := range c {
		s[k] = float32(c[k])
	}
	return s
}

// rimIrradiance adds to e the light of a rim (back) light of colour col
// from unit direction dir, as seen on the subject's silhouette: the matte's
// normals turn away from the camera toward the silhouette, and a light from
// behind grazes exactly those. Its shading is the quadratic
//
//	rim(n) = ((1 - n_z^2) + k (1 - n_z) (n_x l_x + n_y l_y)) / (1 + k)
//
// with (l_x, l_y) the light's unit direction in the picture plane and k
// half its share of the direction (0 for a light straight behind): the
// squared sine of the angle to the view axis, bright all round the
// silhouette, brighter on the light's side (the direction moves the rim's
// light round the silhouette without dimming it on average; never negative for k <= 1/2,
// as sin >= 1 - cos there), nothing where the surface faces the camera. A
// quadratic in n is exact in 9 SH coefficients (z^2 = 1/3 + Y20/(3 C3)),
// so SHEval renders it with no new op. The renderer evaluates it on the
// silhouette band's own normals (see Renderer.normals), not on the
// subject's smooth ones.
func rimIrradiance(e *[3][9]float64, dir, col [3]float32) {
	p := rimShape(dir)
	for c := 0; c < 3; c++ {
		for i := range p {
			e[c][i] += float64(col[c]) * p[i]
		}
	}
}

// rimBandShape returns the SH coefficients of the rims' shape on the
// silhouette band (Renderer's keyStage.rimLight, with its colour apart):
//
//	band(n) = rimPeak (n_x l_x + n_y l_y)
//
// with (l_x, l_y) the light's unit direction in the picture plane: the
// normals turned away from the camera (their picture-plane part is the
// sine of their angle to the view axis) toward the light's side, largest
// on the silhouette where it faces the light, 0 where the surface faces
// the camera (the band's normals are (0, 0, 1) past its width). It is
// linear and signed (negative on the far side); the renderer clamps it at
// 0 after SHEval, so the rim lights only the light's side. A light
// straight behind (no direction in the picture plane) lights the whole
// silhouette: rimPeak (1 - n_z^2).
func rimBandShape(dir [3]float32) [9]float64 {
	lx, ly := float64(dir[0]), float64(dir[1])
	var p [9]float64
	h := math.Hypot(lx, ly)
	if h <= 1e-6 {
		p[0] = rimPeak * (2.0 / 3) / shC0
		p[6] = -rimPeak / (3 * shC3)
		return p
	}
	p[3] = rimPeak * lx / h / shC1
	p[1] = rimPeak * ly / h / shC1
	return p
}

// rimShape returns the SH coefficients of rimIrradiance's quadratic for a
// rim light from unit direction dir (colour 1).
func rimShape(dir [3]float32) [9]float64 {
	lx, ly := float64(dir[0]), float64(dir[1])
	k, lxu, lyu := 0.0, 0.0, 0.0
	if h := math.Hypot(lx, ly); h > 1e-6 {
		k = 0.5 * math.Min(1, h)
		lxu, lyu = lx/h, ly/h
	}
	var p [9]float64
	// 1 - z^2 = 2/3 - Y20/(3 C3).
	p[0] = (2.0 / 3) / shC0
	p[6] = -1 / (3 * shC3)
	// k (1 - z)(x lx + y ly) = k(lx x + ly y) - k(lx xz + ly yz).
	p[3] += k * lxu / shC1
	p[1] += k * lyu / shC1
	p[7] -= k * lxu / shC2
	p[5] -= k * lyu / shC2
	return p
}
