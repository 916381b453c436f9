package render

import (
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
)

// Params are one job's render settings.
type Params struct {
	// Prompt is the free-text description of the lighting and scene.
	Prompt string
	// Reference is the reference image (RGB24 sRGB, or YUV420P; any
	// size): it becomes the background, cover-fitted, and its light
	// lights the subject. nil synthesises a backdrop from the prompt.
	Reference *frame.HostFrame
	// Seed drives every random choice (backdrop, light jitter, grain).
	Seed uint32
	// Width and Height are the output size of every frame.
	Width, Height int
	// Fill is alpha_mode fill: the whole frame is the subject, relit and
	// harmonised, with no background replacement.
	Fill bool
	// NoPlateMatch turns off matching the subject's grain, black level
	// and highlights to the background (for comparisons; see plate.go).
	NoPlateMatch bool
	// NoFocusMatch keeps the plate's sharpness as it is (for comparisons;
	// see focus.go).
	NoFocusMatch bool
	// NoCameraLock keeps the plate still whatever the source's camera
	// does (for comparisons; see camera.go).
	NoCameraLock bool
	// ContactReach overrides DefaultContactReach (0: the default; foreground.go).
	ContactReach float64
	// Placement scales and moves the subject (the source and its matte)
	// over the plate before the look (place.go). The zero value and the
	// identity {1, 0, 0} render exactly as without; fill mode refuses one.
	Placement kernels.Placement
}
