//go:build cuda

package kernels

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
#include <stdlib.h>
#include <string.h>

// vfx_launch launches f with the parameters packed in buf at offs (the
// driver copies them before returning, so buf may be freed afterwards).
static CUresult vfx_launch(CUfunction f, unsigned gx, unsigned gy, unsigned bx, unsigned by,
                           CUstream s, const void *buf, size_t len, const int *offs, int n) {
	char *b = malloc(len ? len : 1);
	void **p = malloc(sizeof(void *) * (n ? n : 1));
	if (!b || !p) { free(b); free(p); return CUDA_ERROR_OUT_OF_MEMORY; }
	memcpy(b, buf, len);
	for (int i = 0; i < n; i++) p[i] = b + offs[i];
	CUresult r = cuLaunchKernel(f, gx, gy, 1, bx, by, 1, 0, s, p, NULL);
	free(b);
	free(p);
	return r;
}

static const char *vfx_err_name(CUresult r) {
	const char *s = NULL;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS || !s) return "CUDA_ERROR_UNKNOWN";
	return s;
}
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"

	"gorgonia.org/cu"
)

// This file is the small part of the driver API that gorgonia.org/cu
// does not offer: pinned host memory, and kernel launches whose
// parameters are structs (cu.Function.Launch copies 8 bytes per
// parameter).

// CUError is a CUDA driver error.
type CUError struct {
	Code int
	Name string
}

func (e *CUError) Error() string { return fmt.Sprintf("%s (%d)", e.Name, e.Code) }

func cuResult(r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return &CUError{Code: int(r), Name: C.GoString(C.vfx_err_name(r))}
}

// The handles of cu's Function and Stream are single C pointers; these
// checks fail the build if that ever changes.
var (
	_ [unsafe.Sizeof(cu.Function{}) - unsafe.Sizeof(C.CUfunction(nil))]struct{}
	_ [unsafe.Sizeof(C.CUfunction(nil)) - unsafe.Sizeof(cu.Function{})]struct{}
	_ [unsafe.Sizeof(cu.Stream{}) - unsafe.Sizeof(C.CUstream(nil))]struct{}
	_ [unsafe.Sizeof(C.CUstream(nil)) - unsafe.Sizeof(cu.Stream{})]struct{}
)

func cFunc(f cu.Function) C.CUfunction { return *(*C.CUfunction)(unsafe.Pointer(&f)) }
func cStream(s cu.Stream) C.CUstream   { return *(*C.CUstream)(unsafe.Pointer(&s)) }

// kargs packs kernel parameters, each at an 8-byte aligned offset.
type kargs struct {
	buf  []byte
	offs []C.int
}

func (k *kargs) put(b []byte) *kargs {
	for len(k.buf)%8 != 0 {
		k.buf = append(k.buf, 0)
	}
	k.offs = append(k.offs, C.int(len(k.buf)))
	k.buf = append(k.buf, b...)
	return k
}

func (k *kargs) u64(v uint64) *kargs {
	var b [8]byte
	*(*uint64)(unsafe.Pointer(&b[0])) = v
	return k.put(b[:])
}

func (k *kargs) u32(v uint32) *kargs {
	var b [4]byte
	*(*uint32)(unsafe.Pointer(&b[0])) = v
	return k.put(b[:])
}

// p adds a device pointer (0 for a null pointer).
func (k *kargs) p(ptr cu.DevicePtr) *kargs { return k.u64(uint64(ptr)) }

// i adds a C int.
func (k *kargs) i(v int) *kargs { return k.u32(uint32(int32(v))) }

// l adds an int64_t.
func (k *kargs) l(v int) *kargs { return k.u64(uint64(int64(v))) }

// f adds a float.
func (k *kargs) f(v float32) *kargs { return k.u32(math.Float32bits(v)) }

// d adds a double.
func (k *kargs) d(v float64) *kargs { return k.u64(math.Float64bits(v)) }

// s adds a struct passed by value: the bytes of *v, whose Go layout must
// match the C struct.
func structArg[T any](k *kargs, v *T) *kargs {
	return k.put(unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v)))
}

func launchRaw(f cu.Function, gx, gy, bx, by int, s cu.Stream, k *kargs) error {
	var bp unsafe.Pointer
	if len(k.buf) > 0 {
		bp = unsafe.Pointer(&k.buf[0])
	}
	var op *C.int
	if len(k.offs) > 0 {
		op = &k.offs[0]
	}
	return cuResult(C.vfx_launch(cFunc(f), C.uint(gx), C.uint(gy), C.uint(bx), C.uint(by), cStream(s),
		bp, C.size_t(len(k.buf)), op, C.int(len(k.offs))))
}

// pinned is page-locked host memory (cuMemAllocHost).
type pinned struct {
	p unsafe.Pointer
	n int
}

func allocPinned(n int) (pinned, error) {
	var p unsafe.Pointer
	if err := cuResult(C.cuMemAllocHost(&p, C.size_t(n))); err != nil {
		return pinned{}, err
	}
	return pinned{p: p, n: n}, nil
}

func (b pinned) bytes() []byte {
	if b.p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(b.p), b.n)
}

func (b pinned) floats() []float32 {
	if b.p == nil {
		return nil
	}
	return unsafe.Slice((*float32)(b.p), b.n/4)
}

func (b pinned) float64s() []float64 {
	if b.p == nil {
		return nil
	}
	return unsafe.Slice((*float64)(b.p), b.n/8)
}

func (b *pinned) free() {
	if b.p != nil {
		C.cuMemFreeHost(b.p)
		b.p, b.n = nil, 0
	}
}
