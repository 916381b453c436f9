package worker

import (
	"os"
	"testing"

	"github.com/vfxrender/vfx/codec"
)

// TestMain silences FFmpeg's own logging: failures come back as errors.
// It also removes what the farm tests built once for the whole run.
func TestMain(m *testing.M) {
	codec.Quiet()
	code := m.Run()
	removeFarmShared()
	os.Exit(code)
}
