package codec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/asticode/go-astiav"
	"github.com/vfxrender/vfx/frame"
)

// maxOutputSide bounds the decoder's output width and height.
const maxOutputSide = 16384

// errClosed is returned by methods called after Close.
var errClosed = errors.New("codec: use after close")

// DecodeOptions choose what Decoder.Next produces.
type DecodeOptions struct {
	// Format is the output layout: YUV420P (the default for video), RGB24
	// (the default for images), or Gray8 or Gray16 (a matte at 8 or 16
	// bits; see Decoder.Next).
	Format frame.PixelFormat
	// Width and Height are the output size after rotation. 0,0 means the
	// display size; when only one is 0 it follows the display aspect.
	// Scaling uses swscale: Lanczos when the output has fewer pixels than
	// the source (it widens its kernel with the factor, so it antialiases
	// like an area filter while staying sharp on mild reductions), bicubic
	// otherwise; full chroma interpolation always (SWS_ACCURATE_RND is left
	// off: it disables the SIMD paths, 5x slower for a rounding difference
	// of at most 1).
	Width, Height int
	// Threads is the video decoder's thread count: 0 lets FFmpeg choose
	// (frame and slice threading over every core), 1 decodes on the
	// calling thread only (less memory and no hand-off between threads,
	// for a stream that a pipeline decodes beside other work).
	Threads int
}

// Decoder streams the frames of one source as frame.HostFrame. It is not
// safe for concurrent use; separate Decoders are independent.
type Decoder struct {
	src        *source
	lim        Limits
	info       Info
	format     frame.PixelFormat
	outW, outH int // after rotation
	preW, preH int // before rotation
	flags      int
	frm        *astiav.Frame // decoded picture
	tmp        *astiav.Frame // converted picture
	tmpFmt     astiav.PixelFormat
	tmpW, tmpH int
	gray       []byte          // an RGB source's matte before rotation
	narrow     frame.HostFrame // the Gray8 matte of an 8-bit source, for Gray16 output
	sws        scaler
	lumaLUT    lumaLUT // a limited-range yuv420p matte's conversion
	count      int
	closed     bool
}

// NewDecoder probes in exactly as Probe does (limits enforced before any
// frame is decoded) and prepares to decode it with frame and slice
// threading. Errors are those of Probe, plus invalid options. ctx bounds
// the probe only; each Next takes its own.
func NewDecoder(ctx context.Context, in Input, lim Limits, opts DecodeOptions) (_ *Decoder, err error) {
	lim = lim.withDefaults()
	if opts.Width < 0 || opts.Height < 0 || opts.Width > maxOutputSide || opts.Height > maxOutputSide {
		return nil, fmt.Errorf("codec: new decoder: output size %dx%d out of range", opts.Width, opts.Height)
	}
	if opts.Threads < 0 || opts.Threads > 1 {
		return nil, fmt.Errorf("codec: new decoder: threads %d: want 0 (automatic) or 1", opts.Threads)
	}
	switch opts.Format {
	case 0, frame.YUV420P, frame.RGB24, frame.Gray8, frame.Gray16:
	default:
		return nil, fmt.Errorf("codec: new decoder: output format %v not supported", opts.Format)
	}
	s, err := openSource(ctx, in, lim, true)
	if err != nil {
		return nil, err
	}
	d := &Decoder{src: s, lim: lim, info: s.info, format: opts.Format}
	defer func() {
		if err != nil {
			_ = d.Close()
		}
	}()
	if d.format == 0 {
		d.format = frame.RGB24
		if d.info.Kind == KindVideo {
			d.format = frame.YUV420P
		}
	}
	dw, dh := d.info.DisplayWidth, d.info.DisplayHeight
	d.outW, d.outH = opts.Width, opts.Height
	switch {
	case d.outW == 0 && d.outH == 0:
		d.outW, d.outH = dw, dh
	case d.outW == 0:
		d.outW = max(1, int(math.Round(float64(d.outH)*float64(dw)/float64(dh))))
	case d.outH == 0:
		d.outH = max(1, int(math.Round(float64(d.outW)*float64(dh)/float64(dw))))
	}
	if d.outW > maxOutputSide || d.outH > maxOutputSide {
		return nil, fmt.Errorf("codec: new decoder: output size %dx%d out of range", d.outW, d.outH)
	}
	d.preW, d.preH = rotSize(d.outW, d.outH, d.info.Rotation)
	d.flags = swsBicubic
	if d.preW*d.preH < d.info.Width*d.info.Height {
		d.flags = swsLanczos
	}
	d.flags |= swsFullChrHInt | swsFullChrHInp
	if d.info.Kind == KindVideo {
		if s.dec, err = openDecodeLoop(s.dm, s.stream, lim, opts.Threads != 1); err != nil {
			return nil, err
		}
	}
	if d.frm = astiav.AllocFrame(); d.frm == nil {
		return nil, errors.New("codec: alloc frame: out of memory")
	}
	if d.tmp = astiav.AllocFrame(); d.tmp == nil {
		return nil, errors.New("codec: alloc frame: out of memory")
	}
	return d, nil
}

// Info returns the source's description (the same as Probe's).
func (d *Decoder) Info() Info { return d.info }

// Next decodes the next frame into dst, setting dst's Format, Width and
// Height and reusing its planes through dst.Alloc. It returns io.EOF after
// the last frame (an image has exactly one).
//
// The picture is rotated by Info().Rotation and scaled to the requested
// size. 10-bit sources are reduced to 8 bits (but for Gray16 output).
// PTS is the frame's presentation time in Info().TimeBase (0 for images).
// For YUV420P output the source's matrix is kept (dst.ColorSpace =
// Info().ColorSpace) and
// dst.FullRange tells the truth about the planes: full-range sources stay
// full range, RGB sources become limited-range YUV. RGB24 output is full
// range sRGB converted with the source's matrix; any alpha is dropped.
//
// Gray8 and Gray16 output is a matte (full range, 255 or 65535 = keep):
//   - from a source with an alpha channel (RGBA, grey+alpha, YUVA), the
//     alpha, unless it is fully opaque (each video frame on its own); on an
//     image also unless it is fully transparent;
//   - otherwise the luminance: Rec.709 weights on the code values of RGB
//     (and palette) sources, the Y of YUV sources (their own matrix; a
//     JPEG's is BT.601), expanded to full range when limited.
//
// Gray16 keeps a 16-bit source's precision (and the resampling's); from
// an 8-bit source it is exactly the Gray8 matte times 257. Gray8 rounds to
// 8 bits.
//
// Errors: ErrCorrupt for undecodable data or a frame size change,
// *LimitError (ErrTooManyFrames) when the stream holds more frames than
// Limits.MaxFrames, the context's error when ctx ends.
func (d *Decoder) Next(ctx context.Context, dst *frame.HostFrame) error {
	if d.closed {
		return errClosed
	}
	if dst == nil {
		return errors.New("codec: decode: nil destination frame")
	}
	if err := ctxErr(ctx, "decode"); err != nil {
		return err
	}
	var f *astiav.Frame
	var pts int64
	if d.info.Kind == KindImage {
		if d.count > 0 || d.src.first == nil {
			return io.EOF
		}
		f = d.src.first
	} else {
		if err := d.src.dec.next(ctx, d.frm); err != nil {
			return err
		}
		f = d.frm
		pts = framePTS(f)
		if pts == math.MinInt64 { // AV_NOPTS_VALUE: derive from the index
			pts = 0
			if fr := d.info.FrameRate; fr.valid() && d.info.TimeBase.valid() {
				pts = astiav.RescaleQ(int64(d.count), astiav.NewRational(fr.Den, fr.Num), d.info.TimeBase.av())
			}
		}
	}
	d.count++
	if err := d.lim.checkFrames(d.count, true); err != nil {
		f.Unref()
		return err
	}
	err := d.convert(f, dst)
	f.Unref()
	if err != nil {
		return err
	}
	dst.PTS = pts
	return nil
}

func (d *Decoder) convert(f *astiav.Frame, dst *frame.HostFrame) error {
	sw, sh, sf := f.Width(), f.Height(), f.PixelFormat()
	if sw != d.info.Width || sh != d.info.Height {
		return fmt.Errorf("codec: decode: frame size changed from %dx%d to %dx%d: %w",
			d.info.Width, d.info.Height, sw, sh, ErrCorrupt)
	}
	srcFull := d.info.FullRange || f.ColorRange() == astiav.ColorRangeJpeg || isJPEGFormat(sf)
	rgbSrc := pixFmtIsRGB(sf)
	dst.Format, dst.Width, dst.Height = d.format, d.outW, d.outH
	if err := dst.Alloc(); err != nil {
		return fmt.Errorf("codec: decode: %w", err)
	}
	dst.ColorSpace, dst.FullRange = d.info.ColorSpace, true
	same := sw == d.preW && sh == d.preH
	rot := d.info.Rotation
	matrix := d.src.srcCoeff
	switch d.format {
	case frame.YUV420P:
		dst.FullRange = srcFull && !rgbSrc
		src := f
		if !(same && (sf == astiav.PixelFormatYuv420P || sf == astiav.PixelFormatYuvj420P)) {
			dcs := matrix
			if rgbSrc {
				dcs = swsCoeffBT601
				if d.info.ColorSpace == frame.BT709 {
					dcs = swsCoeffBT709
				}
			}
			if err := d.scale(f, astiav.PixelFormatYuv420P, matrix, srcFull, dcs, dst.FullRange); err != nil {
				return err
			}
			src = d.tmp
		}
		for i := 0; i < 3; i++ {
			pw, ph := d.preW, d.preH
			if i > 0 {
				pw, ph = (pw+1)/2, (ph+1)/2
			}
			if err := d.copyPlane(dst, i, src, i, pw, ph, 1, 1, 0, rot); err != nil {
				return err
			}
		}
	case frame.RGB24:
		src := f
		if !(same && sf == astiav.PixelFormatRgb24) {
			if err := d.scale(f, astiav.PixelFormatRgb24, matrix, srcFull, matrix, true); err != nil {
				return err
			}
			src = d.tmp
		}
		return d.copyPlane(dst, 0, src, 0, d.preW, d.preH, 3, 3, 0, rot)
	case frame.Gray8, frame.Gray16:
		return d.convertMatte(f, dst, same, srcFull, rgbSrc, matrix)
	}
	return nil
}

// convertMatte writes the matte of f into dst (Gray8 or Gray16; see
// Decoder.Next for the rule). A source of 8 bits or fewer gets the Gray8
// matte widened exactly (255 becomes 65535), as swscale's 8 to 16 bit
// conversions stop a little short of full scale.
func (d *Decoder) convertMatte(f *astiav.Frame, dst *frame.HostFrame, same, srcFull, rgbSrc bool, matrix int) error {
	if d.format != frame.Gray16 || pixFmtDepth(f.PixelFormat()) > 8 {
		return d.matte(f, dst, d.format == frame.Gray16, same, srcFull, rgbSrc, matrix)
	}
	g := &d.narrow
	g.Format, g.Width, g.Height = frame.Gray8, dst.Width, dst.Height
	if err := g.Alloc(); err != nil {
		return fmt.Errorf("codec: decode: %w", err)
	}
	if err := d.matte(f, g, false, same, srcFull, rgbSrc, matrix); err != nil {
		return err
	}
	widen(dst.Planes[0], dst.Strides[0], g.Planes[0], g.Strides[0], g.Width, g.Height)
	return nil
}

// matte writes the matte of f into dst, 16-bit little-endian samples
// when wide, else 8-bit.
func (d *Decoder) matte(f *astiav.Frame, dst *frame.HostFrame, wide, same, srcFull, rgbSrc bool, matrix int) error {
	sf, rot := f.PixelFormat(), d.info.Rotation
	grayFmt, yaFmt, rgbaFmt, size := astiav.PixelFormatGray8, astiav.PixelFormatYa8, astiav.PixelFormatRgba, 1
	if wide {
		grayFmt, yaFmt, rgbaFmt, size = astiav.PixelFormatGray16Le, astiav.PixelFormatYa16Le, astiav.PixelFormatRgba64Le, 2
	}
	// An image's alpha that is all transparent holds no matte either: its
	// colour does (or nothing, which a caller may refuse). A video frame's
	// may be a subject that left the frame.
	useAlpha := func(p []byte, stride, bpp, ch int) bool {
		opaque, clear := alphaExtremes(p, stride, d.preW, d.preH, bpp, ch, size)
		return !opaque && !(clear && d.info.Kind == KindImage)
	}
	if rgbSrc || sf == astiav.PixelFormatPal8 {
		// RGB and palette sources: alpha and Rec.709 luminance from RGBA
		// here (swscale's RGB to grey is biased at 16 bits, its 8-bit
		// alpha off by a code).
		src := f
		if !(same && sf == rgbaFmt) {
			if err := d.scale(f, rgbaFmt, matrix, srcFull, matrix, true); err != nil {
				return err
			}
			src = d.tmp
		}
		p, stride, err := planeOf(src, 0, d.preH)
		if err != nil {
			return fmt.Errorf("codec: decode: %v: %w", err, ErrCorrupt)
		}
		n := size * d.preW * d.preH
		if cap(d.gray) < n {
			d.gray = make([]byte, n)
		}
		g := d.gray[:n]
		matteOfRGBA(g, size*d.preW, p, stride, d.preW, d.preH, size, useAlpha(p, stride, 4*size, 3*size))
		copyRotate(dst.Planes[0], dst.Strides[0], g, size*d.preW, d.preW, d.preH, size, size, 0, rot)
		return nil
	}
	if pixFmtHasAlpha(sf) {
		src := f
		if !(same && sf == yaFmt) {
			if err := d.scale(f, yaFmt, matrix, srcFull, swsCoeffBT601, true); err != nil {
				return err
			}
			src = d.tmp
		}
		p, stride, err := planeOf(src, 0, d.preH)
		if err != nil {
			return fmt.Errorf("codec: decode: %v: %w", err, ErrCorrupt)
		}
		ch := 0
		if useAlpha(p, stride, 2*size, size) {
			ch = size
		}
		return d.copyPlane(dst, 0, src, 0, d.preW, d.preH, 2*size, size, ch, rot)
	}
	src := f
	direct := same && (sf == grayFmt || (!wide && srcFull && isPlanarYUV8(sf)))
	if !direct && !wide && same && !srcFull {
		if tab := d.grayLUT(f, matrix); tab != nil && d.greyChroma(f) {
			return d.lutPlane(dst, f, tab, rot)
		}
	}
	if !direct {
		if err := d.scale(f, grayFmt, matrix, srcFull, swsCoeffBT601, true); err != nil {
			return err
		}
		src = d.tmp
	}
	return d.copyPlane(dst, 0, src, 0, d.preW, d.preH, size, size, 0, rot)
}

func isPlanarYUV8(pf astiav.PixelFormat) bool {
	switch pf.Name() {
	case "yuv420p", "yuvj420p", "yuv422p", "yuvj422p", "yuv444p", "yuvj444p", "yuv440p", "yuvj440p":
		return true
	}
	return false
}

// scale converts f into d.tmp (format pf, the pre-rotation output size).
func (d *Decoder) scale(f *astiav.Frame, pf astiav.PixelFormat, scs int, sfull bool, dcs int, dfull bool) error {
	if d.tmpFmt != pf || d.tmpW != d.preW || d.tmpH != d.preH {
		d.tmp.Unref()
		d.tmpFmt = astiav.PixelFormatNone
		d.tmp.SetPixelFormat(pf)
		d.tmp.SetWidth(d.preW)
		d.tmp.SetHeight(d.preH)
		if err := d.tmp.AllocBuffer(0); err != nil {
			return fmt.Errorf("codec: decode: alloc frame: %w", err)
		}
		d.tmpFmt, d.tmpW, d.tmpH = pf, d.preW, d.preH
	}
	err := d.sws.get(scalerParams{sw: f.Width(), sh: f.Height(), sf: f.PixelFormat(), dw: d.preW, dh: d.preH, df: pf,
		flags: d.flags, scs: scs, sfull: sfull, dcs: dcs, dfull: dfull})
	if err == nil {
		err = d.sws.scale(f, d.tmp)
	}
	if err != nil {
		return fmt.Errorf("codec: decode: scale: %v: %w", err, ErrCorrupt)
	}
	return nil
}

// copyPlane copies plane sp of f (pw x ph pixels of sbpp bytes before
// rotation) into plane dp of dst, rotating.
func (d *Decoder) copyPlane(dst *frame.HostFrame, dp int, f *astiav.Frame, sp, pw, ph, sbpp, dbpp, ch, rot int) error {
	p, stride, err := planeOf(f, sp, ph)
	if err != nil {
		return fmt.Errorf("codec: decode: %v: %w", err, ErrCorrupt)
	}
	if stride < pw*sbpp {
		return fmt.Errorf("codec: decode: plane %d stride %d < %d: %w", sp, stride, pw*sbpp, ErrCorrupt)
	}
	copyRotate(dst.Planes[dp], dst.Strides[dp], p, stride, pw, ph, sbpp, dbpp, ch, rot)
	return nil
}

// Close frees the decoder's FFmpeg state and closes the input. It is
// idempotent and always returns nil.
func (d *Decoder) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	if d.frm != nil {
		d.frm.Free()
		d.frm = nil
	}
	if d.tmp != nil {
		d.tmp.Free()
		d.tmp = nil
	}
	d.sws.free()
	if d.src != nil {
		d.src.close()
		d.src = nil
	}
	return nil
}
