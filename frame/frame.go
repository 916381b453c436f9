// Package frame holds the host-side pixel buffers that pass between the
// codec (decode/encode) and the compute device (kernels). It is pure Go,
// has no dependencies, and owns no behaviour beyond allocation and checks.
package frame

import (
	"fmt"

	"github.com/vfxrender/vfx/internal/hugepage"
)

// PixelFormat is the memory layout of a HostFrame.
type PixelFormat int

const (
	// YUV420P is planar 8-bit Y, U, V with 2x2 chroma subsampling.
	// Odd widths/heights round the chroma planes up: (w+1)/2 x (h+1)/2.
	YUV420P PixelFormat = iota + 1
	// RGB24 is packed 8-bit R, G, B in plane 0 (sRGB-encoded).
	RGB24
	// Gray8 is one 8-bit plane (a matte: 0 = replace, 255 = keep).
	Gray8
	// Gray16 is one plane of 16-bit little-endian samples (a matte at full
	// precision: 0 = replace, 65535 = keep). It is a host-side format: the
	// codec decodes mattes into it, the compute devices do not upload it
	// (read it with Gray16At and write floats).
	Gray16
)

// String names the format.
func (p PixelFormat) String() string {
	switch p {
	case YUV420P:
		return "yuv420p"
	case RGB24:
		return "rgb24"
	case Gray8:
		return "gray8"
	case Gray16:
		return "gray16le"
	}
	return fmt.Sprintf("pixfmt(%d)", int(p))
}

// ColorSpace is the YUV<->RGB matrix of a frame's YUV planes.
type ColorSpace int

const (
	// BT601 is the SD matrix (Kr=0.299, Kb=0.114); also JPEG's.
	BT601 ColorSpace = iota
	// BT709 is the HD matrix (Kr=0.2126, Kb=0.0722).
	BT709
)

// String names the colour space.
func (c ColorSpace) String() string {
	if c == BT709 {
		return "bt709"
	}
	return "bt601"
}

// HostFrame is one picture in host memory. Planes[i] holds Strides[i]*rows
// bytes; unused planes are nil.
type HostFrame struct {
	Format        PixelFormat
	Width, Height int
	Planes        [3][]byte
	Strides       [3]int
	// ColorSpace and FullRange describe YUV420P planes (ignored otherwise).
	ColorSpace ColorSpace
	FullRange  bool
	// PTS is the presentation timestamp in the stream time base of whoever
	// produced the frame (the decoder copies it, the encoder honours it).
	PTS int64
}

// PlaneDims returns the width in samples (bytes for Gray8/YUV; the packed
// row length in bytes for RGB24 and Gray16) and height of plane i.
func (f *HostFrame) PlaneDims(i int) (w, h int) {
	switch f.Format {
	case YUV420P:
		if i == 0 {
			return f.Width, f.Height
		}
		if i < 3 {
			return (f.Width + 1) / 2, (f.Height + 1) / 2
		}
	case RGB24:
		if i == 0 {
			return f.Width * 3, f.Height
		}
	case Gray8:
		if i == 0 {
			return f.Width, f.Height
		}
	case Gray16:
		if i == 0 {
			return f.Width * 2, f.Height
		}
	}
	return 0, 0
}

// NumPlanes is the number of planes the format uses.
func (p PixelFormat) NumPlanes() int {
	if p == YUV420P {
		return 3
	}
	return 1
}

// known reports whether p is one of the formats above.
func (p PixelFormat) known() bool { return p >= YUV420P && p <= Gray16 }

// Gray16At is sample (x, y) of a Gray16 frame (0 = replace, 65535 = keep).
func (f *HostFrame) Gray16At(x, y int) uint16 {
	i := y*f.Strides[0] + 2*x
	return uint16(f.Planes[0][i]) | uint16(f.Planes[0][i+1])<<8
}

// New allocates a tightly packed frame of the given format and size.
func New(format PixelFormat, w, h int) (*HostFrame, error) {
	f := &HostFrame{Format: format, Width: w, Height: h}
	if err := f.Alloc(); err != nil {
		return nil, err
	}
	return f, nil
}

// Alloc (re)allocates the planes for Format, Width and Height, reusing the
// existing buffers when they are large enough.
func (f *HostFrame) Alloc() error {
	if f.Width <= 0 || f.Height <= 0 {
		return fmt.Errorf("frame: invalid size %dx%d", f.Width, f.Height)
	}
	n := f.Format.NumPlanes()
	if !f.Format.known() {
		return fmt.Errorf("frame: unknown pixel format %v", f.Format)
	}
	for i := 0; i < 3; i++ {
		if i >= n {
			f.Planes[i], f.Strides[i] = nil, 0
			continue
		}
		w, h := f.PlaneDims(i)
		if cap(f.Planes[i]) >= w*h {
			f.Planes[i] = f.Planes[i][:w*h]
		} else {
			f.Planes[i] = make([]byte, w*h)
			hugepage.Advise(f.Planes[i])
		}
		f.Strides[i] = w
	}
	return nil
}

// Validate checks that the planes are large enough for the declared
// format, size and strides.
func (f *HostFrame) Validate() error {
	if f == nil {
		return fmt.Errorf("frame: nil frame")
	}
	if f.Width <= 0 || f.Height <= 0 {
		return fmt.Errorf("frame: invalid size %dx%d", f.Width, f.Height)
	}
	n := f.Format.NumPlanes()
	if !f.Format.known() {
		return fmt.Errorf("frame: unknown pixel format %v", f.Format)
	}
	for i := 0; i < n; i++ {
		w, h := f.PlaneDims(i)
		if f.Strides[i] < w {
			return fmt.Errorf("frame: plane %d stride %d < width %d", i, f.Strides[i], w)
		}
		if len(f.Planes[i]) < f.Strides[i]*(h-1)+w {
			return fmt.Errorf("frame: plane %d has %d bytes, need %d", i, len(f.Planes[i]), f.Strides[i]*(h-1)+w)
		}
	}
	return nil
}
