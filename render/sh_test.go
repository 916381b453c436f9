package render

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vfxrender/vfx/render/colour"
)

func TestSolveRidge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	want := [9]float64{0.5, 0.1, 0.3, -0.2, 0.05, -0.04, 0.02, 0.03, -0.01}
	var ata [81]float64
	var atb [9]float64
	for i := 0; i < 2000; i++ {
		d := colour.Normalize3([3]float32{float32(rng.NormFloat64()), float32(rng.NormFloat64()), float32(math.Abs(rng.NormFloat64()))})
		y := shBasis(d)
		s := shDot(want, y)
		for a := 0; a < 9; a++ {
			atb[a] += y[a] * s
			for b := 0; b < 9; b++ {
				ata[a*9+b] += y[a] * y[b]
			}
		}
	}
	got, ok := solveRidge(ata, atb, 1e-6)
	if !ok {
		t.Fatal("solve failed")
	}
	for k := range got {
		if math.Abs(got[k]-want[k]) > 1e-3 {
			t.Fatalf("coefficient %d = %v, want %v", k, got[k], want[k])
		}
	}
	if _, ok := solveRidge([81]float64{}, [9]float64{}, 1e-3); ok {
		t.Fatal("empty system solved")
	}
	// A single normal (flat matte) is singular; the ridge keeps it finite.
	y := shBasis([3]float32{0, 0, 1})
	for a := 0; a < 9; a++ {
		atb[a] = 100 * y[a] * 0.3
		for b := 0; b < 9; b++ {
			ata[a*9+b] = 100 * y[a] * y[b]
		}
	}
	x, ok := solveRidge(ata, atb, 1e-3)
	if !ok || math.Abs(shDot(x, y)-0.3) > 0.01 {
		t.Fatalf("flat fit: ok %v value %v", ok, shDot(x, y))
	}
	m, w := meanBasis(ata)
	if math.Abs(w-100) > 1e-9 || math.Abs(m[2]-y[2]) > 1e-9 {
		t.Fatalf("meanBasis: %v %v", m, w)
	}
}

func TestLightIrradiance(t *testing.T) {
	var e [3][9]float64
	dir := colour.Normalize3([3]float32{-1, 0.2, 0.5})
	lightIrradiance(&e, dir, [3]float32{1, 0.5, 0.25}, 0.5)
	at := func(d [3]float32, c int) float64 { return shDot(e[c], shBasis(d)) }
	// Facing the light: about the light's colour (the order-2 SH of the
	// clamped cosine peaks at 1.0625).
	if v := at(dir, 0); math.Abs(v-1.0625) > 1e-3 {
		t.Fatalf("irradiance toward the light %v", v)
	}
	if v := at(dir, 2); math.Abs(v-0.25*1.0625) > 1e-3 {
		t.Fatalf("blue irradiance %v", v)
	}
	back := [3]float32{-dir[0], -dir[1], -dir[2]}
	if v := at(back, 0); math.Abs(v) > 0.1 {
		t.Fatalf("irradiance away from the light %v", v)
	}
	// Hard lights fall off faster toward the terminator.
	side := colour.Normalize3([3]float32{0, 0.2, 1})
	var soft, hard [3][9]float64
	lightIrradiance(&soft, dir, [3]float32{1, 1, 1}, 0)
	lightIrradiance(&hard, dir, [3]float32{1, 1, 1}, 1)
	rs := shDot(soft[0], shBasis(dir)) / shDot(soft[0], shBasis(side))
	rh := shDot(hard[0], shBasis(dir)) / shDot(hard[0], shBasis(side))
	if !(rh > rs) {
		t.Fatalf("hard contrast %v <= soft %v", rh, rs)
	}
	var a [3][9]float64
	ambientIrradiance(&a, [3]float32{0.3, 0.2, 0.1})
	for _, d := range [][3]float32{{0, 0, 1}, {1, 0, 0}, {0, -1, 0}} {
		if v := shDot(a[1], shBasis(d)); math.Abs(v-0.2) > 1e-6 {
			t.Fatalf("ambient irradiance %v", v)
		}
	}
}
