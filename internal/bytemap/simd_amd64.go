//go:build goexperiment.simd && amd64

package bytemap

import (
	"simd/archsimd"
	"unsafe"
)

// vbmiOn reports whether the CPU has AVX-512 with VBMI (the byte permutes
// and byte compares of mapSIMD). It is set once at package initialisation;
// tests turn it off to run the byte loop.
var vbmiOn = archsimd.X86.AVX512() && archsimd.X86.AVX512VBMI()

// mapSIMD is Map's vector loop over the first multiple of 64 bytes: the
// table as four 64-byte vectors, entries 0-127 and 128-255 each picked by
// one VPERMI2B on the code's low seven bits, the code's top bit choosing
// between them. It returns how many bytes it did (0 without VBMI).
func mapSIMD(o, s []byte, tab *[256]byte) int {
	if !vbmiOn || len(o) < 64 {
		return 0
	}
	n := len(o) &^ 63
	s = s[:len(o)]
	t0 := archsimd.LoadUint8x64((*[64]uint8)(tab[0:64]))
	t1 := archsimd.LoadUint8x64((*[64]uint8)(tab[64:128]))
	t2 := archsimd.LoadUint8x64((*[64]uint8)(tab[128:192]))
	t3 := archsimd.LoadUint8x64((*[64]uint8)(tab[192:256]))
	H := archsimd.BroadcastUint8x64(128)
	po, ps := unsafe.Pointer(unsafe.SliceData(o)), unsafe.Pointer(unsafe.SliceData(s))
	for i := uintptr(0); i < uintptr(n); i += 64 {
		c := archsimd.LoadUint8x64((*[64]uint8)(unsafe.Add(ps, i)))
		lo, hi := t0.ConcatPermute(t1, c), t2.ConcatPermute(t3, c)
		lo.Merge(hi, c.Less(H)).Store((*[64]uint8)(unsafe.Add(po, i)))
	}
	archsimd.ClearAVXUpperBits() // no AVX-SSE transition penalty in the scalar code after
	return n
}
