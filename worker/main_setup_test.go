package worker

import (
	"os"
	"testing"

	"github.com/vfxrender/vfx/codec"
)

// TestMain silences FFmpeg's own logging: failures come back as errors.
func TestMain(m *testing.M) {
	codec.Quiet()
	os.Exit(m.Run())
}
