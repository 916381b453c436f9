package codec

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/asticode/go-astiav"
)

// audioCopy copies one input's first audio stream into an output muxer,
// packet by packet, without decoding.
type audioCopy struct {
	dm      *demuxer
	in, out *astiav.Stream
	pkt     *astiav.Packet
	pending bool
	eof     bool
}

// openAudioCopy opens in and adds a copy of its first audio stream to fc.
// It returns nil, nil when in has no audio.
func openAudioCopy(ctx context.Context, in Input, fc *astiav.FormatContext) (_ *audioCopy, err error) {
	dm, err := openDemuxer(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("codec: audio source: %w", err)
	}
	a := &audioCopy{dm: dm}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	if dm.sn.kind != KindVideo {
		return nil, fmt.Errorf("codec: audio source is a %s image: %w", dm.sn.container, ErrUnsupportedFormat)
	}
	st, _ := dm.firstStream(astiav.MediaTypeAudio, nil)
	if st == nil {
		a.close()
		return nil, nil
	}
	if out, err := addCopyStream(fc, st); err != nil {
		return nil, err
	} else {
		a.in, a.out = st, out
	}
	if a.pkt = astiav.AllocPacket(); a.pkt == nil {
		return nil, errors.New("codec: audio copy: alloc packet: out of memory")
	}
	return a, nil
}

// addCopyStream adds to fc a stream that carries st's packets unchanged.
func addCopyStream(fc *astiav.FormatContext, st *astiav.Stream) (*astiav.Stream, error) {
	cp := st.CodecParameters()
	if cp.MediaType() == astiav.MediaTypeAudio && !mp4AudioOK(cp.CodecID()) {
		return nil, fmt.Errorf("codec: audio codec %s cannot be copied into mp4: %w", cp.CodecID().Name(), ErrUnsupportedFormat)
	}
	out := fc.NewStream(nil)
	if out == nil {
		return nil, errors.New("codec: new stream: out of memory")
	}
	if err := cp.Copy(out.CodecParameters()); err != nil {
		return nil, fmt.Errorf("codec: copy stream parameters: %w", err)
	}
	out.CodecParameters().SetCodecTag(0)
	out.SetTimeBase(st.TimeBase())
	if cp.MediaType() == astiav.MediaTypeVideo {
		if b := st.SideData(astiav.PacketSideDataTypeDisplaymatrix); len(b) > 0 {
			if err := out.AddSideData(astiav.PacketSideDataTypeDisplaymatrix, b); err != nil {
				return nil, fmt.Errorf("codec: copy display matrix: %w", err)
			}
		}
	}
	return out, nil
}

// writeUntil muxes the audio packets that start no later than t (in tb),
// or all that are left when all is set.
func (a *audioCopy) writeUntil(ctx context.Context, fc *astiav.FormatContext, t int64, tb astiav.Rational, all bool) error {
	a.dm.setCtx(ctx)
	for !a.eof {
		if err := ctxErr(ctx, "audio copy"); err != nil {
			return err
		}
		if !a.pending {
			if err := a.dm.fc.ReadFrame(a.pkt); err != nil {
				if errors.Is(err, astiav.ErrEof) {
					a.eof = true
					return nil
				}
				return a.dm.fail("audio copy: read packet", err)
			}
			if a.pkt.StreamIndex() != a.in.Index() {
				a.pkt.Unref()
				continue
			}
			a.pending = true
		}
		if !all {
			ts := a.pkt.Dts()
			if ts == noPTS {
				ts = a.pkt.Pts()
			}
			if ts != noPTS && astiav.RescaleQ(ts, a.in.TimeBase(), tb) > t {
				return nil
			}
		}
		a.pending = false
		a.pkt.SetStreamIndex(a.out.Index())
		a.pkt.RescaleTs(a.in.TimeBase(), a.out.TimeBase())
		a.pkt.SetPos(-1)
		if err := fc.WriteInterleavedFrame(a.pkt); err != nil {
			return fmt.Errorf("codec: audio copy: write packet: %w", err)
		}
	}
	return nil
}

func (a *audioCopy) close() {
	if a.pkt != nil {
		a.pkt.Free()
		a.pkt = nil
	}
	if a.dm != nil {
		a.dm.close()
		a.dm = nil
	}
}

// noPTS is AV_NOPTS_VALUE.
const noPTS = -1 << 63

// CopyVideo remuxes in's video stream (H.264 or HEVC) and its first audio
// stream into a new MP4 at path without re-encoding: packets, timestamps
// and the display matrix are carried over unchanged. It does not enforce
// Limits (Probe first). Errors: ErrUnsupportedFormat for an image, another
// video codec, or audio that MP4 cannot hold; ErrCorrupt for damaged
// input; ctx's error when it ends (checked between packets). On error the
// partial output is removed.
func CopyVideo(ctx context.Context, in Input, path string) (err error) {
	dm, err := openDemuxer(ctx, in)
	if err != nil {
		return err
	}
	defer dm.close()
	if dm.sn.kind != KindVideo {
		return fmt.Errorf("codec: copy video: input is a %s image: %w", dm.sn.container, ErrUnsupportedFormat)
	}
	vs, anyVideo := dm.firstStream(astiav.MediaTypeVideo, videoCodecOK)
	if vs == nil {
		if anyVideo != nil {
			return fmt.Errorf("codec: copy video: video codec %s: %w", anyVideo.CodecParameters().CodecID().Name(), ErrUnsupportedFormat)
		}
		return fmt.Errorf("codec: copy video: no video stream: %w", ErrUnsupportedFormat)
	}
	if err := dm.fc.FindStreamInfo(nil); err != nil {
		return dm.fail("copy video: find stream info", err)
	}
	fc, err := astiav.AllocOutputFormatContext(nil, "mp4", fileURL(path))
	if err != nil || fc == nil {
		return fmt.Errorf("codec: copy video: alloc mp4 muxer: %v", err)
	}
	defer fc.Free()
	outOf := map[int]*astiav.Stream{}
	out, err := addCopyStream(fc, vs)
	if err != nil {
		return err
	}
	outOf[vs.Index()] = out
	if as, _ := dm.firstStream(astiav.MediaTypeAudio, nil); as != nil {
		if out, err = addCopyStream(fc, as); err != nil {
			return err
		}
		outOf[as.Index()] = out
	}
	ioc, err := openOutputFile(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := ioc.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("codec: copy video: close file: %w", cerr)
		}
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	fc.SetPb(ioc)
	if err := writeHeader(fc, false); err != nil {
		return err
	}
	streams := dm.fc.Streams()
	pkt := astiav.AllocPacket()
	if pkt == nil {
		return errors.New("codec: copy video: alloc packet: out of memory")
	}
	defer pkt.Free()
	for {
		if err := ctxErr(ctx, "copy video"); err != nil {
			return err
		}
		if err := dm.fc.ReadFrame(pkt); err != nil {
			if errors.Is(err, astiav.ErrEof) {
				break
			}
			return dm.fail("copy video: read packet", err)
		}
		i := pkt.StreamIndex()
		o, ok := outOf[i]
		if !ok || i >= len(streams) {
			pkt.Unref()
			continue
		}
		pkt.SetStreamIndex(o.Index())
		pkt.RescaleTs(streams[i].TimeBase(), o.TimeBase())
		pkt.SetPos(-1)
		if err := fc.WriteInterleavedFrame(pkt); err != nil {
			return fmt.Errorf("codec: copy video: write packet: %w", err)
		}
	}
	if err := fc.WriteTrailer(); err != nil {
		return fmt.Errorf("codec: copy video: write trailer: %w", err)
	}
	return nil
}
