package bench

import (
	"image"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels"
)

// The fixture helpers that the look suite (package bench/look) shares with
// the matte suites here.

// ReadImage decodes a PNG or JPEG file (the DAVIS frames and masks).
func ReadImage(path string) (image.Image, error) { return readImage(path) }

// SavePNG writes img to path as a PNG (the contact sheets).
func SavePNG(path string, img image.Image) error { return savePNG(path, img) }

// AddPlateGrain returns f (RGB24) with grain of standard deviation amount
// in square-root luminance added (AddGrain, seed 77), as RGB24: a grainy
// plate made from a clean one.
func AddPlateGrain(dev *kernels.CPU, f *frame.HostFrame, amount float32) (*frame.HostFrame, error) {
	img, err := dev.NewImage(f.Width, f.Height, 3)
	if err != nil {
		return nil, err
	}
	defer dev.Free(img)
	if err := dev.Upload(img, f); err != nil {
		return nil, err
	}
	if err := dev.AddGrain(img, img, nil, 77, amount); err != nil {
		return nil, err
	}
	out, err := frame.New(frame.RGB24, f.Width, f.Height)
	if err != nil {
		return nil, err
	}
	out.ColorSpace = f.ColorSpace
	if err := dev.Download(out, img); err != nil {
		return nil, err
	}
	return out, nil
}
