package bench

import (
	"context"
	"testing"

	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/matte"
)

func TestDbgAuto(t *testing.T) {
	dev := kernels.NewCPU(0)
	for _, c := range AutoSuite(320, 180, 30) {
		r, err := RunAuto(context.Background(), dev, c, matte.DefaultAutoOptions())
		t.Log(r, err)
	}
}
