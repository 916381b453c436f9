package codec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/asticode/go-astiav"
	"github.com/vfxrender/vfx/frame"
)

// source is an opened, inspected input: Info is filled and the limits have
// been checked. For images the picture has already been decoded (that is
// how its pixel format is learnt) and is kept in first.
type source struct {
	dm       *demuxer
	info     Info
	stream   *astiav.Stream
	dec      *decodeLoop // images: open; video: nil until the decoder opens it
	first    *astiav.Frame
	srcCoeff int // swscale coefficients of the source's YUV matrix
}

func (s *source) close() {
	if s.first != nil {
		s.first.Free()
		s.first = nil
	}
	if s.dec != nil {
		s.dec.close()
		s.dec = nil
	}
	if s.dm != nil {
		s.dm.close()
		s.dm = nil
	}
}

func videoCodecOK(id astiav.CodecID) bool {
	return id == astiav.CodecIDH264 || id == astiav.CodecIDHevc
}

// imageCodec is the codec an image container must hold.
func imageCodec(container string) astiav.CodecID {
	switch container {
	case "png":
		return astiav.CodecIDPng
	case "jpeg":
		return astiav.CodecIDMjpeg
	case "webp":
		return astiav.CodecIDWebp
	}
	return astiav.CodecIDNone
}

// Probe identifies in by content, reads its description and enforces lim
// (pixels, then aspect, then frames) before any video frame is decoded; a
// still image's size is read from its header and checked before FFmpeg
// decodes it. Errors wrap ErrUnsupportedFormat, ErrCorrupt, or a
// *LimitError (ErrTooManyPixels, ErrExtremeAspect, ErrTooManyFrames); a
// cancelled ctx stops it between packets and inside reads.
func Probe(ctx context.Context, in Input, lim Limits) (Info, error) {
	s, err := openSource(ctx, in, lim.withDefaults(), false)
	if err != nil {
		return Info{}, err
	}
	defer s.close()
	return s.info, nil
}

// openSource opens and inspects in. With reopenCount, a video whose
// container does not give a frame count is counted on a second opening of
// in (so that s.dm stays at the start for decoding); without it, s.dm is
// used for the count.
func openSource(ctx context.Context, in Input, lim Limits, reopenCount bool) (_ *source, err error) {
	dm, err := openDemuxer(ctx, in)
	if err != nil {
		return nil, err
	}
	s := &source{dm: dm}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if dm.sn.kind == KindImage {
		err = s.inspectImage(ctx, lim)
	} else {
		err = s.inspectVideo(ctx, in, lim, reopenCount)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (s *source) inspectImage(ctx context.Context, lim Limits) error {
	sn := s.dm.sn
	if err := lim.checkSize(sn.w, sn.h, sn.w, sn.h); err != nil {
		return err
	}
	streams := s.dm.fc.Streams()
	if len(streams) == 0 {
		return fmt.Errorf("codec: open input: no image stream: %w", ErrCorrupt)
	}
	st := streams[0]
	cp := st.CodecParameters()
	if want := imageCodec(sn.container); cp.CodecID() != want {
		return fmt.Errorf("codec: open input: %s container holds codec %s: %w", sn.container, cp.CodecID().Name(), ErrUnsupportedFormat)
	}
	s.stream = st
	dec, err := openDecodeLoop(s.dm, st, lim, false)
	if err != nil {
		return err
	}
	s.dec = dec
	f := astiav.AllocFrame()
	if f == nil {
		return errors.New("codec: alloc frame: out of memory")
	}
	s.first = f
	if err := dec.next(ctx, f); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("codec: decode image: no picture: %w", ErrCorrupt)
		}
		return err
	}
	w, h := f.Width(), f.Height()
	if w != sn.w || h != sn.h {
		// The header and the decoder disagree: believe the decoder, and
		// check again.
		if err := lim.checkSize(w, h, w, h); err != nil {
			return err
		}
	}
	pf := f.PixelFormat()
	cs, full, coeff := colorOf(astiav.ColorSpaceUnspecified, f.ColorRange(), pf, cp.CodecID(), h)
	rot := sn.rotation
	dw, dh := rotSize(w, h, rot)
	if err := lim.checkSize(w, h, dw, dh); err != nil {
		return err
	}
	s.srcCoeff = coeff
	s.info = Info{
		Kind: KindImage, Container: sn.container, Codec: cp.CodecID().Name(),
		Width: w, Height: h, Rotation: rot, DisplayWidth: dw, DisplayHeight: dh,
		FrameRate: Rational{0, 1}, TimeBase: Rational{0, 1}, Frames: 1,
		PixelFormat: pf.Name(), ColorSpace: cs, FullRange: full, HasAlpha: pixFmtHasAlpha(pf),
	}
	return nil
}

func (s *source) inspectVideo(ctx context.Context, in Input, lim Limits, reopenCount bool) error {
	fc := s.dm.fc
	st, anyVideo := s.dm.firstStream(astiav.MediaTypeVideo, videoCodecOK)
	if st == nil {
		if anyVideo != nil {
			return fmt.Errorf("codec: open input: video codec %s: %w", anyVideo.CodecParameters().CodecID().Name(), ErrUnsupportedFormat)
		}
		return fmt.Errorf("codec: open input: no video stream: %w", ErrUnsupportedFormat)
	}
	s.stream = st
	cp := st.CodecParameters()
	rot := rotationOf(st)
	// Limits from the container header, before FFmpeg decodes anything.
	if w, h := cp.Width(), cp.Height(); w > 0 && h > 0 {
		dw, dh := rotSize(w, h, rot)
		if err := lim.checkSize(w, h, dw, dh); err != nil {
			return err
		}
	}
	frames := int(st.NbFrames())
	if frames > 0 {
		if err := lim.checkFrames(frames, false); err != nil {
			return err
		}
	}
	s.dm.setCtx(ctx)
	if err := fc.FindStreamInfo(nil); err != nil {
		return s.dm.fail("find stream info", err)
	}
	w, h := cp.Width(), cp.Height()
	dw, dh := rotSize(w, h, rot)
	if err := lim.checkSize(w, h, dw, dh); err != nil {
		return err
	}
	if frames <= 0 {
		var err error
		if reopenCount {
			frames, err = countReopen(ctx, in, st.Index(), lim.MaxFrames+1)
		} else {
			frames, err = s.dm.countPackets(ctx, st.Index(), lim.MaxFrames+1)
		}
		if err != nil {
			return err
		}
		if err := lim.checkFrames(frames, true); err != nil {
			return err
		}
		if frames == 0 {
			return fmt.Errorf("codec: count frames: video has no frames: %w", ErrCorrupt)
		}
	}
	pf := cp.PixelFormat()
	if pf == astiav.PixelFormatNone {
		return fmt.Errorf("codec: find stream info: pixel format unknown: %w", ErrCorrupt)
	}
	cs, full, coeff := colorOf(cp.ColorSpace(), cp.ColorRange(), pf, cp.CodecID(), h)
	fr := st.AvgFrameRate()
	if fr.Num() <= 0 || fr.Den() <= 0 {
		fr = st.RFrameRate()
	}
	rate := Rational{0, 1}
	if fr.Num() > 0 && fr.Den() > 0 {
		rate = fromAV(fr)
	}
	s.srcCoeff = coeff
	s.info = Info{
		Kind: KindVideo, Container: s.dm.sn.container, Codec: cp.CodecID().Name(),
		Width: w, Height: h, Rotation: rot, DisplayWidth: dw, DisplayHeight: dh,
		FrameRate: rate, TimeBase: fromAV(st.TimeBase()), Frames: frames,
		PixelFormat: pf.Name(), ColorSpace: cs, FullRange: full, HasAlpha: pixFmtHasAlpha(pf),
	}
	if a, _ := s.dm.firstStream(astiav.MediaTypeAudio, nil); a != nil {
		s.info.HasAudio = true
		s.info.AudioCodec = a.CodecParameters().CodecID().Name()
	}
	return nil
}

func countReopen(ctx context.Context, in Input, idx, limit int) (int, error) {
	dm, err := openDemuxer(ctx, in)
	if err != nil {
		return 0, err
	}
	defer dm.close()
	return dm.countPackets(ctx, idx, limit)
}

// rotationOf reads the clockwise display rotation from the stream's
// display matrix, snapped to a multiple of 90.
func rotationOf(st *astiav.Stream) int {
	b := st.SideData(astiav.PacketSideDataTypeDisplaymatrix)
	if len(b) < 36 {
		return 0
	}
	m, err := astiav.NewDisplayMatrixFromBytes(b)
	if err != nil {
		return 0
	}
	return snapRotation(m.Rotation())
}

func snapRotation(deg float64) int {
	if math.IsNaN(deg) || math.IsInf(deg, 0) {
		return 0
	}
	r := int(math.Round(deg/90)) % 4 * 90
	if r < 0 {
		r += 360
	}
	return r
}

func rotSize(w, h, rot int) (int, int) {
	if rot == 90 || rot == 270 {
		return h, w
	}
	return w, h
}

func isJPEGFormat(pf astiav.PixelFormat) bool {
	switch pf.Name() {
	case "yuvj420p", "yuvj422p", "yuvj444p", "yuvj440p", "yuvj411p":
		return true
	}
	return false
}

// colorOf resolves a source's matrix and range (see Info.ColorSpace) and
// the swscale coefficients to read its YUV with.
func colorOf(spc astiav.ColorSpace, rng astiav.ColorRange, pf astiav.PixelFormat, id astiav.CodecID, h int) (frame.ColorSpace, bool, int) {
	full := rng == astiav.ColorRangeJpeg || isJPEGFormat(pf)
	if id == astiav.CodecIDMjpeg {
		return frame.BT601, full || !pixFmtIsRGB(pf), swsCoeffBT601
	}
	if id == astiav.CodecIDWebp {
		return frame.BT601, full, swsCoeffBT601
	}
	switch spc {
	case astiav.ColorSpaceBt709:
		return frame.BT709, full, swsCoeffBT709
	case astiav.ColorSpaceBt2020Ncl, astiav.ColorSpaceBt2020Cl:
		return frame.BT709, full, swsCoeffBT2020
	case astiav.ColorSpaceBt470Bg, astiav.ColorSpaceSmpte170M:
		return frame.BT601, full, swsCoeffBT601
	case astiav.ColorSpaceFcc:
		return frame.BT601, full, swsCoeffFCC
	case astiav.ColorSpaceSmpte240M:
		return frame.BT601, full, swsCoeffSMPTE240
	}
	if h >= 720 {
		return frame.BT709, full, swsCoeffBT709
	}
	return frame.BT601, full, swsCoeffBT601
}

// decodeLoop feeds one stream's packets to its decoder.
type decodeLoop struct {
	dm      *demuxer
	idx     int
	cc      *astiav.CodecContext
	pkt     *astiav.Packet
	eofSent bool
	done    bool
}

// openDecodeLoop opens a decoder for st with automatic frame+slice
// threading and FFmpeg's max_pixels as a second guard on the limit.
func openDecodeLoop(dm *demuxer, st *astiav.Stream, lim Limits, threads bool) (_ *decodeLoop, err error) {
	cp := st.CodecParameters()
	c := astiav.FindDecoder(cp.CodecID())
	if c == nil {
		return nil, fmt.Errorf("codec: find decoder: no %s decoder: %w", cp.CodecID().Name(), ErrUnsupportedFormat)
	}
	l := &decodeLoop{dm: dm, idx: st.Index()}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if l.cc = astiav.AllocCodecContext(c); l.cc == nil {
		return nil, errors.New("codec: alloc codec context: out of memory")
	}
	if err := cp.ToCodecContext(l.cc); err != nil {
		return nil, fmt.Errorf("codec: codec parameters: %v: %w", err, ErrCorrupt)
	}
	if threads {
		l.cc.SetThreadCount(0)
		l.cc.SetThreadType(astiav.ThreadTypeFrame | astiav.ThreadTypeSlice)
	} else {
		l.cc.SetThreadCount(1)
	}
	opts := astiav.NewDictionary()
	defer opts.Free()
	// Decoders allocate aligned (coded) sizes: leave headroom over the
	// policy limit, which is checked exactly elsewhere.
	if err := opts.Set("max_pixels", strconv.Itoa(2*lim.MaxPixels+65536), 0); err != nil {
		return nil, fmt.Errorf("codec: decoder options: %w", err)
	}
	if err := l.cc.Open(c, opts); err != nil {
		return nil, fmt.Errorf("codec: open decoder: %v: %w", err, ErrCorrupt)
	}
	if l.pkt = astiav.AllocPacket(); l.pkt == nil {
		return nil, errors.New("codec: alloc packet: out of memory")
	}
	return l, nil
}

// next decodes the next frame into f (unreferenced first); io.EOF after
// the last one.
func (l *decodeLoop) next(ctx context.Context, f *astiav.Frame) error {
	l.dm.setCtx(ctx)
	f.Unref()
	for {
		if l.done {
			return io.EOF
		}
		if err := ctxErr(ctx, "decode"); err != nil {
			return err
		}
		err := l.cc.ReceiveFrame(f)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, astiav.ErrEof):
			l.done = true
			return io.EOF
		case !errors.Is(err, astiav.ErrEagain):
			return l.dm.fail("decode", err)
		case l.eofSent:
			l.done = true
			return io.EOF
		}
		if err := l.dm.fc.ReadFrame(l.pkt); err != nil {
			if !errors.Is(err, astiav.ErrEof) {
				return l.dm.fail("read packet", err)
			}
			l.eofSent = true
			if err := l.cc.SendPacket(nil); err != nil && !errors.Is(err, astiav.ErrEof) {
				return l.dm.fail("decode", err)
			}
			continue
		}
		if l.pkt.StreamIndex() != l.idx {
			l.pkt.Unref()
			continue
		}
		err = l.cc.SendPacket(l.pkt)
		l.pkt.Unref()
		if err != nil && !errors.Is(err, astiav.ErrEagain) {
			return l.dm.fail("decode", err)
		}
	}
}

func (l *decodeLoop) close() {
	if l.pkt != nil {
		l.pkt.Free()
		l.pkt = nil
	}
	if l.cc != nil {
		l.cc.Free()
		l.cc = nil
	}
}
