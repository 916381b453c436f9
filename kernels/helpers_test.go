package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// sizes used by most table tests: odd, degenerate and multi-band shapes.
var testSizes = [][2]int{{1, 1}, {7, 5}, {13, 1}, {1, 9}, {16, 9}, {33, 20}}

func sizeName(s [2]int) string { return fmt.Sprintf("%dx%d", s[0], s[1]) }

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// randVals returns n values uniform in [lo, hi).
func randVals(rng *rand.Rand, n int, lo, hi float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(lo + (hi-lo)*rng.Float64())
	}
	return v
}

// randAlpha returns n matte values with many exact 0s and 1s.
func randAlpha(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		switch rng.IntN(4) {
		case 0:
			v[i] = 0
		case 1:
			v[i] = 1
		default:
			v[i] = rng.Float32()
		}
	}
	return v
}

// img allocates an image on d and fills it with data (nil = zeros).
func img(t testing.TB, d *CPU, w, h, c int, data []float32) Image {
	t.Helper()
	m, err := d.NewImage(w, h, c)
	if err != nil {
		t.Fatalf("NewImage(%d,%d,%d): %v", w, h, c, err)
	}
	if data != nil {
		if err := d.WritePixels(m, data); err != nil {
			t.Fatalf("WritePixels: %v", err)
		}
	}
	return m
}

func pixels(t testing.TB, d *CPU, m Image) []float32 {
	t.Helper()
	p, err := d.ReadPixels(m)
	if err != nil {
		t.Fatalf("ReadPixels: %v", err)
	}
	return p
}

// at returns sample (x, y, c) of planar data of a w x h image.
func at(p []float32, w, h, x, y, c int) float64 {
	return float64(p[c*w*h+y*w+x])
}

func clampi(v, lo, hi int) int { return max(lo, min(v, hi)) }

// closeAll compares got with want (same length) within an absolute plus
// relative tolerance and reports the first few differences.
func closeAll(t testing.TB, what string, got []float32, want []float64, abs, rel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	worst := 0.0
	for i := range got {
		g := float64(got[i])
		diff := math.Abs(g - want[i])
		if math.IsNaN(g) != math.IsNaN(want[i]) || diff > abs+rel*math.Abs(want[i]) {
			if bad < 5 {
				t.Errorf("%s[%d] = %v, want %v (diff %g)", what, i, g, want[i], diff)
			}
			bad++
		}
		worst = max(worst, diff)
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values off (worst %g)", what, bad, len(got), worst)
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// refEOTF and refOETF are the sRGB transfer functions, straight from the
// standard.
func refEOTF(v float64) float64 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

func refOETF(l float64) float64 {
	l = math.Max(0, math.Min(1, l))
	if l <= 0.0031308 {
		return 12.92 * l
	}
	return 1.055*math.Pow(l, 1/2.4) - 0.055
}

// refSH is the real SH basis, straight from the constants.
func refSH(x, y, z float64) [9]float64 {
	return [9]float64{
		0.282095,
		0.488603 * y, 0.488603 * z, 0.488603 * x,
		1.092548 * x * y, 1.092548 * y * z, 0.315392 * (3*z*z - 1), 1.092548 * x * z, 0.546274 * (x*x - y*y),
	}
}

// randNormals returns w*h random unit normals, planar (3 planes).
func randNormals(rng *rand.Rand, n int, hemisphere bool) []float32 {
	v := make([]float32, 3*n)
	for i := range n {
		for {
			x, y, z := 2*rng.Float64()-1, 2*rng.Float64()-1, 2*rng.Float64()-1
			if hemisphere {
				z = math.Abs(z)
			}
			r := math.Sqrt(x*x + y*y + z*z)
			if r < 0.1 || r > 1 {
				continue
			}
			v[i], v[n+i], v[2*n+i] = float32(x/r), float32(y/r), float32(z/r)
			break
		}
	}
	return v
}

// lookInputs are random inputs of the composite's look for a w x h frame:
// a 7 x 4 gain, foreground and old background, a shadow with rows and
// columns of none, grain, the plate and its blur, a low alpha blur.
type lookInputs struct {
	gain, fm, bm, sh, grain, bg, bgBlur, abLow Image
}

func newLookInputs(t *testing.T, d *CPU, rng *rand.Rand, w, h int) lookInputs {
	t.Helper()
	n := w * h
	var in lookInputs
	in.gain = img(t, d, 7, 4, 3, randVals(rng, 3*28, 0, 2))
	in.fm = img(t, d, 7, 4, 3, randVals(rng, 3*28, 0, 1))
	in.bm = img(t, d, 7, 4, 3, randVals(rng, 3*28, 0, 1))
	shv := randVals(rng, 28, 0, 0.7)
	for i := range shv {
		if i < 14 || i%7 < 2 { // rows and columns with no shadow
			shv[i] = 0
		}
	}
	in.sh = img(t, d, 7, 4, 1, shv)
	in.grain = img(t, d, 13, 5, 1, randVals(rng, 65, -3, 3))
	in.bg = img(t, d, w, h, 3, randVals(rng, 3*n, 0, 1.05))
	in.bgBlur = img(t, d, w, h, 3, randVals(rng, 3*n, 0, 1))
	in.abLow = img(t, d, 5, 3, 1, randAlpha(rng, 15))
	return in
}
