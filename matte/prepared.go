package matte

import (
	"fmt"

	"github.com/vfxrender/vfx/internal/resample"
	"github.com/vfxrender/vfx/kernels"
)

// Prepared is what Prepare made: every frame's matte at the flow size
// (or a chroma key, or a still's matte at the output size), handed out at
// the output size one frame at a time by Alpha. Only low-resolution data
// is held across the job.
type Prepared struct {
	// Method is how the mattes are made: "select", "auto/net" or
	// "auto/chroma".
	Method string

	dev     kernels.Device
	lows    [][]uint16 // flow-size mattes per frame (65535 = 1); nil for chroma
	buf     []float32
	chroma  *kernels.ChromaParams
	key     int
	keyFull []float32 // select: the keyframe matte as given, at the output size
	still   []float32 // auto on an image: the network's matte at the output size
	refiner *Refiner
	low     kernels.Image
}

// collect keeps each emitted flow-size matte as 16-bit values.
func (m *Prepared) collect(step func()) func(i int, im kernels.Image) error {
	return func(i int, im kernels.Image) error {
		step()
		v, err := m.dev.ReadPixels(im)
		if err != nil {
			return err
		}
		q := make([]uint16, len(v))
		for k, x := range v {
			q[k] = uint16(min(max(x, 0), 1)*65535 + 0.5)
		}
		m.lows[i] = q
		return nil
	}
}

// ready makes the refiner from the flow size lw x lh to the output size
// w x h, and the image a flow-size matte is uploaded into.
func (m *Prepared) ready(w, h, lw, lh int) (*Prepared, error) {
	var err error
	if m.refiner, err = NewRefiner(m.dev, w, h, lw, lh); err != nil {
		return nil, err
	}
	if m.low, err = m.dev.NewImage(lw, lh, 1); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// stillMatte is the network's map of a still's frame 0 at the output size
// w x h, snapped to 0 or 1 beyond band flow pixels of its contour.
func stillMatte(low *lowClip, w, h int, band float32) []float32 {
	still := make([]float32, w*h)
	resample.Bilinear(still, w, h, low.first, low.fw, low.fh)
	SnapBand(still, w, h, band*float32(w)/float32(low.w))
	return still
}

// Alpha writes frame i's matte into dst (1 channel, output size) for the
// frame src (linear RGB, output size); a chroma key also removes the
// screen's spill from src in place. Frames are asked for in order: a
// frame's flow-size matte is dropped once handed out.
func (m *Prepared) Alpha(i int, src, dst kernels.Image) error {
	switch {
	case m.chroma != nil:
		return m.dev.Ops().ChromaKey(dst, src, src, *m.chroma)
	case i == 0 && m.still != nil:
		return m.dev.WritePixels(dst, m.still)
	case i == m.key:
		return m.dev.WritePixels(dst, m.keyFull)
	case i >= len(m.lows):
		return fmt.Errorf("matte: the source decoded to more frames (%d+) than Prepare read (%d)", i+1, len(m.lows))
	}
	if m.buf == nil {
		m.buf = make([]float32, len(m.lows[i]))
	}
	for k, q := range m.lows[i] {
		m.buf[k] = float32(q) / 65535
	}
	if err := m.dev.WritePixels(m.low, m.buf); err != nil {
		return err
	}
	m.lows[i] = nil // done with it
	return m.refiner.Refine(dst, src, m.low)
}

// Close frees the refiner and the flow-size image. A nil Prepared is
// closed.
func (m *Prepared) Close() {
	if m == nil {
		return
	}
	if m.refiner != nil {
		m.refiner.Close()
	}
	if m.low != nil {
		m.dev.Free(m.low)
	}
}
