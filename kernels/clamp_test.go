package kernels

import (
	"math"
	"testing"
)

// TestClamp: values below lo, above hi, at both edges, NaN and ±Inf; in
// place; lo == hi; bad bounds and shapes refused.
func TestClamp(t *testing.T) {
	d := NewCPU(1)
	defer d.Close()
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	in := []float32{-1, 0, 0.25, 1, 1.0000001, 7, nan, inf, -inf, 0.9999999, 0.5, -0}
	want := []float32{0, 0, 0.25, 1, 1, 1, 0, 1, 0, 0.9999999, 0.5, 0}
	for _, sz := range [][2]int{{4, 1}, {1, 4}, {2, 2}} {
		src := img(t, d, sz[0], sz[1], 3, in)
		dst := img(t, d, sz[0], sz[1], 3, nil)
		if err := d.Clamp(dst, src, 0, 1); err != nil {
			t.Fatal(err)
		}
		got := pixels(t, d, dst)
		for i := range got {
			if got[i] != want[i] || math.Signbit(float64(got[i])) != math.Signbit(float64(want[i])) {
				t.Errorf("%v: [%d] = %v from %v, want %v", sz, i, got[i], in[i], want[i])
			}
		}
		if err := d.Clamp(src, src, 0, 1); err != nil {
			t.Fatal(err)
		}
		if p := pixels(t, d, src); !equal32(p, got) {
			t.Errorf("%v: in place %v, want %v", sz, p, got)
		}
	}
	src := img(t, d, 4, 1, 3, in)
	if err := d.Clamp(src, src, 0.5, 0.5); err != nil {
		t.Fatal(err)
	}
	for i, v := range pixels(t, d, src) {
		if v != 0.5 {
			t.Fatalf("lo == hi: [%d] = %v", i, v)
		}
	}
	one := img(t, d, 4, 1, 1, nil)
	for name, err := range map[string]error{
		"lo > hi":  d.Clamp(src, src, 1, 0.5),
		"NaN lo":   d.Clamp(src, src, nan, 1),
		"inf hi":   d.Clamp(src, src, 0, inf),
		"channels": d.Clamp(one, src, 0, 1),
		"nil":      d.Clamp(nil, src, 0, 1),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
