//go:build cuda

package kernels

import (
	"fmt"

	"github.com/vfxrender/vfx/frame"
)

// The ops on host frames. On the device the 8-bit planes are uploaded and
// converted by the Upload kernel into pooled images, then the existing
// kernels run: no new kernel, the same result as the CPU backend (which
// fuses these chains per row band to save host memory traffic).

// ResizeAreaFrame uploads src into a pooled image of its size and
// resamples it into dst (see Ops.ResizeAreaFrame).
func (d *CUDA) ResizeAreaFrame(dst Image, src *frame.HostFrame) error {
	const op = "ResizeAreaFrame"
	o, err := d.img(op, "dst", dst)
	if err != nil {
		return err
	}
	if err := src.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: %s: %w", d.name, op, err)
	}
	full, err := d.NewImage(src.Width, src.Height, o.c)
	if err != nil {
		return err
	}
	defer d.Free(full)
	if err := d.Upload(full, src); err != nil {
		return err
	}
	return d.ResizeArea(dst, full)
}

// GainCompositeLookFrame uploads src and alpha into pooled images and
// runs GainCompositeLookDownload (see Ops.GainCompositeLookFrame);
// the plate's codes (pc) are not needed on the device.
func (d *CUDA) GainCompositeLookFrame(dst, src, alpha *frame.HostFrame, _ *PlateCodes, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error {
	const op = "GainCompositeLookFrame"
	if err := src.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: %s: src: %w", d.name, op, err)
	}
	s, err := d.NewImage(src.Width, src.Height, 3)
	if err != nil {
		return err
	}
	defer d.Free(s)
	if err := d.Upload(s, src); err != nil {
		return err
	}
	var a Image
	if alpha != nil {
		if err := alpha.Validate(); err != nil {
			return fmt.Errorf("kernels: %s: %s: alpha: %w", d.name, op, err)
		}
		if a, err = d.NewImage(alpha.Width, alpha.Height, 1); err != nil {
			return err
		}
		defer d.Free(a)
		if err := d.Upload(a, alpha); err != nil {
			return err
		}
		return d.GainCompositeLookDownload(dst, s, a, gainLow, bg, bgBlur, alphaBlurLow, look, wrap, maxValue)
	}
	return d.GainCompositeDownload(dst, s, nil, gainLow, bg, bgBlur, alphaBlurLow, wrap, maxValue)
}
