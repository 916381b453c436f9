package resample

import (
	"slices"
	"testing"
)

func TestBilinear(t *testing.T) {
	// The same size is the plane as it is.
	src := []float32{0, 1, 2, 3, 4, 5}
	dst := make([]float32, 6)
	Bilinear(dst, 3, 2, src, 3, 2)
	if !slices.Equal(dst, src) {
		t.Errorf("same size: %v, want %v", dst, src)
	}
	// Shrinking 4x averages 2x2 boxes twice: every source pixel counts,
	// so a 1-pixel checkerboard becomes its mean.
	chk := make([]float32, 8*8)
	for i := range chk {
		chk[i] = float32((i/8 + i%8) % 2)
	}
	out := make([]float32, 2*2)
	Bilinear(out, 2, 2, chk, 8, 8)
	for _, v := range out {
		if v != 0.5 {
			t.Fatalf("checkerboard shrunk 4x: %v, want 0.5 everywhere", out)
		}
	}
	// Enlarging 2x interpolates between pixel centres, clamped at the
	// edges: 0, 1 becomes 0, 0.25, 0.75, 1.
	up := make([]float32, 4)
	Bilinear(up, 4, 1, []float32{0, 1}, 2, 1)
	if want := []float32{0, 0.25, 0.75, 1}; !slices.Equal(up, want) {
		t.Errorf("enlarged 2x: %v, want %v", up, want)
	}
}
