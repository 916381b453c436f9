package codec

/*
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
static int vfx_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }
#else
static int vfx_mmap_threshold(int bytes) { (void)bytes; return -1; }
#endif
*/
import "C"

import "fmt"

// MmapThreshold is what MapLargeAllocations sets: glibc's own default
// starting threshold (128 KiB), below a 1080p frame's smallest plane.
const MmapThreshold = 128 << 10

// MapLargeAllocations has the C allocator map every allocation of
// MmapThreshold bytes or more on its own, so that freeing it returns it to
// the system at once. glibc's default raises the threshold to the size of
// the first such block freed (up to 32 MiB); from then on FFmpeg's and
// x264's frame buffers, packets and scratch come from its heaps, where the
// freed ones stay resident. For a process that renders one job it is
// about 15 MB less peak RSS at 1080p (`vfx bench ffmpeg`, issue 33) for
// no measurable time: the frame buffers are pooled, so few blocks are
// mapped per frame. It sets a process-wide setting: call it once, at the
// start of a process that runs jobs (`vfx render`, `vfx worker`). It
// returns an error where the C library is not glibc or refuses.
func MapLargeAllocations() error {
	if C.vfx_mmap_threshold(C.int(MmapThreshold)) != 1 {
		return fmt.Errorf("codec: mallopt(M_MMAP_THRESHOLD, %d): not supported by this C library", MmapThreshold)
	}
	return nil
}
