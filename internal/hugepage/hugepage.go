// Package hugepage asks the kernel to back large, freshly allocated
// buffers with transparent huge pages (2 MiB on x86-64 and arm64).
//
// Why: a render touches a few hundred megabytes of new float images while
// it sets up a job (the plate's measures, the first frame's composite) and
// the decoders' frames after it. With 4 KiB pages each first touch is a
// page fault (about 100,000 of them for a 240-frame 1080p job; on a
// virtual machine each costs microseconds of kernel time, on the job's
// critical path while it sets up). Where the machine's transparent huge
// pages are "madvise" (Debian's and most distributions' default), the
// kernel gives huge pages only to memory that asks for them; this package
// asks for the buffers worth it. It is advice: the kernel may refuse it
// (huge pages "never", no contiguous memory), and the buffer works the
// same either way.
package hugepage

import "unsafe"

// Size is the huge page size advised for (x86-64 and arm64 with 4 KiB
// base pages).
const Size = 2 << 20

// MinBytes is the least buffer size advised: below it a buffer holds at
// most one whole aligned huge page, not worth a system call.
const MinBytes = 2 * Size

// Advise asks for huge pages under the Size-aligned part of s's memory
// (its length, not its capacity). Call it right after allocating s and
// before writing to it: pages already touched keep their small pages.
// Shorter slices, and systems without the advice, are left alone;
// failures are ignored (the advice changes speed, never contents).
func Advise[T any](s []T) {
	var zero T
	n := uintptr(len(s)) * unsafe.Sizeof(zero)
	if n < MinBytes {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(s))
	start := uintptr(p)
	lo := (start + Size - 1) &^ (Size - 1)
	hi := (start + n) &^ (Size - 1)
	if hi <= lo {
		return
	}
	advise(unsafe.Slice((*byte)(unsafe.Add(p, lo-start)), hi-lo))
}
