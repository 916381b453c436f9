package infer

import (
	"context"
	"fmt"

	"github.com/vfxrender/vfx/internal/resample"
)

// Segment runs the model on one picture: rgb is planar RGB (3*w*h values,
// sRGB-encoded, in [0,1]) of any size. It is resampled to the card's input
// size (bilinear), normalised as the card says, run, and the output is
// resampled back to w x h into dst (w*h values, clamped to [0,1]).
func (m *Model) Segment(ctx context.Context, rgb []float32, w, h int, dst []float32) error {
	return m.segment(ctx, rgb, w, h, dst, nil)
}

// SegmentFeatures is Segment that also returns the card's Features tensor
// for the picture (ErrNoFeatures when the card names none).
func (m *Model) SegmentFeatures(ctx context.Context, rgb []float32, w, h int, dst []float32) (Features, error) {
	if !m.feat {
		return Features{}, ErrNoFeatures
	}
	var f Features
	err := m.segment(ctx, rgb, w, h, dst, &f)
	return f, err
}

func (m *Model) segment(ctx context.Context, rgb []float32, w, h int, dst []float32, feat *Features) error {
	c := m.card
	if w <= 0 || h <= 0 || len(rgb) != 3*w*h || len(dst) != w*h {
		return fmt.Errorf("%w: %dx%d picture with %d values and a %d-value output", ErrShape, w, h, len(rgb), len(dst))
	}
	n := c.Width * c.Height
	in := c.input(rgb, w, h)
	out := make([]float32, n)
	var err error
	if feat != nil {
		*feat, err = m.RunFeatures(ctx, in, out)
	} else {
		err = m.Run(ctx, in, out)
	}
	if err != nil {
		return err
	}
	Resize(dst, w, h, out, c.Width, c.Height)
	for i, v := range dst {
		dst[i] = min(max(v, 0), 1)
	}
	return nil
}

// Resize resamples one plane src (sw x sh) into dst (dw x dh) with
// pixel-centre aligned bilinear interpolation; when shrinking by more than
// 2x it first averages boxes so that no source pixel is skipped
// (resample.Bilinear).
func Resize(dst []float32, dw, dh int, src []float32, sw, sh int) {
	resample.Bilinear(dst, dw, dh, src, sw, sh)
}

// input is the network's input for a picture (planar RGB in [0,1], w x h):
// resized to the card's size and normalised by its Mean and Scale.
func (c Card) input(rgb []float32, w, h int) []float32 {
	n := c.Width * c.Height
	in := make([]float32, 3*n)
	for ch := 0; ch < 3; ch++ {
		Resize(in[ch*n:(ch+1)*n], c.Width, c.Height, rgb[ch*w*h:(ch+1)*w*h], w, h)
		mean, scale := c.Mean[ch], c.Scale[ch]
		for i, v := range in[ch*n : (ch+1)*n] {
			in[ch*n+i] = (v*255 - mean) / scale
		}
	}
	return in
}
