package codec

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/asticode/go-astiav"
)

// ioBufferSize is the AVIOContext buffer: large enough that the Go read
// callback runs rarely (one cgo round trip per 256 KiB).
const ioBufferSize = 256 << 10

// FFmpeg's seek "whence" extensions (libavformat/avio.h).
const (
	avseekSize  = 0x10000
	avseekForce = 0x20000
)

// ioSource is the reader behind one demuxer, with the context of the call
// in progress and the first read error (to tell I/O failures from corrupt
// data).
type ioSource struct {
	r    io.ReadSeekCloser
	ctx  context.Context
	size int64
	err  error
}

// ioBox is all that go-astiav's callback registry keeps a reference to (it
// never forgets a handler); closing the demuxer empties the box so that the
// reader and its buffers can be collected.
type ioBox struct{ s *ioSource }

func (b *ioBox) read(p []byte) (int, error) {
	s := b.s
	if s == nil {
		return 0, astiav.ErrEof
	}
	if s.ctx.Err() != nil {
		return 0, astiav.ErrExit
	}
	for tries := 0; tries < 100; tries++ {
		n, err := s.r.Read(p)
		if n > 0 {
			return n, nil
		}
		if errors.Is(err, io.EOF) {
			return 0, astiav.ErrEof
		}
		if err != nil {
			if s.err == nil {
				s.err = err
			}
			return 0, astiav.ErrEio
		}
	}
	return 0, astiav.ErrEof
}

func (b *ioBox) seek(off int64, whence int) (int64, error) {
	s := b.s
	if s == nil {
		return 0, astiav.ErrEio
	}
	if whence&avseekSize != 0 {
		if s.size < 0 {
			cur, err := s.r.Seek(0, io.SeekCurrent)
			if err != nil {
				return 0, astiav.ErrEio
			}
			end, err := s.r.Seek(0, io.SeekEnd)
			if err != nil {
				return 0, astiav.ErrEio
			}
			if _, err := s.r.Seek(cur, io.SeekStart); err != nil {
				return 0, astiav.ErrEio
			}
			s.size = end
		}
		return s.size, nil
	}
	n, err := s.r.Seek(off, whence&^avseekForce)
	if err != nil {
		return 0, astiav.ErrEio
	}
	return n, nil
}

// demuxer is an opened input: the reader, the custom AVIOContext over it,
// and the format context, opened with the demuxer that sniffing chose.
type demuxer struct {
	sn     sniffed
	src    *ioSource
	box    *ioBox
	ioc    *astiav.IOContext
	fc     *astiav.FormatContext
	opened bool
}

// openDemuxer sniffs in and opens it with FFmpeg through custom I/O, so
// that FFmpeg never sees a file name (formats come from content only).
func openDemuxer(ctx context.Context, in Input) (_ *demuxer, err error) {
	if err := ctxErr(ctx, "open input"); err != nil {
		return nil, err
	}
	r, err := in.open()
	if err != nil {
		return nil, err
	}
	d := &demuxer{src: &ioSource{r: r, ctx: ctx, size: -1}}
	d.box = &ioBox{s: d.src}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if d.sn, err = sniff(r); err != nil {
		return nil, err
	}
	if d.ioc, err = astiav.AllocIOContext(ioBufferSize, false, d.box.read, d.box.seek, nil); err != nil {
		return nil, fmt.Errorf("codec: alloc io context: %w", err)
	}
	if d.fc = astiav.AllocFormatContext(); d.fc == nil {
		return nil, errors.New("codec: alloc format context: out of memory")
	}
	d.fc.SetPb(d.ioc)
	ifmt := astiav.FindInputFormat(d.sn.demuxer)
	if ifmt == nil {
		return nil, fmt.Errorf("codec: open input: demuxer %s missing from this FFmpeg: %w", d.sn.demuxer, ErrUnsupportedFormat)
	}
	if err := d.fc.OpenInput("", ifmt, nil); err != nil {
		// avformat_open_input freed the format context (not our I/O).
		return nil, d.fail("open input", err)
	}
	d.opened = true
	return d, nil
}

// setCtx makes ctx the context that the read callback checks.
func (d *demuxer) setCtx(ctx context.Context) { d.src.ctx = ctx }

// fail turns an FFmpeg error into this package's: the context's error when
// it ended, the reader's error when reading failed, else ErrCorrupt.
func (d *demuxer) fail(step string, err error) error {
	if e := d.src.ctx.Err(); e != nil {
		return fmt.Errorf("codec: %s: %w", step, e)
	}
	if d.src.err != nil {
		return fmt.Errorf("codec: %s: read: %w", step, d.src.err)
	}
	return fmt.Errorf("codec: %s: %v: %w", step, err, ErrCorrupt)
}

// close frees everything; safe to call more than once.
func (d *demuxer) close() {
	if d.fc != nil {
		if d.opened {
			d.fc.CloseInput()
		} else {
			d.fc.Free()
		}
		d.fc = nil
	}
	if d.ioc != nil {
		d.ioc.Free()
		d.ioc = nil
	}
	if d.box != nil {
		d.box.s = nil
	}
	if d.src != nil {
		_ = d.src.r.Close()
		d.src = nil
	}
}

// firstStream returns the index of the first stream of media type t whose
// codec is accepted by ok (-1 if none) and the first stream of type t at all.
func (d *demuxer) firstStream(t astiav.MediaType, ok func(astiav.CodecID) bool) (match, any *astiav.Stream) {
	for _, s := range d.fc.Streams() {
		cp := s.CodecParameters()
		if cp.MediaType() != t {
			continue
		}
		if any == nil {
			any = s
		}
		if ok == nil || ok(cp.CodecID()) {
			return s, any
		}
	}
	return nil, any
}

// countPackets counts the packets of stream idx, stopping at limit.
func (d *demuxer) countPackets(ctx context.Context, idx, limit int) (int, error) {
	d.setCtx(ctx)
	pkt := astiav.AllocPacket()
	defer pkt.Free()
	n := 0
	for n < limit {
		if err := ctxErr(ctx, "count frames"); err != nil {
			return n, err
		}
		if err := d.fc.ReadFrame(pkt); err != nil {
			if errors.Is(err, astiav.ErrEof) {
				return n, nil
			}
			return n, d.fail("count frames", err)
		}
		if pkt.StreamIndex() == idx {
			n++
		}
		pkt.Unref()
	}
	return n, nil
}
