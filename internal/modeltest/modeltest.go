// Package modeltest gives tests the real segmentation network: ONNX
// Runtime and the default model from VFX_MODEL_DIR (or infer.DefaultDir),
// as installed by `make models`.
package modeltest

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/vfxrender/vfx/infer"
	"github.com/vfxrender/vfx/matte"
)

// loaded is the model of this test process: a session is costly to make
// (its first runs are slow too), so the tests of one package share it.
var loaded = sync.OnceValues(func() (*infer.Model, error) {
	rt, err := infer.Open(infer.Options{})
	if err != nil {
		return nil, err
	}
	// As the product loads it (cmd/vfx): with its feature output when
	// select's memory weights ship.
	card := infer.ISNetIMGLY()
	if matte.MemoryShipped() {
		card.Features = infer.ISNetFeatures
	}
	// VFX_MODEL_PRECISION=fp32 runs the fp32 graph, as vfx does
	// (--model-precision): benchmarks compare the two that way.
	if os.Getenv("VFX_MODEL_PRECISION") == "fp32" {
		card.Int8 = nil
	}
	return rt.Load(context.Background(), card)
})

// Load returns the default model, as the product loads it. Where it is not installed the test is
// skipped with the reason, or fails when VFX_REQUIRE_MODELS=1 (make test).
func Load(t testing.TB) *infer.Model {
	t.Helper()
	m, err := loaded()
	if err != nil {
		if os.Getenv("VFX_REQUIRE_MODELS") == "1" {
			t.Fatalf("segmentation model required (VFX_REQUIRE_MODELS=1): %v", err)
		}
		t.Skipf("segmentation model not installed (run make models): %v", err)
	}
	return m
}
