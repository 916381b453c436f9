package codec

import (
	"strings"

	"golang.org/x/sys/cpu"
)

// x264NoAVX512 is libx264's "asm" value for what its CPU detection finds
// on every CPU that has AVX-512, less AVX-512 (each name in x264's list
// implies the ones before it).
const x264NoAVX512 = "MMX2,SSE2Fast,SSSE3,SSE4.2,AVX,FMA3,BMI2,AVX2"

// hostAVX512 reports whether libx264 uses its AVX-512 code here (it needs
// AVX-512 F, CD, BW, DQ and VL with the OS saving the ZMM state, as
// x/sys/cpu checks) and the CPU has what x264NoAVX512 names (every
// AVX-512 CPU does; checked so that the guard never names a feature the
// CPU lacks).
func hostAVX512() bool {
	x := cpu.X86
	return x.HasAVX512F && x.HasAVX512CD && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL &&
		x.HasAVX2 && x.HasFMA && x.HasBMI1 && x.HasBMI2 && x.HasSSE42 && x.HasSSSE3 && x.HasAVX
}

// x264Params returns the x264-params for an mp4 of the given width: the
// caller's params, with AVX-512 left out of libx264's code when avx512 is
// set, the picture's width in macroblocks is not a multiple of 8 and the
// params choose no "asm" of their own.
//
// libx264's AVX-512 macroblock-tree propagation
// (mbtree_propagate_list_internal_avx512, used with the default
// mb-tree rate control) handles a row 8 macroblocks at a time without
// stopping at the row's end, so the last step of a row whose width is not
// a multiple of 8 macroblocks also propagates up to 7 macroblocks past
// it, whose costs and vectors lie partly in memory that x264 does not
// initialise. The encode then depends on what the heap held: the same frames gave different streams run to run
// (854x480: 54 macroblocks; 1280 and 1920 wide are multiples of 8, never
// touched). Its SSSE3/AVX/AVX2 versions and the C code stop at the row's
// end; on such pictures libx264 runs its AVX2 code instead, about as fast.
func x264Params(params string, width int, avx512 bool) string {
	if !avx512 || ((width+15)/16)%8 == 0 {
		return params
	}
	for _, kv := range strings.Split(params, ":") {
		k, _, _ := strings.Cut(kv, "=")
		if k = strings.TrimSpace(k); k == "asm" || k == "no-asm" {
			return params
		}
	}
	if params == "" {
		return "asm=" + x264NoAVX512
	}
	return params + ":asm=" + x264NoAVX512
}
