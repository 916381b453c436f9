package codec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/asticode/go-astiav"
	"github.com/vfxrender/vfx/frame"
)

// EncoderOptions configure an Encoder.
type EncoderOptions struct {
	// Container is "mp4" (H.264 through libx264, yuv420p) or "png".
	Container string
	// Width and Height are the picture size (even for mp4).
	Width, Height int
	// Input is the layout Write receives: YUV420P, RGB24 or Gray8 (Gray8
	// input always makes a grey output, as Gray does).
	Input frame.PixelFormat
	// Gray makes an alpha output: mp4 gets yuv420p whose luma is the matte
	// and chroma 128, tagged full range so that 0..255 round-trips; png
	// gets an 8-bit grey PNG. The matte is the Gray8 input, the Y plane of
	// YUV420P input, or the BT.601 luma of RGB24 input.
	Gray bool
	// FrameRate and TimeBase are the source's; Write's PTS are in TimeBase
	// and are kept (same count, same timestamps). TimeBase 0 means
	// 1/FrameRate. Required for mp4.
	FrameRate, TimeBase Rational
	// ColorSpace and FullRange tag the mp4 stream, and are the matrix and
	// range used to convert RGB24 input. YUV420P input is passed through:
	// its planes must already be in this matrix and range.
	ColorSpace frame.ColorSpace
	FullRange  bool
	// Preset is the x264 preset; "" means "medium".
	Preset string
	// CRF is x264's constant rate factor; 0 means 18.
	CRF int
	// Threads is the encoder thread count; 0 means automatic.
	Threads int
	// X264Params is passed to libx264 as its x264-params option
	// ("key=value:key=value", e.g. "rc-lookahead=20"); "" = none. mp4 only.
	X264Params string
	// AudioFrom, when set, names an input whose first audio stream is
	// copied unchanged (no re-encode) into the mp4, interleaved with the
	// video by time. An input without audio adds none; an audio codec that
	// MP4 cannot hold (e.g. PCM) fails NewEncoder with ErrUnsupportedFormat.
	AudioFrom *Input
	// FastStart moves the mp4 index to the front at Close (one extra pass
	// over the file), for progressive playback.
	FastStart bool
	// PNGCompression is the zlib level for png, 0..9; 0 means 3 (fast).
	PNGCompression int
}

// Encoder writes frames to a file: an H.264 MP4 or a single PNG. It is not
// safe for concurrent use.
type Encoder struct {
	opts   EncoderOptions
	path   string
	isPNG  bool
	cc     *astiav.CodecContext
	fc     *astiav.FormatContext
	ioc    *astiav.IOContext
	st     *astiav.Stream
	pkt    *astiav.Packet
	frm    *astiav.Frame // encoder input (C memory)
	rgb    *astiav.Frame // staging copy of the input for swscale
	gray   *astiav.Frame // gray staging for RGB24 input to a gray mp4
	sws    scaler
	audio  *audioCopy
	file   *os.File // png
	frames int
	last   int64
	header bool
	closed bool
	err    error // first Write failure; Close reports it
}

// x264Preset reports x264's preset names (checked here because x264 prints
// its complaint to stderr itself).
func x264Preset(p string) bool {
	switch p {
	case "ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo":
		return true
	}
	return false
}

// mp4AudioOK reports the audio codecs this package copies into MP4.
func mp4AudioOK(id astiav.CodecID) bool {
	switch id {
	case astiav.CodecIDAac, astiav.CodecIDMp3, astiav.CodecIDAc3, astiav.CodecIDEac3, astiav.CodecIDOpus, astiav.CodecIDAlac:
		return true
	}
	return false
}

// NewEncoder creates path and prepares to encode into it. For mp4 it opens
// libx264 with the preset, CRF and colour tags, adds the audio stream of
// opts.AudioFrom, and writes the header. Errors name the step; a bad
// option or audio that MP4 cannot hold fails here. ctx bounds opening the
// audio source.
func NewEncoder(ctx context.Context, path string, opts EncoderOptions) (_ *Encoder, err error) {
	if err := ctxErr(ctx, "new encoder"); err != nil {
		return nil, err
	}
	e := &Encoder{opts: opts, path: path}
	if e.opts.Width <= 0 || e.opts.Height <= 0 || e.opts.Width > maxOutputSide || e.opts.Height > maxOutputSide {
		return nil, fmt.Errorf("codec: new encoder: size %dx%d out of range", e.opts.Width, e.opts.Height)
	}
	switch e.opts.Input {
	case frame.YUV420P, frame.RGB24, frame.Gray8:
	default:
		return nil, fmt.Errorf("codec: new encoder: input format %v not supported", e.opts.Input)
	}
	defer func() {
		if err != nil {
			e.free()
			_ = os.Remove(path)
		}
	}()
	switch e.opts.Container {
	case "png":
		e.isPNG = true
		err = e.openPNG()
	case "mp4":
		err = e.openMP4(ctx)
	default:
		return nil, fmt.Errorf("codec: new encoder: container %q: %w", e.opts.Container, ErrUnsupportedFormat)
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Encoder) openPNG() error {
	c := astiav.FindEncoderByName("png")
	if c == nil {
		return errors.New("codec: new encoder: png encoder missing from this FFmpeg")
	}
	if e.cc = astiav.AllocCodecContext(c); e.cc == nil {
		return errors.New("codec: new encoder: alloc codec context: out of memory")
	}
	pf := astiav.PixelFormatRgb24
	if e.opts.Gray || e.opts.Input == frame.Gray8 {
		pf = astiav.PixelFormatGray8
	}
	e.cc.SetPixelFormat(pf)
	e.cc.SetWidth(e.opts.Width)
	e.cc.SetHeight(e.opts.Height)
	e.cc.SetTimeBase(astiav.NewRational(1, 25))
	e.cc.SetThreadCount(1)
	level := e.opts.PNGCompression
	if level <= 0 {
		level = 3
	}
	if level > 9 {
		return fmt.Errorf("codec: new encoder: png compression %d out of range 0..9", level)
	}
	d := astiav.NewDictionary()
	defer d.Free()
	if err := d.Set("compression_level", strconv.Itoa(level), 0); err != nil {
		return fmt.Errorf("codec: new encoder: options: %w", err)
	}
	// "up" prediction costs little and shrinks photographic content a lot
	// compared with none; "mixed"/"paeth" are several times slower.
	if err := d.Set("pred", "up", 0); err != nil {
		return fmt.Errorf("codec: new encoder: options: %w", err)
	}
	if err := e.cc.Open(c, d); err != nil {
		return fmt.Errorf("codec: new encoder: open png encoder: %w", err)
	}
	if err := e.allocFrames(pf); err != nil {
		return err
	}
	f, err := os.Create(e.path)
	if err != nil {
		return fmt.Errorf("codec: new encoder: %w", err)
	}
	e.file = f
	return nil
}

func (e *Encoder) allocFrames(pf astiav.PixelFormat) error {
	if e.pkt = astiav.AllocPacket(); e.pkt == nil {
		return errors.New("codec: new encoder: alloc packet: out of memory")
	}
	if e.frm = astiav.AllocFrame(); e.frm == nil {
		return errors.New("codec: new encoder: alloc frame: out of memory")
	}
	e.frm.SetPixelFormat(pf)
	e.frm.SetWidth(e.opts.Width)
	e.frm.SetHeight(e.opts.Height)
	if err := e.frm.AllocBuffer(0); err != nil {
		return fmt.Errorf("codec: new encoder: alloc frame: %w", err)
	}
	return nil
}

func colorTags(cs frame.ColorSpace) (matrix, primaries, trc string) {
	if cs == frame.BT709 {
		return "bt709", "bt709", "bt709"
	}
	return "smpte170m", "smpte170m", "smpte170m"
}

func (e *Encoder) openMP4(ctx context.Context) error {
	o := &e.opts
	if o.Width%2 != 0 || o.Height%2 != 0 {
		return fmt.Errorf("codec: new encoder: mp4 size %dx%d must be even (yuv420p)", o.Width, o.Height)
	}
	if !o.FrameRate.valid() {
		return fmt.Errorf("codec: new encoder: frame rate %v invalid", o.FrameRate)
	}
	if o.TimeBase == (Rational{}) || o.TimeBase.Num == 0 {
		o.TimeBase = Rational{o.FrameRate.Den, o.FrameRate.Num}
	}
	if !o.TimeBase.valid() {
		return fmt.Errorf("codec: new encoder: time base %v invalid", o.TimeBase)
	}
	if o.Preset == "" {
		o.Preset = "medium"
	}
	if !x264Preset(o.Preset) {
		return fmt.Errorf("codec: new encoder: unknown x264 preset %q", o.Preset)
	}
	if o.CRF == 0 {
		o.CRF = 18
	}
	if o.CRF < 0 || o.CRF > 51 {
		return fmt.Errorf("codec: new encoder: crf %d out of range 1..51", o.CRF)
	}
	if o.Threads < 0 {
		return fmt.Errorf("codec: new encoder: threads %d < 0", o.Threads)
	}
	if o.Gray || o.Input == frame.Gray8 {
		o.FullRange = true // a matte: 0..255 must round-trip
	}
	c := astiav.FindEncoderByName("libx264")
	if c == nil {
		return errors.New("codec: new encoder: libx264 missing from this FFmpeg")
	}
	var err error
	// The muxer keeps the URL: +faststart reopens the file through it.
	if e.fc, err = astiav.AllocOutputFormatContext(nil, "mp4", fileURL(e.path)); err != nil || e.fc == nil {
		return fmt.Errorf("codec: new encoder: alloc mp4 muxer: %v", err)
	}
	if e.cc = astiav.AllocCodecContext(c); e.cc == nil {
		return errors.New("codec: new encoder: alloc codec context: out of memory")
	}
	e.cc.SetPixelFormat(astiav.PixelFormatYuv420P)
	e.cc.SetWidth(o.Width)
	e.cc.SetHeight(o.Height)
	e.cc.SetTimeBase(o.TimeBase.av())
	e.cc.SetFramerate(o.FrameRate.av())
	e.cc.SetSampleAspectRatio(astiav.NewRational(1, 1))
	e.cc.SetThreadCount(o.Threads)
	if e.fc.OutputFormat().Flags().Has(astiav.IOFormatFlagGlobalheader) {
		e.cc.SetFlags(e.cc.Flags().Add(astiav.CodecContextFlagGlobalHeader))
	}
	matrix, prim, trc := colorTags(o.ColorSpace)
	rng := "tv"
	if o.FullRange {
		rng = "pc"
	}
	d := astiav.NewDictionary()
	defer d.Free()
	for _, kv := range [][2]string{{"preset", o.Preset}, {"crf", strconv.Itoa(o.CRF)},
		{"colorspace", matrix}, {"color_primaries", prim}, {"color_trc", trc}, {"color_range", rng}} {
		if err := d.Set(kv[0], kv[1], 0); err != nil {
			return fmt.Errorf("codec: new encoder: option %s: %w", kv[0], err)
		}
	}
	if xp := x264Params(o.X264Params, o.Width, hostAVX512()); xp != "" {
		if err := d.Set("x264-params", xp, 0); err != nil {
			return fmt.Errorf("codec: new encoder: option x264-params: %w", err)
		}
	}
	if err := e.cc.Open(c, d); err != nil {
		return fmt.Errorf("codec: new encoder: open libx264 (preset %q): %w", o.Preset, err)
	}
	if e.st = e.fc.NewStream(nil); e.st == nil {
		return errors.New("codec: new encoder: new stream: out of memory")
	}
	if err := e.st.CodecParameters().FromCodecContext(e.cc); err != nil {
		return fmt.Errorf("codec: new encoder: stream parameters: %w", err)
	}
	e.st.SetTimeBase(o.TimeBase.av())
	e.st.SetAvgFrameRate(o.FrameRate.av())
	if o.AudioFrom != nil {
		if e.audio, err = openAudioCopy(ctx, *o.AudioFrom, e.fc); err != nil {
			return err
		}
	}
	if err := e.allocFrames(astiav.PixelFormatYuv420P); err != nil {
		return err
	}
	if err := e.openOutput(); err != nil {
		return err
	}
	return nil
}

// openOutput opens the file and writes the mp4 header.
func (e *Encoder) openOutput() error {
	var err error
	if e.ioc, err = openOutputFile(e.path); err != nil {
		return err
	}
	e.fc.SetPb(e.ioc)
	if err := writeHeader(e.fc, e.opts.FastStart); err != nil {
		return err
	}
	e.header = true
	return nil
}

// fileURL names a local path for FFmpeg: the "file:" prefix keeps it from
// reading a protocol into a path with a colon in it.
func fileURL(path string) string {
	if strings.HasPrefix(path, "file:") {
		return path
	}
	return "file:" + path
}

func openOutputFile(path string) (*astiav.IOContext, error) {
	ioc, err := astiav.OpenIOContext(fileURL(path), astiav.NewIOContextFlags(astiav.IOContextFlagWrite))
	if err != nil {
		return nil, fmt.Errorf("codec: create %s: %w", path, err)
	}
	return ioc, nil
}

func writeHeader(fc *astiav.FormatContext, fastStart bool) error {
	d := astiav.NewDictionary()
	defer d.Free()
	if fastStart {
		if err := d.Set("movflags", "+faststart", 0); err != nil {
			return fmt.Errorf("codec: write header: %w", err)
		}
	}
	if err := fc.WriteHeader(d); err != nil {
		return fmt.Errorf("codec: write header: %w", err)
	}
	return nil
}

// Write encodes f, which must have the options' Input format and size.
// For mp4, f.PTS (in TimeBase) must increase from frame to frame; audio
// due before this frame is muxed with it. A png takes exactly one frame.
// The first error is sticky: later Writes and Close return it.
func (e *Encoder) Write(ctx context.Context, f *frame.HostFrame) error {
	if e.closed {
		return errClosed
	}
	if e.err != nil {
		return e.err
	}
	if err := ctxErr(ctx, "encode"); err != nil {
		return err
	}
	if err := f.Validate(); err != nil {
		return fmt.Errorf("codec: encode: %w", err)
	}
	if f.Format != e.opts.Input || f.Width != e.opts.Width || f.Height != e.opts.Height {
		return fmt.Errorf("codec: encode: got %v %dx%d, encoder takes %v %dx%d",
			f.Format, f.Width, f.Height, e.opts.Input, e.opts.Width, e.opts.Height)
	}
	if e.isPNG {
		if e.frames > 0 {
			return errors.New("codec: encode: a png holds one frame")
		}
	} else if e.frames > 0 && f.PTS <= e.last {
		return fmt.Errorf("codec: encode: pts %d does not increase (previous %d)", f.PTS, e.last)
	}
	if err := e.fill(f); err != nil {
		e.err = err
		return err
	}
	e.frm.SetPts(f.PTS)
	if e.isPNG {
		e.frm.SetPts(0)
	}
	if err := e.cc.SendFrame(e.frm); err != nil {
		e.err = fmt.Errorf("codec: encode: send frame: %w", err)
		return e.err
	}
	e.frames++
	e.last = f.PTS
	if err := e.drain(ctx); err != nil {
		e.err = err
		return err
	}
	return nil
}

// fill copies (and if needed converts) f into the encoder's frame.
func (e *Encoder) fill(f *frame.HostFrame) error {
	if err := makeWritable(e.frm); err != nil {
		return fmt.Errorf("codec: encode: frame not writable: %w", err)
	}
	w, h := e.opts.Width, e.opts.Height
	gray := e.cc.PixelFormat() == astiav.PixelFormatGray8 || e.opts.Gray
	switch {
	case f.Format == frame.RGB24 && e.cc.PixelFormat() == astiav.PixelFormatRgb24:
		return e.put(0, f.Planes[0], f.Strides[0], w*3, h)
	case f.Format == frame.Gray8 || (gray && f.Format == frame.YUV420P):
		if err := e.put(0, f.Planes[0], f.Strides[0], w, h); err != nil {
			return err
		}
		if e.isPNG {
			return nil
		}
		return e.fillChroma()
	case f.Format == frame.YUV420P && !e.isPNG:
		for i := 0; i < 3; i++ {
			pw, ph := f.PlaneDims(i)
			if err := e.put(i, f.Planes[i], f.Strides[i], pw, ph); err != nil {
				return err
			}
		}
		return nil
	}
	// Conversions through swscale: RGB24 to yuv420p or gray; YUV420P to
	// RGB24 (png).
	src, err := e.staging(f)
	if err != nil {
		return err
	}
	df := e.cc.PixelFormat()
	if gray && !e.isPNG {
		df = astiav.PixelFormatGray8
	}
	scs, sfull := swsCoeffBT601, true
	if f.Format == frame.YUV420P {
		sfull = f.FullRange
		if f.ColorSpace == frame.BT709 {
			scs = swsCoeffBT709
		}
	}
	dcs, dfull := swsCoeffBT601, true
	if df == astiav.PixelFormatYuv420P {
		dfull = e.opts.FullRange
		if e.opts.ColorSpace == frame.BT709 {
			dcs = swsCoeffBT709
		}
	}
	if err := e.sws.get(scalerParams{sw: w, sh: h, sf: src.PixelFormat(), dw: w, dh: h, df: df,
		flags: swsBicubic | swsFullChrHInt | swsFullChrHInp,
		scs:   scs, sfull: sfull, dcs: dcs, dfull: dfull}); err != nil {
		return fmt.Errorf("codec: encode: %w", err)
	}
	if df == astiav.PixelFormatGray8 && !e.isPNG {
		// Scale the luma into a gray staging frame, then move it into Y.
		if e.gray == nil {
			if e.gray = astiav.AllocFrame(); e.gray == nil {
				return errors.New("codec: encode: alloc frame: out of memory")
			}
			e.gray.SetPixelFormat(astiav.PixelFormatGray8)
			e.gray.SetWidth(w)
			e.gray.SetHeight(h)
			if err := e.gray.AllocBuffer(0); err != nil {
				return fmt.Errorf("codec: encode: alloc frame: %w", err)
			}
		}
		g := e.gray
		if err := e.sws.scale(src, g); err != nil {
			return fmt.Errorf("codec: encode: scale: %w", err)
		}
		p, stride, err := planeOf(g, 0, h)
		if err != nil {
			return fmt.Errorf("codec: encode: %w", err)
		}
		if err := e.put(0, p, stride, w, h); err != nil {
			return err
		}
		return e.fillChroma()
	}
	if err := e.sws.scale(src, e.frm); err != nil {
		return fmt.Errorf("codec: encode: scale: %w", err)
	}
	return nil
}

// staging copies f into a C frame of its own format for swscale.
func (e *Encoder) staging(f *frame.HostFrame) (*astiav.Frame, error) {
	pf := astiav.PixelFormatRgb24
	if f.Format == frame.YUV420P {
		pf = astiav.PixelFormatYuv420P
	}
	if e.rgb == nil {
		if e.rgb = astiav.AllocFrame(); e.rgb == nil {
			return nil, errors.New("codec: encode: alloc frame: out of memory")
		}
		e.rgb.SetPixelFormat(pf)
		e.rgb.SetWidth(e.opts.Width)
		e.rgb.SetHeight(e.opts.Height)
		if err := e.rgb.AllocBuffer(0); err != nil {
			return nil, fmt.Errorf("codec: encode: alloc frame: %w", err)
		}
	}
	for i := 0; i < f.Format.NumPlanes(); i++ {
		pw, ph := f.PlaneDims(i)
		p, stride, err := planeOf(e.rgb, i, ph)
		if err != nil {
			return nil, fmt.Errorf("codec: encode: %w", err)
		}
		copyRotate(p, stride, f.Planes[i], f.Strides[i], pw, ph, 1, 1, 0, 0)
	}
	return e.rgb, nil
}

// put copies w bytes x h rows into plane i of the encoder frame.
func (e *Encoder) put(i int, src []byte, srcStride, w, h int) error {
	p, stride, err := planeOf(e.frm, i, h)
	if err != nil {
		return fmt.Errorf("codec: encode: %w", err)
	}
	copyRotate(p, stride, src, srcStride, w, h, 1, 1, 0, 0)
	return nil
}

func (e *Encoder) fillChroma() error {
	cw, ch := (e.opts.Width+1)/2, (e.opts.Height+1)/2
	for i := 1; i < 3; i++ {
		p, stride, err := planeOf(e.frm, i, ch)
		if err != nil {
			return fmt.Errorf("codec: encode: %w", err)
		}
		for y := 0; y < ch; y++ {
			row := p[y*stride : y*stride+cw]
			for x := range row {
				row[x] = 128
			}
		}
	}
	return nil
}

// drain writes every packet the encoder has ready.
func (e *Encoder) drain(ctx context.Context) error {
	for {
		err := e.cc.ReceivePacket(e.pkt)
		if errors.Is(err, astiav.ErrEagain) || errors.Is(err, astiav.ErrEof) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("codec: encode: receive packet: %w", err)
		}
		if e.isPNG {
			_, werr := e.file.Write(e.pkt.Data())
			e.pkt.Unref()
			if werr != nil {
				return fmt.Errorf("codec: encode: write png: %w", werr)
			}
			continue
		}
		if err := e.writeVideo(ctx); err != nil {
			return err
		}
	}
}

func (e *Encoder) writeVideo(ctx context.Context) error {
	if e.pkt.Duration() <= 0 {
		fr := e.opts.FrameRate
		e.pkt.SetDuration(astiav.RescaleQ(1, astiav.NewRational(fr.Den, fr.Num), e.opts.TimeBase.av()))
	}
	e.pkt.SetStreamIndex(e.st.Index())
	e.pkt.RescaleTs(e.opts.TimeBase.av(), e.st.TimeBase())
	if e.audio != nil {
		if err := e.audio.writeUntil(ctx, e.fc, e.pkt.Dts(), e.st.TimeBase(), false); err != nil {
			e.pkt.Unref()
			return err
		}
	}
	if err := e.fc.WriteInterleavedFrame(e.pkt); err != nil {
		return fmt.Errorf("codec: encode: write packet: %w", err)
	}
	return nil
}

// Close flushes the encoder, copies the remaining audio, writes the
// trailer and closes the file. It reports the first error of the
// encoder's life (including a Write error, and an mp4 or png with no frame
// written); calling it again returns nil.
func (e *Encoder) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	defer e.free()
	err := e.err
	if err == nil && e.frames == 0 {
		err = errors.New("codec: close encoder: no frame written")
	}
	if err == nil {
		err = e.finish()
	}
	if e.ioc != nil {
		if cerr := e.ioc.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("codec: close encoder: close file: %w", cerr)
		}
		e.ioc = nil
	}
	if e.file != nil {
		if cerr := e.file.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("codec: close encoder: close file: %w", cerr)
		}
		e.file = nil
	}
	return err
}

func (e *Encoder) finish() error {
	ctx := context.Background()
	if err := e.cc.SendFrame(nil); err != nil {
		return fmt.Errorf("codec: close encoder: flush: %w", err)
	}
	if err := e.drain(ctx); err != nil {
		return err
	}
	if e.isPNG {
		return nil
	}
	if e.audio != nil {
		if err := e.audio.writeUntil(ctx, e.fc, 0, e.st.TimeBase(), true); err != nil {
			return err
		}
	}
	if err := e.fc.WriteTrailer(); err != nil {
		return fmt.Errorf("codec: close encoder: write trailer: %w", err)
	}
	return nil
}

func (e *Encoder) free() {
	if e.audio != nil {
		e.audio.close()
		e.audio = nil
	}
	if e.frm != nil {
		e.frm.Free()
		e.frm = nil
	}
	if e.rgb != nil {
		e.rgb.Free()
		e.rgb = nil
	}
	if e.gray != nil {
		e.gray.Free()
		e.gray = nil
	}
	e.sws.free()
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
	if e.file != nil {
		_ = e.file.Close()
		e.file = nil
	}
}
