package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/asticode/go-astiav"
)

// Chromaticities are the CIE xy coordinates of a colour space's red,
// green and blue primaries and white point (the OpenEXR `chromaticities`
// attribute: rx, ry, gx, gy, bx, by, wx, wy).
type Chromaticities [8]float32

// The colour spaces an EXR output can be tagged with.
var (
	// Rec709Chromaticities are linear Rec.709 / sRGB primaries with a
	// D65 white: the working space of the render.
	Rec709Chromaticities = Chromaticities{0.64, 0.33, 0.30, 0.60, 0.15, 0.06, 0.3127, 0.3290}
	// ACEScgChromaticities are the ACES AP1 primaries with the ACES white.
	ACEScgChromaticities = Chromaticities{0.713, 0.293, 0.165, 0.830, 0.128, 0.044, 0.32168, 0.33767}
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
	if data, err = addChromaticities(data, img.Chromaticities); err != nil {
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

// exrLinesPerChunk are the scan lines per chunk of each OpenEXR
// compression (none, rle, zips, zip, piz, pxr24, b44, b44a).
var exrLinesPerChunk = [...]int{1, 1, 1, 16, 32, 16, 32, 32}

// addChromaticities inserts a `chromaticities` attribute at the end of a
// single-part scan-line EXR file's header and moves the offset table's
// entries by its length. A file that already has one is returned as it
// is.
func addChromaticities(data []byte, c Chromaticities) ([]byte, error) {
	hd, err := parseEXRHeader(data)
	if err != nil {
		return nil, err
	}
	if hd.multiOrTiled {
		return nil, fmt.Errorf("exr: version flags %#x: only single-part scan-line files are patched", data[5])
	}
	if hd.hasChroma {
		return data, nil
	}
	if hd.compression < 0 || hd.compression >= len(exrLinesPerChunk) || hd.yMax < hd.yMin {
		return nil, fmt.Errorf("exr: compression %d, data window rows %d..%d", hd.compression, hd.yMin, hd.yMax)
	}
	chunks := (hd.yMax - hd.yMin + exrLinesPerChunk[hd.compression]) / exrLinesPerChunk[hd.compression]
	var attr bytes.Buffer
	attr.WriteString("chromaticities\x00chromaticities\x00")
	_ = binary.Write(&attr, binary.LittleEndian, int32(32))
	_ = binary.Write(&attr, binary.LittleEndian, c)
	p := hd.end
	table := p + 1
	if table+8*chunks > len(data) {
		return nil, errors.New("exr: offset table runs past the end")
	}
	out := make([]byte, 0, len(data)+attr.Len())
	out = append(out, data[:p]...)
	out = append(out, attr.Bytes()...)
	out = append(out, data[p:]...)
	shift := uint64(attr.Len())
	for i := range chunks {
		o := out[table+attr.Len()+8*i:]
		binary.LittleEndian.PutUint64(o, binary.LittleEndian.Uint64(o)+shift)
	}
	return out, nil
}

// cString returns the NUL-terminated string at data[p:] (at most 255
// bytes, as OpenEXR names are) and the index after its NUL.
func cString(data []byte, p int) (string, int, error) {
	i := bytes.IndexByte(data[p:min(len(data), p+256)], 0)
	if i < 0 {
		return "", 0, errors.New("exr: header name without an end")
	}
	return string(data[p : p+i]), p + i + 1, nil
}
