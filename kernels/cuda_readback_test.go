//go:build cuda

package kernels

import "testing"

// ReadPixelsTo's row of the CUDA-against-CPU table: the values read back
// into a buffer one value short (a new slice) and then into a larger one
// (reused), bit-identical to the CPU's.
func init() {
	opCases = append(opCases, opCase{"ReadPixelsTo", 0, func(t testing.TB, d Device, in *opInputs) []float64 {
		m := put(t, d, in.w, in.h, in.rgb)
		a, err := d.ReadPixelsTo(make([]float32, 0, len(in.rgb)-1), m)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]float32, len(in.rgb)+7)
		b, err := d.ReadPixelsTo(buf, m)
		if err != nil {
			t.Fatal(err)
		}
		if &b[0] != &buf[0] {
			t.Error("ReadPixelsTo did not reuse a large enough buffer")
		}
		out := make([]float64, 0, len(a)+len(b))
		for _, v := range a {
			out = append(out, float64(v))
		}
		for _, v := range b {
			out = append(out, float64(v))
		}
		return out
	}})
}
