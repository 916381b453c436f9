package render

import (
	"context"
	"errors"
	"testing"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
)

// TestSelfTestCPU runs the self-test on a CPU device with another worker
// count than the reference: the CPU backend is bit-identical for any
// worker count, so nothing may differ.
func TestSelfTestCPU(t *testing.T) {
	dev := kernels.NewCPU(3)
	defer dev.Close()
	res, err := SelfTest(context.Background(), dev)
	if err != nil {
		t.Fatal(err)
	}
	if res.Codes != selfTestFrames*(selfTestW*selfTestH+2*((selfTestW+1)/2)*((selfTestH+1)/2)) {
		t.Fatalf("compared %d codes", res.Codes)
	}
	if res.Differing != 0 || res.MaxDiff != 0 {
		t.Fatalf("CPU vs CPU: %s", res)
	}
}

// TestSelfTestDetectsMismatch checks that the comparison fails for a
// device whose output is wrong: a CPU device whose GainComposite ignores
// its gain.
func TestSelfTestDetectsMismatch(t *testing.T) {
	dev := &brokenDev{CPU: kernels.NewCPU(1)}
	defer dev.Close()
	_, err := SelfTest(context.Background(), dev)
	if !errors.Is(err, ErrSelfTest) {
		t.Fatalf("got %v, want ErrSelfTest", err)
	}
}

// TestSelfTestCanceled checks that a done context stops the self-test.
func TestSelfTestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dev := kernels.NewCPU(1)
	defer dev.Close()
	if _, err := SelfTest(ctx, dev); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// brokenDev is a CPU device with a wrong fused finishing pass.
type brokenDev struct{ *kernels.CPU }

func (b *brokenDev) Ops() kernels.Ops { return b }
func (b *brokenDev) Name() string     { return "broken" }
func (b *brokenDev) GainCompositeDownload(dst *frame.HostFrame, src, alpha, gainLow, bg, bgBlur, alphaBlurLow kernels.Image, wrap, maxValue float32) error {
	return b.CPU.GainCompositeDownload(dst, src, alpha, bg, bg, bgBlur, alphaBlurLow, wrap, maxValue)
}

func (b *brokenDev) GainCompositeLookDownload(dst *frame.HostFrame, src, alpha, gainLow, bg, bgBlur, alphaBlurLow kernels.Image, look kernels.CompositeLook, wrap, maxValue float32) error {
	return b.CPU.GainCompositeLookDownload(dst, src, alpha, bg, bg, bgBlur, alphaBlurLow, look, wrap, maxValue)
}
