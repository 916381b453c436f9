package codec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/asticode/go-astiav"
	"github.com/vfxrender/vfx/codec/exr"
)

// Chromaticities are the CIE xy coordinates of a colour space's red,
// green and blue primaries and white point (the OpenEXR `chromaticities`
// attribute: rx, ry, gx, gy, bx, by, wx, wy).
type Chromaticities = exr.Chromaticities

// The colour spaces an EXR output can be tagged with.
var (
	// Rec709Chromaticities are linear Rec.709 / sRGB primaries with a
	// D65 white: the working space of the render.
	Rec709Chromaticities = exr.Rec709
	// ACEScgChromaticities are the ACES AP1 primaries with the ACES white.
	ACEScgChromaticities = exr.ACEScg
)

// EXRImage is one linear-light image for WriteEXR.
type EXRImage struct {
	Width, Height int
	// Channels are 1 (written as the channel Y), 3 (R, G, B) or 4 (R, G,
	// B, A) planes of Width*Height values, row-major.
	Channels [][]float32
	// Chromaticities are written as the file's `chromaticities`
	// attribute. The values are stored as given: converting to another
	// colour space is the caller's.
	Chromaticities Chromaticities
}

// WriteEXR writes img to path as a half-float, ZIP-compressed (16-line
// blocks) scan-line OpenEXR file through FFmpeg's own EXR encoder, with
// the `chromaticities` attribute added to its header (FFmpeg 5.1 writes
// none). Values are stored as given (linear light). It returns an error
// for a bad shape, an encoder failure or a failed write; it checks ctx
// before starting.
func WriteEXR(ctx context.Context, path string, img EXRImage) error {
	if err := ctxErr(ctx, "write exr"); err != nil {
		return err
	}
	w, h := img.Width, img.Height
	if w <= 0 || h <= 0 || w > 16384 || h > 16384 {
		return fmt.Errorf("codec: write exr: size %dx%d out of range", w, h)
	}
	var pf astiav.PixelFormat
	var order []int // FFmpeg plane i holds img.Channels[order[i]]
	switch len(img.Channels) {
	case 1:
		pf, order = astiav.PixelFormatGrayf32Le, []int{0}
	case 3:
		pf, order = astiav.PixelFormatGbrpf32Le, []int{1, 2, 0}
	case 4:
		pf, order = astiav.PixelFormatGbrapf32Le, []int{1, 2, 0, 3}
	default:
		return fmt.Errorf("codec: write exr: %d channels, want 1, 3 or 4", len(img.Channels))
	}
	for i, c := range img.Channels {
		if len(c) != w*h {
			return fmt.Errorf("codec: write exr: channel %d has %d values, want %d", i, len(c), w*h)
		}
	}
	data, err := encodeEXR(w, h, pf, order, img.Channels)
	if err != nil {
		return err
	}
	if data, err = exr.AddChromaticities(data, img.Chromaticities); err != nil {
		return fmt.Errorf("codec: write exr: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("codec: write exr: %w", err)
	}
	return nil
}

// encodeEXR runs FFmpeg's EXR encoder on one frame and returns the file's
// bytes (an EXR image is one packet).
func encodeEXR(w, h int, pf astiav.PixelFormat, order []int, chans [][]float32) ([]byte, error) {
	c := astiav.FindEncoderByName("exr")
	if c == nil {
		return nil, errors.New("codec: write exr: the exr encoder is missing from this FFmpeg")
	}
	cc := astiav.AllocCodecContext(c)
	if cc == nil {
		return nil, errors.New("codec: write exr: alloc codec context: out of memory")
	}
	defer cc.Free()
	cc.SetPixelFormat(pf)
	cc.SetWidth(w)
	cc.SetHeight(h)
	cc.SetTimeBase(astiav.NewRational(1, 24))
	cc.SetThreadCount(1)
	d := astiav.NewDictionary()
	defer d.Free()
	for _, kv := range [][2]string{{"compression", "zip16"}, {"format", "half"}} {
		if err := d.Set(kv[0], kv[1], 0); err != nil {
			return nil, fmt.Errorf("codec: write exr: option %s: %w", kv[0], err)
		}
	}
	if err := cc.Open(c, d); err != nil {
		return nil, fmt.Errorf("codec: write exr: open encoder: %w", err)
	}
	f := astiav.AllocFrame()
	if f == nil {
		return nil, errors.New("codec: write exr: alloc frame: out of memory")
	}
	defer f.Free()
	f.SetPixelFormat(pf)
	f.SetWidth(w)
	f.SetHeight(h)
	if err := f.AllocBuffer(0); err != nil {
		return nil, fmt.Errorf("codec: write exr: alloc frame: %w", err)
	}
	for i, k := range order {
		plane, stride, err := planeOf(f, i, h)
		if err != nil {
			return nil, fmt.Errorf("codec: write exr: %w", err)
		}
		src := chans[k]
		for y := range h {
			row := plane[y*stride:]
			for x, v := range src[y*w : (y+1)*w] {
				binary.LittleEndian.PutUint32(row[4*x:], math.Float32bits(v))
			}
		}
	}
	if err := cc.SendFrame(f); err != nil {
		return nil, fmt.Errorf("codec: write exr: send frame: %w", err)
	}
	if err := cc.SendFrame(nil); err != nil {
		return nil, fmt.Errorf("codec: write exr: flush: %w", err)
	}
	pkt := astiav.AllocPacket()
	if pkt == nil {
		return nil, errors.New("codec: write exr: alloc packet: out of memory")
	}
	defer pkt.Free()
	if err := cc.ReceivePacket(pkt); err != nil {
		return nil, fmt.Errorf("codec: write exr: receive packet: %w", err)
	}
	defer pkt.Unref()
	return pkt.Data(), nil
}
