package codec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/asticode/go-astiav"
	"github.com/vfxrender/vfx/codec/exr"
	"github.com/vfxrender/vfx/frame"
)

// IsEXR reports whether the file at path starts with the OpenEXR magic
// number (content, not the name).
func IsEXR(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	n, _ := f.Read(b[:])
	return n == 4 && bytes.Equal(b[:], exr.Magic)
}

// SequenceOptions describe an image sequence for WriteSequenceVideo.
type SequenceOptions struct {
	// FrameRate of the video (required).
	FrameRate Rational
	// Gray keeps one channel (a matte): the frames' grey level (an EXR's
	// Y, else its R) becomes the luma of a grey video.
	Gray bool
}

// WriteSequenceVideo reads the still images files, in order (PNG 8 or
// 16-bit, JPEG, WebP, by content; or OpenEXR, read as linear light), and
// writes them as one lossless H.264 MP4 (qp 0, BT.709, limited range) at
// opts.FrameRate, the form every job takes. The frame count is checked
// against lim before anything is read and the first frame's size before
// any frame is decoded; every frame must have the first one's size, which
// must be even. An EXR frame's `chromaticities` are honoured (converted to
// linear Rec.709, D65, by a Bradford adaptation); without the attribute
// Rec.709 primaries are assumed; the values are then encoded with the
// sRGB curve, the render's working transfer, and rounded to 8 bits (as
// PNG frames are). ctx is checked between frames.
func WriteSequenceVideo(ctx context.Context, files []string, out string, lim Limits, opts SequenceOptions) error {
	lim = lim.withDefaults()
	if len(files) == 0 {
		return fmt.Errorf("codec: sequence: no frames: %w", ErrCorrupt)
	}
	if err := lim.checkFrames(len(files), false); err != nil {
		return err
	}
	if !opts.FrameRate.valid() {
		return fmt.Errorf("codec: sequence: frame rate %v invalid", opts.FrameRate)
	}
	format := frame.RGB24
	if opts.Gray {
		format = frame.Gray8
	}
	var enc *Encoder
	defer func() {
		if enc != nil {
			enc.Close()
		}
	}()
	w, h := 0, 0
	for i, path := range files {
		if err := ctxErr(ctx, "sequence"); err != nil {
			return err
		}
		f, err := readStill(ctx, path, lim, format)
		if err != nil {
			return fmt.Errorf("codec: sequence frame %d (%s): %w", i, path, err)
		}
		if enc == nil {
			w, h = f.Width, f.Height
			if w%2 != 0 || h%2 != 0 {
				return fmt.Errorf("codec: sequence: frames are %dx%d, must be even: %w", w, h, ErrUnsupportedFormat)
			}
			enc, err = NewEncoder(ctx, out, EncoderOptions{Container: "mp4", Width: w, Height: h, Input: format, Gray: opts.Gray,
				FrameRate: opts.FrameRate, TimeBase: Rational{opts.FrameRate.Den, opts.FrameRate.Num},
				ColorSpace: frame.BT709, Preset: "ultrafast", CRF: 1, X264Params: "qp=0"})
			if err != nil {
				return fmt.Errorf("codec: sequence: %w", err)
			}
		}
		if f.Width != w || f.Height != h {
			return fmt.Errorf("codec: sequence frame %d (%s) is %dx%d, the first %dx%d: %w", i, path, f.Width, f.Height, w, h, ErrCorrupt)
		}
		f.PTS = int64(i)
		if err := enc.Write(ctx, f); err != nil {
			return fmt.Errorf("codec: sequence: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("codec: sequence: %w", err)
	}
	enc = nil
	return nil
}

// readStill decodes one still image file into format (RGB24 or Gray8).
func readStill(ctx context.Context, path string, lim Limits, format frame.PixelFormat) (*frame.HostFrame, error) {
	if IsEXR(path) {
		return readEXRFrame(path, lim, format)
	}
	dec, err := NewDecoder(ctx, FileInput(path), lim, DecodeOptions{Format: format})
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	if dec.Info().Kind != KindImage {
		return nil, fmt.Errorf("codec: a sequence frame must be a still image, not a %s: %w", dec.Info().Kind, ErrUnsupportedFormat)
	}
	f := &frame.HostFrame{}
	if err := dec.Next(ctx, f); err != nil {
		return nil, err
	}
	return f, nil
}

// readEXRFrame decodes an EXR file with FFmpeg's decoder as linear
// light, converts its primaries to Rec.709 and encodes it with the sRGB
// curve into an 8-bit frame (RGB24, or Gray8 from Y or R).
func readEXRFrame(path string, lim Limits, format frame.PixelFormat) (*frame.HostFrame, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("codec: read exr: %w", err)
	}
	hd, err := exr.ParseHeader(data)
	if err != nil {
		return nil, fmt.Errorf("codec: read exr: %w: %w", err, ErrCorrupt)
	}
	if w, h := hd.XMax-hd.XMin+1, hd.YMax-hd.YMin+1; w > 0 && h > 0 {
		if err := lim.checkSize(w, h, w, h); err != nil {
			return nil, err
		}
	}
	c := astiav.FindDecoderByName("exr")
	if c == nil {
		return nil, errors.New("codec: read exr: the exr decoder is missing from this FFmpeg")
	}
	cc := astiav.AllocCodecContext(c)
	if cc == nil {
		return nil, errors.New("codec: read exr: alloc codec context: out of memory")
	}
	defer cc.Free()
	cc.SetThreadCount(1)
	if err := cc.Open(c, nil); err != nil {
		return nil, fmt.Errorf("codec: read exr: open decoder: %w", err)
	}
	pkt := astiav.AllocPacket()
	if pkt == nil {
		return nil, errors.New("codec: read exr: alloc packet: out of memory")
	}
	defer pkt.Free()
	if err := pkt.FromData(data); err != nil {
		return nil, fmt.Errorf("codec: read exr: %w", err)
	}
	if err := cc.SendPacket(pkt); err != nil {
		return nil, fmt.Errorf("codec: read exr: decode: %w: %w", err, ErrCorrupt)
	}
	fr := astiav.AllocFrame()
	if fr == nil {
		return nil, errors.New("codec: read exr: alloc frame: out of memory")
	}
	defer fr.Free()
	if err := cc.ReceiveFrame(fr); err != nil {
		return nil, fmt.Errorf("codec: read exr: decode: %w: %w", err, ErrCorrupt)
	}
	w, h := fr.Width(), fr.Height()
	if err := lim.checkSize(w, h, w, h); err != nil {
		return nil, err
	}
	var order []int // FFmpeg plane of R, G, B
	switch fr.PixelFormat() {
	case astiav.PixelFormatGbrpf32Le, astiav.PixelFormatGbrapf32Le:
		order = []int{2, 0, 1}
	case astiav.PixelFormatGrayf32Le:
		order = []int{0, 0, 0}
	default:
		return nil, fmt.Errorf("codec: read exr: decoded as %s: %w", fr.PixelFormat().Name(), ErrUnsupportedFormat)
	}
	var planes [3][]byte
	var strides [3]int
	for i, k := range order {
		if planes[i], strides[i], err = planeOf(fr, k, h); err != nil {
			return nil, fmt.Errorf("codec: read exr: %w", err)
		}
	}
	m, identity := [3][3]float64{}, true
	if hd.HasChroma {
		m, identity = exr.ToRec709(hd.Chroma)
	}
	out, err := frame.New(format, w, h)
	if err != nil {
		return nil, fmt.Errorf("codec: read exr: %w", err)
	}
	out.ColorSpace, out.FullRange = frame.BT709, true
	exr.ToSRGB8(out, planes, strides, m, identity)
	return out, nil
}

// EXRHeaderSize reads the data window of a single-part scanline OpenEXR
// file from its leading bytes (the header: a few hundred bytes), without
// decoding anything: the frame's width and height.
func EXRHeaderSize(head []byte) (w, h int, err error) {
	hd, err := exr.ParseHeader(head)
	if err != nil {
		return 0, 0, fmt.Errorf("codec: %w: %w", err, ErrCorrupt)
	}
	if hd.MultiOrTiled {
		return 0, 0, fmt.Errorf("codec: exr: tiled, deep or multi-part files are not read: %w", ErrUnsupportedFormat)
	}
	w, h = hd.XMax-hd.XMin+1, hd.YMax-hd.YMin+1
	if w <= 0 || h <= 0 {
		return 0, 0, fmt.Errorf("codec: exr: data window %d,%d-%d,%d: %w", hd.XMin, hd.YMin, hd.XMax, hd.YMax, ErrCorrupt)
	}
	return w, h, nil
}
