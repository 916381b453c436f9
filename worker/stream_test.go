package worker

import "testing"

// TestStageDepthPlan: only a job whose render is its one encode (source
// and matte stream-copied, no foreground, no EXR) runs with two frames of
// slack, and the plan's pooled bytes per pixel match the frames the lanes
// of each depth can hold (YUV420P source and render 1.5 B, Gray8 matte
// 1 B; half a byte of rounding).
func TestStageDepthPlan(t *testing.T) {
	for _, tc := range []struct {
		copySource, copyAlpha, more bool
		want                        int
	}{
		{true, true, false, 2},
		{true, true, true, 3},
		{false, true, false, 3},
		{true, false, false, 3},
		{false, false, false, 3},
	} {
		if got := stageDepth(tc.copySource, tc.copyAlpha, tc.more); got != tc.want {
			t.Errorf("stageDepth(%v, %v, %v) = %d, want %d", tc.copySource, tc.copyAlpha, tc.more, got, tc.want)
		}
	}
	for _, d := range []int{2, 3} {
		ln := newLanes(d)
		held := 1.5*float64(cap(ln.srcPool)) + float64(cap(ln.alphaPool)) + 1.5*float64(cap(ln.outPool))
		if got := pooledPerPixel(d); got != held+0.5 {
			t.Errorf("depth %d: plan %.1f B a pixel of pooled frames, the lanes hold %.1f (+0.5)", d, got, held)
		}
	}
	if pooledPerPixel(3)-pooledPerPixel(2) != 4 {
		t.Errorf("depth 3 over depth 2: %.1f B a pixel, want 4", pooledPerPixel(3)-pooledPerPixel(2))
	}
}
