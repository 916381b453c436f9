package codec

import (
	"encoding/binary"
	"fmt"

	"github.com/asticode/go-astiav"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/internal/bytemap"
)

// lumaLUT is the swscale conversion of a limited-range yuv420p matte
// whose chroma is all 128 (a grey picture, as a roto tool's H.264 export
// and x264 keep it) into full-range Gray8 at the same size, as a table of
// its 256 luma codes: a table is a fraction of swscale's cost on every
// frame of a 1080p matte. The table is read back from swscale itself on
// two probe frames of the stream's format and size (chroma 128), and is
// used only if both give every code the same output at every pixel (the
// conversion is then pointwise); a frame whose chroma is not all 128
// (swscale's grey of an HD matte goes through RGB, so chroma counts), a
// failed probe or another format go through swscale as before.
type lumaLUT struct {
	sf     astiav.PixelFormat
	w, h   int
	tab    [256]byte
	ok     bool // tab holds swscale's conversion
	probed bool // sf, w, h have been probed
	frames int  // frames converted through tab (for tests)
}

// grayLUT returns the table for frames like f (nil: use swscale). It
// probes once per format and size.
func (d *Decoder) grayLUT(f *astiav.Frame, matrix int) *[256]byte {
	l := &d.lumaLUT
	sf, w, h := f.PixelFormat(), f.Width(), f.Height()
	if sf != astiav.PixelFormatYuv420P {
		return nil
	}
	if !l.probed || l.sf != sf || l.w != w || l.h != h {
		*l = lumaLUT{sf: sf, w: w, h: h, probed: true}
		l.ok = d.probeLumaLUT(l, matrix) == nil
	}
	if !l.ok {
		return nil
	}
	return &l.tab
}

// probeLumaLUT converts two frames of l's format and size, with luma
// patterns that put every code at many positions and chroma patterns
// that differ, through the decoder's scaler, and fills l.tab when every
// output byte is the same function of its luma byte in both.
func (d *Decoder) probeLumaLUT(l *lumaLUT, matrix int) error {
	p := astiav.AllocFrame()
	if p == nil {
		return fmt.Errorf("codec: alloc frame: out of memory")
	}
	defer p.Free()
	p.SetPixelFormat(l.sf)
	p.SetWidth(l.w)
	p.SetHeight(l.h)
	if err := p.AllocBuffer(0); err != nil {
		return err
	}
	var seen [256]int16
	for i := range seen {
		seen[i] = -1
	}
	cw, chh := (l.w+1)/2, (l.h+1)/2 // yuv420p only
	for _, pat := range []func(x, y int) int{
		func(x, y int) int { return x + 3*y },
		func(x, y int) int { return 5*x + 11*y + 77 },
	} {
		yp, ys, err := planeOf(p, 0, l.h)
		if err != nil {
			return err
		}
		for y := range l.h {
			for x := range l.w {
				yp[y*ys+x] = byte(pat(x, y))
			}
		}
		for i := 1; i <= 2; i++ {
			cp, cs, err := planeOf(p, i, chh)
			if err != nil {
				return err
			}
			for y := range chh {
				for x := range cw {
					cp[y*cs+x] = 128
				}
			}
		}
		if err := d.scale(p, astiav.PixelFormatGray8, matrix, false, swsCoeffBT601, true); err != nil {
			return err
		}
		op, os, err := planeOf(d.tmp, 0, l.h)
		if err != nil {
			return err
		}
		for y := range l.h {
			for x := range l.w {
				c, v := yp[y*ys+x], op[y*os+x]
				if seen[c] < 0 {
					seen[c] = int16(v)
				} else if seen[c] != int16(v) {
					return fmt.Errorf("codec: %s to gray8 is not pointwise (code %d gives %d and %d)", l.sf.Name(), c, seen[c], v)
				}
			}
		}
	}
	for i, v := range seen {
		if v < 0 {
			return fmt.Errorf("codec: code %d not probed", i)
		}
		l.tab[i] = byte(v)
	}
	return nil
}

// greyChroma reports whether both chroma planes of the yuv420p frame f
// (d.preW x d.preH) are all 128.
func (d *Decoder) greyChroma(f *astiav.Frame) bool {
	cw, ch := (d.preW+1)/2, (d.preH+1)/2
	for i := 1; i <= 2; i++ {
		p, stride, err := planeOf(f, i, ch)
		if err != nil || stride < cw {
			return false
		}
		for y := range ch {
			r := p[y*stride:][:cw]
			x := 0
			for ; x+8 <= cw; x += 8 {
				if binary.LittleEndian.Uint64(r[x:]) != 0x8080808080808080 {
					return false
				}
			}
			for ; x < cw; x++ {
				if r[x] != 128 {
					return false
				}
			}
		}
	}
	return true
}

// lutPlane writes the luma plane of f (d.preW x d.preH) through tab
// into dst's plane 0, rotated by rot.
func (d *Decoder) lutPlane(dst *frame.HostFrame, f *astiav.Frame, tab *[256]byte, rot int) error {
	w, h := d.preW, d.preH
	p, stride, err := planeOf(f, 0, h)
	if err != nil {
		return fmt.Errorf("codec: decode: %v: %w", err, ErrCorrupt)
	}
	if stride < w {
		return fmt.Errorf("codec: decode: plane 0 stride %d < %d: %w", stride, w, ErrCorrupt)
	}
	out, os := dst.Planes[0], dst.Strides[0]
	if rot != 0 {
		if cap(d.gray) < w*h {
			d.gray = make([]byte, w*h)
		}
		out, os = d.gray[:w*h], w
	}
	for y := range h {
		bytemap.Map(out[y*os:][:w], p[y*stride:][:w], tab)
	}
	if rot != 0 {
		copyRotate(dst.Planes[0], dst.Strides[0], out, w, w, h, 1, 1, 0, rot)
	}
	d.lumaLUT.frames++
	return nil
}
