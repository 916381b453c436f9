package codec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"

	"github.com/asticode/go-astiav"
	"github.com/vfxrender/vfx/frame"
)

// ForegroundOptions configure a ForegroundEncoder.
type ForegroundOptions struct {
	// Video selects ProRes 4444 (prores_ks, yuva444p10le) in a QuickTime
	// .mov; otherwise a single 8-bit RGBA PNG.
	Video bool
	// Width and Height are the picture size (even for video).
	Width, Height int
	// FrameRate and TimeBase are the source's, as for EncoderOptions
	// (video only; TimeBase 0 means 1/FrameRate).
	FrameRate, TimeBase Rational
	// PNGCompression is the zlib level of the PNG: 0 means fast.
	PNGCompression int
}

// ForegroundEncoder writes the relit subject with its matte, premultiplied
// (colour = colour × alpha): a PNG of RGBA for a still, ProRes 4444 with a
// 16-bit alpha plane for a video (10-bit colour, BT.709, limited range).
// A compositor lays it over any plate with an "over". Not safe for
// concurrent use.
type ForegroundEncoder struct {
	opts   ForegroundOptions
	path   string
	cc     *astiav.CodecContext
	fc     *astiav.FormatContext
	ioc    *astiav.IOContext
	st     *astiav.Stream
	pkt    *astiav.Packet
	frm    *astiav.Frame
	frames int
	last   int64
	closed bool
	err    error
}

// NewForegroundEncoder creates path and prepares it. For video it opens
// prores_ks with profile 4444 and writes the .mov header.
func NewForegroundEncoder(ctx context.Context, path string, opts ForegroundOptions) (_ *ForegroundEncoder, err error) {
	if err := ctxErr(ctx, "new foreground encoder"); err != nil {
		return nil, err
	}
	if opts.Width <= 0 || opts.Height <= 0 || opts.Width > maxOutputSide || opts.Height > maxOutputSide {
		return nil, fmt.Errorf("codec: new foreground encoder: size %dx%d out of range", opts.Width, opts.Height)
	}
	e := &ForegroundEncoder{opts: opts, path: path}
	if !opts.Video {
		return e, nil
	}
	defer func() {
		if err != nil {
			e.free()
			_ = os.Remove(path)
		}
	}()
	if err := e.openProRes(); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *ForegroundEncoder) openProRes() error {
	o := &e.opts
	if o.Width%2 != 0 || o.Height%2 != 0 {
		return fmt.Errorf("codec: new foreground encoder: size %dx%d must be even", o.Width, o.Height)
	}
	if !o.FrameRate.valid() {
		return fmt.Errorf("codec: new foreground encoder: frame rate %v invalid", o.FrameRate)
	}
	if o.TimeBase == (Rational{}) || o.TimeBase.Num == 0 {
		o.TimeBase = Rational{o.FrameRate.Den, o.FrameRate.Num}
	}
	c := astiav.FindEncoderByName("prores_ks")
	if c == nil {
		return errors.New("codec: new foreground encoder: prores_ks missing from this FFmpeg")
	}
	var err error
	if e.fc, err = astiav.AllocOutputFormatContext(nil, "mov", fileURL(e.path)); err != nil || e.fc == nil {
		return fmt.Errorf("codec: new foreground encoder: alloc mov muxer: %v", err)
	}
	if e.cc = astiav.AllocCodecContext(c); e.cc == nil {
		return errors.New("codec: new foreground encoder: alloc codec context: out of memory")
	}
	e.cc.SetPixelFormat(astiav.PixelFormatYuva444P10Le)
	e.cc.SetWidth(o.Width)
	e.cc.SetHeight(o.Height)
	e.cc.SetTimeBase(o.TimeBase.av())
	e.cc.SetFramerate(o.FrameRate.av())
	e.cc.SetSampleAspectRatio(astiav.NewRational(1, 1))
	if e.fc.OutputFormat().Flags().Has(astiav.IOFormatFlagGlobalheader) {
		e.cc.SetFlags(e.cc.Flags().Add(astiav.CodecContextFlagGlobalHeader))
	}
	d := astiav.NewDictionary()
	defer d.Free()
	for _, kv := range [][2]string{{"profile", "4444"}, {"alpha_bits", "16"}, {"vendor", "apl0"},
		{"colorspace", "bt709"}, {"color_primaries", "bt709"}, {"color_trc", "bt709"}, {"color_range", "tv"}} {
		if err := d.Set(kv[0], kv[1], 0); err != nil {
			return fmt.Errorf("codec: new foreground encoder: option %s: %w", kv[0], err)
		}
	}
	if err := e.cc.Open(c, d); err != nil {
		return fmt.Errorf("codec: new foreground encoder: open prores_ks: %w", err)
	}
	if e.st = e.fc.NewStream(nil); e.st == nil {
		return errors.New("codec: new foreground encoder: new stream: out of memory")
	}
	if err := e.st.CodecParameters().FromCodecContext(e.cc); err != nil {
		return fmt.Errorf("codec: new foreground encoder: stream parameters: %w", err)
	}
	e.st.SetTimeBase(o.TimeBase.av())
	e.st.SetAvgFrameRate(o.FrameRate.av())
	if e.pkt = astiav.AllocPacket(); e.pkt == nil {
		return errors.New("codec: new foreground encoder: alloc packet: out of memory")
	}
	if e.frm = astiav.AllocFrame(); e.frm == nil {
		return errors.New("codec: new foreground encoder: alloc frame: out of memory")
	}
	e.frm.SetPixelFormat(astiav.PixelFormatYuva444P10Le)
	e.frm.SetWidth(o.Width)
	e.frm.SetHeight(o.Height)
	setFrameBT709(e.frm, false)
	if err := e.frm.AllocBuffer(0); err != nil {
		return fmt.Errorf("codec: new foreground encoder: alloc frame: %w", err)
	}
	if e.ioc, err = openOutputFile(e.path); err != nil {
		return err
	}
	e.fc.SetPb(e.ioc)
	return writeHeader(e.fc, false)
}

// Write encodes one frame: col is the render (RGB24 for a still, limited
// range BT.709 YUV420P for a video) and alpha its Gray8 matte, both of the
// encoder's size. For video, col.PTS (in TimeBase) must increase. The
// first error is sticky.
func (e *ForegroundEncoder) Write(ctx context.Context, col, alpha *frame.HostFrame) error {
	if e.closed {
		return errClosed
	}
	if e.err != nil {
		return e.err
	}
	if err := ctxErr(ctx, "encode foreground"); err != nil {
		return err
	}
	want := frame.RGB24
	if e.opts.Video {
		want = frame.YUV420P
	}
	for _, f := range []*frame.HostFrame{col, alpha} {
		if err := f.Validate(); err != nil {
			return fmt.Errorf("codec: encode foreground: %w", err)
		}
		if f.Width != e.opts.Width || f.Height != e.opts.Height {
			return fmt.Errorf("codec: encode foreground: got %dx%d, encoder takes %dx%d", f.Width, f.Height, e.opts.Width, e.opts.Height)
		}
	}
	if col.Format != want || alpha.Format != frame.Gray8 {
		return fmt.Errorf("codec: encode foreground: got %v and %v, want %v and gray8", col.Format, alpha.Format, want)
	}
	if !e.opts.Video {
		if e.frames > 0 {
			return errors.New("codec: encode foreground: a png holds one frame")
		}
		e.err = e.writePNG(col, alpha)
		e.frames++
		return e.err
	}
	if e.frames > 0 && col.PTS <= e.last {
		return fmt.Errorf("codec: encode foreground: pts %d does not increase (previous %d)", col.PTS, e.last)
	}
	if err := makeWritable(e.frm); err != nil {
		e.err = fmt.Errorf("codec: encode foreground: frame: %w", err)
		return e.err
	}
	if err := e.fillYUVA(col, alpha); err != nil {
		e.err = err
		return err
	}
	e.frm.SetPts(col.PTS)
	if err := e.cc.SendFrame(e.frm); err != nil {
		e.err = fmt.Errorf("codec: encode foreground: send frame: %w", err)
		return e.err
	}
	e.frames++
	e.last = col.PTS
	if err := e.drain(); err != nil {
		e.err = err
		return err
	}
	return nil
}

// writePNG premultiplies the RGB by the matte and writes an RGBA PNG (the
// stored colour is the premultiplied one).
func (e *ForegroundEncoder) writePNG(col, alpha *frame.HostFrame) error {
	w, h := e.opts.Width, e.opts.Height
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		src := col.Planes[0][y*col.Strides[0]:]
		a := alpha.Planes[0][y*alpha.Strides[0]:]
		dst := img.Pix[y*img.Stride:]
		for x := range w {
			av := uint32(a[x])
			dst[4*x+0] = premul8(src[3*x+0], av)
			dst[4*x+1] = premul8(src[3*x+1], av)
			dst[4*x+2] = premul8(src[3*x+2], av)
			dst[4*x+3] = uint8(av)
		}
	}
	f, err := os.Create(e.path)
	if err != nil {
		return fmt.Errorf("codec: encode foreground: %w", err)
	}
	level := png.BestSpeed
	if e.opts.PNGCompression >= 6 {
		level = png.BestCompression
	}
	err = (&png.Encoder{CompressionLevel: level}).Encode(f, img)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(e.path)
		return fmt.Errorf("codec: encode foreground: write png: %w", err)
	}
	return nil
}

// premul8 is round(v × a / 255).
func premul8(v uint8, a uint32) uint8 { return uint8((uint32(v)*a + 127) / 255) }

// fillYUVA writes the premultiplied 10-bit planes: Y' = 64 + a(Y−64),
// C' = 512 + a(C−512) (the RGB → YUV matrix is affine, so premultiplying
// the RGB is scaling the offsets-free YUV), chroma upsampled by
// replication, alpha = round(a × 1023 / 255).
func (e *ForegroundEncoder) fillYUVA(col, alpha *frame.HostFrame) error {
	w, h := e.opts.Width, e.opts.Height
	var planes [4][]byte
	var strides [4]int
	for i := range planes {
		p, s, err := planeOf(e.frm, i, h)
		if err != nil {
			return fmt.Errorf("codec: encode foreground: %w", err)
		}
		planes[i], strides[i] = p, s
	}
	le := binary.LittleEndian
	for y := range h {
		ys := col.Planes[0][y*col.Strides[0]:]
		us := col.Planes[1][(y/2)*col.Strides[1]:]
		vs := col.Planes[2][(y/2)*col.Strides[2]:]
		as := alpha.Planes[0][y*alpha.Strides[0]:]
		yd, ud, vd, ad := planes[0][y*strides[0]:], planes[1][y*strides[1]:], planes[2][y*strides[2]:], planes[3][y*strides[3]:]
		for x := range w {
			a := int32(as[x])
			le.PutUint16(yd[2*x:], uint16(64+premul10(int32(ys[x])*4-64, a)))
			le.PutUint16(ud[2*x:], uint16(512+premul10(int32(us[x/2])*4-512, a)))
			le.PutUint16(vd[2*x:], uint16(512+premul10(int32(vs[x/2])*4-512, a)))
			le.PutUint16(ad[2*x:], uint16((a*1023+127)/255))
		}
	}
	return nil
}

// premul10 is round(v × a / 255) for a signed v.
func premul10(v, a int32) int32 {
	p := v * a
	if p >= 0 {
		return (p + 127) / 255
	}
	return -((-p + 127) / 255)
}

func (e *ForegroundEncoder) drain() error {
	for {
		err := e.cc.ReceivePacket(e.pkt)
		if errors.Is(err, astiav.ErrEagain) || errors.Is(err, astiav.ErrEof) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("codec: encode foreground: receive packet: %w", err)
		}
		if e.pkt.Duration() <= 0 {
			fr := e.opts.FrameRate
			e.pkt.SetDuration(astiav.RescaleQ(1, astiav.NewRational(fr.Den, fr.Num), e.opts.TimeBase.av()))
		}
		e.pkt.SetStreamIndex(e.st.Index())
		e.pkt.RescaleTs(e.opts.TimeBase.av(), e.st.TimeBase())
		if err := e.fc.WriteInterleavedFrame(e.pkt); err != nil {
			return fmt.Errorf("codec: encode foreground: write packet: %w", err)
		}
	}
}

// Close flushes the encoder, writes the trailer and closes the file. It
// reports the first error of the encoder's life (and a file with no frame
// written); calling it again returns nil.
func (e *ForegroundEncoder) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	defer e.free()
	err := e.err
	if err == nil && e.frames == 0 {
		err = errors.New("codec: close foreground encoder: no frame written")
	}
	if err == nil && e.opts.Video {
		if err = e.cc.SendFrame(nil); err != nil {
			err = fmt.Errorf("codec: close foreground encoder: flush: %w", err)
		} else if err = e.drain(); err == nil {
			if werr := e.fc.WriteTrailer(); werr != nil {
				err = fmt.Errorf("codec: close foreground encoder: write trailer: %w", werr)
			}
		}
	}
	if e.ioc != nil {
		if cerr := e.ioc.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("codec: close foreground encoder: close file: %w", cerr)
		}
		e.ioc = nil
	}
	return err
}

func (e *ForegroundEncoder) free() {
	if e.frm != nil {
		e.frm.Free()
		e.frm = nil
	}
	if e.pkt != nil {
		e.pkt.Free()
		e.pkt = nil
	}
	if e.cc != nil {
		e.cc.Free()
		e.cc = nil
	}
	if e.ioc != nil {
		_ = e.ioc.Close()
		e.ioc = nil
	}
	if e.fc != nil {
		e.fc.Free()
		e.fc = nil
	}
}
