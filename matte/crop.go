package matte

import (
	"context"
	"math"
)

// Small subjects: where the carried shape is a small part of the frame,
// the network (which sees the whole frame at its input size, 1024x1024
// for IS-Net) gets few pixels of it and often misses it or sees it as a
// blur. On such a frame the network runs a second time on a square crop
// around the shape, zoomed to its input size, and inside the crop box the
// map fused is the larger of that map and the full frame's (see
// NetOptions.CropArea, cropInto).

// Box is a rectangle of flow pixels: [X0, X1) x [Y0, Y1).
type Box struct{ X0, Y0, X1, Y1 int }

// W and H are the box's width and height.
func (b Box) W() int { return b.X1 - b.X0 }
func (b Box) H() int { return b.Y1 - b.Y0 }

// CropObjectness is an Objectness that can also run the network on a part
// of a frame it ran on.
type CropObjectness interface {
	Objectness
	// CropObjectness runs the network on the part b (flow pixels) of
	// frame i, taken from the frame at the largest size the implementation
	// holds and zoomed to the network's input, and writes its map at the
	// flow size over the box (b.W()*b.H() values, row by row) into dst.
	CropObjectness(ctx context.Context, i int, b Box, dst []float32) error
}

// SmallSubjectArea is the share of the frame under which a carried shape
// gets a crop run when the crops are turned on (NetOptions.CropArea: off
// by default; see docs/mattes.md, Small subjects). DefaultCropMargin is
// the crop box's margin on each side, as a share of the shape's longer
// side: the box is twice the shape, so the subject fills about half of
// the network's input, as a salient object does in a frame, with room for
// the carried shape to be off by a quarter of the box.
const (
	SmallSubjectArea  = 0.02
	DefaultCropMargin = 0.5
)

// cropBox is the square box around the pixels of shape >= 0.5 (w x h)
// that a crop run covers: the shape's bounding box, its longer side grown
// by margin of it on each side, at least an eighth of the frame's short
// side, centred on the bounding box and moved inside the frame. It
// reports false (no crop) when the shape is empty, covers area or more of
// the frame, or its box would be wider than half the short side.
func cropBox(shape []float32, w, h int, area, margin float64) (Box, bool) {
	if area <= 0 {
		return Box{}, false
	}
	n := 0
	x0, y0, x1, y1 := w, h, -1, -1
	for i, v := range shape {
		if v < 0.5 {
			continue
		}
		n++
		x, y := i%w, i/w
		x0, x1 = min(x0, x), max(x1, x)
		y0, y1 = min(y0, y), max(y1, y)
	}
	if n == 0 || float64(n) >= area*float64(w*h) {
		return Box{}, false
	}
	short := min(w, h)
	side := float64(max(x1-x0+1, y1-y0+1))
	s := int(math.Ceil(side * (1 + 2*margin)))
	if s > short/2 {
		// A small area spread wide (fragments far apart, a thin
		// diagonal): the box would zoom less than about 2x on the full
		// frame's view, and hold much besides the subject.
		return Box{}, false
	}
	s = max(s, short/8, 1)
	place := func(lo, hi, size int) int { // the box's start along one axis
		c := (lo + hi + 1) / 2
		return min(max(c-s/2, 0), size-s)
	}
	bx, by := place(x0, x1, w), place(y0, y1, h)
	return Box{X0: bx, Y0: by, X1: bx + s, Y1: by + s}, true
}

// cropInto runs the crop of frame i around shape when the options and the
// network allow, and raises nmap (w x h) inside the box to the crop's map
// where that is larger. It reports whether it ran.
func cropInto(ctx context.Context, net Objectness, o NetOptions, i int, shape, nmap []float32, w, h int, scratch *[]float32) (bool, error) {
	cn, ok := net.(CropObjectness)
	if !ok {
		return false, nil
	}
	b, ok := cropBox(shape, w, h, o.CropArea, o.CropMargin)
	if !ok {
		return false, nil
	}
	if cap(*scratch) < b.W()*b.H() {
		*scratch = make([]float32, b.W()*b.H())
	}
	c := (*scratch)[:b.W()*b.H()]
	if err := cn.CropObjectness(ctx, i, b, c); err != nil {
		return false, err
	}
	// The larger of the two maps: the crop adds what the full frame was
	// too coarse to resolve, and keeps what only the full frame sees (a
	// part that, zoomed in, is no longer the salient thing: the dark half
	// of a paraglider's wing; replacing the map lost it, J 0.880 -> 0.850
	// for select, 0.880 -> 0.344 for auto on paragliding).
	for y := 0; y < b.H(); y++ {
		row := nmap[(b.Y0+y)*w+b.X0 : (b.Y0+y)*w+b.X1]
		for x, v := range c[y*b.W() : (y+1)*b.W()] {
			row[x] = max(row[x], v)
		}
	}
	if o.CropTrace != nil {
		o.CropTrace(i, b)
	}
	return true, nil
}
