package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color/palette"
	"image/gif"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/frame"
)

// bombPNG is a PNG header claiming w x h pixels, followed by a tiny IDAT:
// anything that decoded it before checking would allocate w*h*3 bytes.
func bombPNG(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString(pngSig)
	chunk := func(typ string, data []byte) {
		var l [4]byte
		binary.BigEndian.PutUint32(l[:], uint32(len(data)))
		b.Write(l[:])
		td := append([]byte(typ), data...)
		b.Write(td)
		binary.BigEndian.PutUint32(l[:], crc32.ChecksumIEEE(td))
		b.Write(l[:])
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	chunk("IEND", nil)
	return b.Bytes()
}

func TestLimits(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	aspect := filepath.Join(dir, "aspect.png")
	writePNG(t, aspect, newFrame(t, frame.RGB24, 10, 50), false)
	big := filepath.Join(dir, "big.png")
	writePNG(t, big, newFrame(t, frame.RGB24, 2000, 1400), false)
	many := filepath.Join(dir, "many.mp4")
	writeMP4(t, many, mp4Spec{w: 16, h: 16, n: 241})
	ten := filepath.Join(dir, "ten.mp4")
	writeMP4(t, ten, mp4Spec{w: 16, h: 16, n: 10})
	tall := filepath.Join(dir, "tall.mp4")
	writeMP4(t, tall, mp4Spec{w: 16, h: 80, n: 1})

	for _, c := range []struct {
		name  string
		in    Input
		lim   Limits
		want  error
		msg   string
		check func(t *testing.T, e *LimitError)
	}{
		{"aspect-1x5-png", FileInput(aspect), DefaultLimits(), ErrExtremeAspect, "10x50, aspect 5:1, limit 4:1", nil},
		{"aspect-video", FileInput(tall), DefaultLimits(), ErrExtremeAspect, "16x80", nil},
		{"pixels-2000x1400", FileInput(big), DefaultLimits(), ErrTooManyPixels,
			"codec: source is 2000x1400 = 2800000 pixels, limit 2770000: too many pixels",
			func(t *testing.T, e *LimitError) {
				if e.Width != 2000 || e.Height != 1400 || e.Got != 2800000 || e.Max != 2770000 {
					t.Errorf("fields %+v", e)
				}
			}},
		{"pixels-bomb-header", bytesInput(bombPNG(100000, 100000)), DefaultLimits(), ErrTooManyPixels, "100000x100000", nil},
		{"frames-241", FileInput(many), DefaultLimits(), ErrTooManyFrames, "241 frames, limit 240", nil},
		{"frames-small-limit", FileInput(ten), Limits{MaxFrames: 5}, ErrTooManyFrames, "10 frames, limit 5", nil},
		{"pixels-before-frames", FileInput(many), Limits{MaxPixels: 100}, ErrTooManyPixels, "16x16 = 256 pixels, limit 100", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Probe(ctx, c.in, c.lim)
			if !errors.Is(err, c.want) {
				t.Fatalf("Probe: %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("message %q lacks %q", err, c.msg)
			}
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("not a *LimitError: %T", err)
			}
			if c.check != nil {
				c.check(t, le)
			}
			if _, err := NewDecoder(ctx, c.in, c.lim, DecodeOptions{}); !errors.Is(err, c.want) {
				t.Errorf("NewDecoder: %v, want %v", err, c.want)
			}
		})
	}
}

// TestFragmentedMP4Count covers a container without a frame count: the
// frames are counted by demuxing, and counting stops past the limit.
func TestFragmentedMP4Count(t *testing.T) {
	needFFmpeg(t, "libx264")
	dir := t.TempDir()
	p := filepath.Join(dir, "frag.mp4")
	ffmpeg(t, dir, "-f", "lavfi", "-i", "testsrc2=s=32x32:r=25", "-frames:v", "12", "-c:v", "libx264", "-preset", "ultrafast",
		"-g", "4", "-movflags", "frag_keyframe+empty_moov", p)
	in := bytesInput(readFile(t, p))
	info, err := Probe(context.Background(), in, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if info.Frames != 12 {
		t.Fatalf("counted %d frames", info.Frames)
	}
	_, err = Probe(context.Background(), in, Limits{MaxFrames: 5})
	if !errors.Is(err, ErrTooManyFrames) || !strings.Contains(err.Error(), "more than 5 frames") {
		t.Fatalf("limit 5: %v", err)
	}
	if _, err := NewDecoder(context.Background(), in, Limits{MaxFrames: 5}, DecodeOptions{}); !errors.Is(err, ErrTooManyFrames) {
		t.Fatalf("decoder limit 5: %v", err)
	}
	_, got := decodeAll(t, in, DecodeOptions{})
	if len(got) != 12 {
		t.Fatalf("decoded %d frames", len(got))
	}
}

func TestUnsupported(t *testing.T) {
	var gifBuf bytes.Buffer
	if err := gif.Encode(&gifBuf, image.NewPaletted(image.Rect(0, 0, 8, 8), palette.Plan9), nil); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"text":  []byte("hello, this is not a picture\n"),
		"gif":   gifBuf.Bytes(),
		"empty": nil,
		"html":  []byte("<!doctype html><html></html>"),
		"heic":  append([]byte{0, 0, 0, 24}, []byte("ftypheic\x00\x00\x00\x00mif1heic")...),
	}
	if p, err := osLookFFmpeg(); err == nil && p != "" {
		dir := t.TempDir()
		ffmpeg(t, dir, "-f", "lavfi", "-i", "testsrc2=s=32x32:r=25", "-frames:v", "3", "-c:v", "mpeg4", "mpeg4.mp4")
		cases["mpeg4-part2"] = readFile(t, filepath.Join(dir, "mpeg4.mp4"))
		ffmpeg(t, dir, "-f", "lavfi", "-i", "sine", "-t", "0.2", "-c:a", "aac", "audio.mp4")
		cases["audio-only-mp4"] = readFile(t, filepath.Join(dir, "audio.mp4"))
	} else {
		t.Log("ffmpeg CLI missing: the mpeg4 part 2 and audio-only cases are skipped")
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Probe(context.Background(), bytesInput(b), DefaultLimits())
			if !errors.Is(err, ErrUnsupportedFormat) {
				t.Fatalf("Probe: %v", err)
			}
			if name == "mpeg4-part2" && !strings.Contains(err.Error(), "mpeg4") {
				t.Errorf("message does not name the codec: %v", err)
			}
			if _, err := NewDecoder(context.Background(), bytesInput(b), DefaultLimits(), DecodeOptions{}); !errors.Is(err, ErrUnsupportedFormat) {
				t.Errorf("NewDecoder: %v", err)
			}
		})
	}
}

func TestCorrupt(t *testing.T) {
	dir := t.TempDir()
	mp4 := filepath.Join(dir, "a.mp4")
	writeMP4(t, mp4, mp4Spec{w: 64, h: 48, n: 10, preset: "veryfast"})
	m := readFile(t, mp4)
	pngPath := filepath.Join(dir, "a.png")
	src := newFrame(t, frame.RGB24, 64, 48)
	pattern(src, 0)
	writePNG(t, pngPath, src, false)
	p := readFile(t, pngPath)
	j := jpegBytes(t, rgbImage(64, 48, nil))
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i*7919 + i/13)
	}
	cases := map[string][]byte{
		"mp4-first-half":     m[:len(m)/2],
		"mp4-ftyp-only":      m[:32],
		"mp4-ftyp-garbage":   append(append([]byte{}, m[:32]...), garbage...),
		"png-signature-only": p[:8],
		"png-header-only":    p[:33],
		"png-half":           p[:len(p)/2],
		"jpeg-half":          j[:len(j)/2],
		"jpeg-soi-only":      j[:2+2],
		"png-zero-size":      bombPNG(0, 10),
		"garbage":            garbage,
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			info, err := Probe(context.Background(), bytesInput(b), DefaultLimits())
			if err == nil {
				// A probe may succeed on a partial file; decoding must
				// then end in an error or in fewer frames, not a crash.
				d, err := NewDecoder(context.Background(), bytesInput(b), DefaultLimits(), DecodeOptions{})
				if err != nil {
					return
				}
				defer d.Close()
				n := 0
				for ; n < 100; n++ {
					if err := d.Next(context.Background(), &frame.HostFrame{}); err != nil {
						if !errors.Is(err, io.EOF) && !errors.Is(err, ErrCorrupt) {
							t.Errorf("decode error not ErrCorrupt: %v", err)
						}
						break
					}
				}
				if name == "png-half" || name == "jpeg-half" {
					t.Logf("%s decoded %d frames (%+v)", name, n, info)
				}
				return
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupportedFormat) {
				t.Fatalf("error neither corrupt nor unsupported: %#v", err)
			}
		})
	}
	// The whole-file truncation of an mp4 whose index is at the end is
	// always corrupt.
	if _, err := Probe(context.Background(), bytesInput(m[:len(m)-200]), DefaultLimits()); !errors.Is(err, ErrCorrupt) {
		t.Errorf("mp4 without its moov: %v", err)
	}
}

func osLookFFmpeg() (string, error) {
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(d, "ffmpeg")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}

// failingReader fails every read after the first n bytes.
type failingReader struct {
	*bytes.Reader
	n int64
}

var errDisk = errors.New("disk on fire")

func (r *failingReader) Read(p []byte) (int, error) {
	pos, _ := r.Seek(0, io.SeekCurrent)
	if pos >= r.n {
		return 0, errDisk
	}
	if rem := r.n - pos; int64(len(p)) > rem {
		p = p[:rem]
	}
	return r.Reader.Read(p)
}
func (r *failingReader) Close() error { return nil }

func TestInputErrors(t *testing.T) {
	dir := t.TempDir()
	mp4 := filepath.Join(dir, "a.mp4")
	writeMP4(t, mp4, mp4Spec{w: 64, h: 48, n: 3, preset: "veryfast"})
	m := readFile(t, mp4)
	ctx := context.Background()

	// Reader errors are reported as such, not as corrupt input.
	in := Input{Open: func() (io.ReadSeekCloser, error) { return &failingReader{bytes.NewReader(m), 100}, nil }}
	if _, err := Probe(ctx, in, DefaultLimits()); !errors.Is(err, errDisk) {
		t.Errorf("failing reader: %v", err)
	}
	openErr := errors.New("no such upload")
	if _, err := Probe(ctx, Input{Open: func() (io.ReadSeekCloser, error) { return nil, openErr }}, DefaultLimits()); !errors.Is(err, openErr) {
		t.Errorf("open error: %v", err)
	}
	if _, err := Probe(ctx, FileInput(filepath.Join(dir, "missing.mp4")), DefaultLimits()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Probe(ctx, Input{}, DefaultLimits()); err == nil {
		t.Error("empty Input accepted")
	}
	if _, err := Probe(ctx, Input{Path: mp4, Open: bytesInput(m).Open}, DefaultLimits()); err == nil {
		t.Error("Input with Path and Open accepted")
	}
	// A path is never read as an FFmpeg URL or judged by its extension.
	odd := filepath.Join(dir, "http:x.png")
	if err := os.WriteFile(odd, m, 0o644); err != nil {
		t.Fatal(err)
	}
	if info, err := Probe(ctx, FileInput(odd), DefaultLimits()); err != nil || info.Container != "mp4" {
		t.Errorf("mp4 named .png: %+v %v", info, err)
	}
}

func TestContextCancel(t *testing.T) {
	dir := t.TempDir()
	mp4 := filepath.Join(dir, "a.mp4")
	writeMP4(t, mp4, mp4Spec{w: 64, h: 48, n: 5})
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Probe(done, FileInput(mp4), DefaultLimits()); !errors.Is(err, context.Canceled) {
		t.Errorf("Probe: %v", err)
	}
	if _, err := NewDecoder(done, FileInput(mp4), DefaultLimits(), DecodeOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("NewDecoder: %v", err)
	}
	if err := CopyVideo(done, FileInput(mp4), filepath.Join(dir, "c.mp4")); !errors.Is(err, context.Canceled) {
		t.Errorf("CopyVideo: %v", err)
	}
	d, err := NewDecoder(context.Background(), FileInput(mp4), DefaultLimits(), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Next(done, &frame.HostFrame{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Next: %v", err)
	}
	expired, cancel2 := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel2()
	<-expired.Done()
	enc, err := NewEncoder(context.Background(), filepath.Join(dir, "e.mp4"), EncoderOptions{Container: "mp4", Width: 16, Height: 16,
		Input: frame.YUV420P, FrameRate: Rational{25, 1}, Preset: "ultrafast"})
	if err != nil {
		t.Fatal(err)
	}
	if err := enc.Write(expired, newFrame(t, frame.YUV420P, 16, 16)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Write: %v", err)
	}
	_ = enc.Close()
}

func TestEncoderErrors(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	base := EncoderOptions{Container: "mp4", Width: 16, Height: 16, Input: frame.YUV420P, FrameRate: Rational{25, 1}, Preset: "ultrafast"}
	for name, mut := range map[string]func(o *EncoderOptions){
		"odd-size":       func(o *EncoderOptions) { o.Width = 15 },
		"zero-size":      func(o *EncoderOptions) { o.Height = 0 },
		"no-frame-rate":  func(o *EncoderOptions) { o.FrameRate = Rational{} },
		"bad-container":  func(o *EncoderOptions) { o.Container = "avi" },
		"bad-input":      func(o *EncoderOptions) { o.Input = 0 },
		"bad-preset":     func(o *EncoderOptions) { o.Preset = "warp9" },
		"bad-crf":        func(o *EncoderOptions) { o.CRF = 99 },
		"bad-png-level":  func(o *EncoderOptions) { o.Container, o.PNGCompression = "png", 12 },
		"audio-from-png": func(o *EncoderOptions) { p := filepath.Join(dir, "x.png"); o.AudioFrom = &Input{Path: p} },
	} {
		t.Run(name, func(t *testing.T) {
			writePNG(t, filepath.Join(dir, "x.png"), newFrame(t, frame.RGB24, 4, 4), false)
			o := base
			mut(&o)
			out := filepath.Join(dir, name+".out")
			if e, err := NewEncoder(ctx, out, o); err == nil {
				e.Close()
				t.Fatal("accepted")
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Error("left a file behind")
			}
		})
	}

	e, err := NewEncoder(ctx, filepath.Join(dir, "a.mp4"), base)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Write(ctx, newFrame(t, frame.RGB24, 16, 16)); err == nil {
		t.Error("wrong input format accepted")
	}
	if err := e.Write(ctx, newFrame(t, frame.YUV420P, 32, 16)); err == nil {
		t.Error("wrong size accepted")
	}
	f := newFrame(t, frame.YUV420P, 16, 16)
	f.PTS = 5
	if err := e.Write(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := e.Write(ctx, f); err == nil {
		t.Error("repeated pts accepted")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Write(ctx, f); err == nil {
		t.Error("Write after Close accepted")
	}

	e, err = NewEncoder(ctx, filepath.Join(dir, "empty.mp4"), base)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err == nil {
		t.Error("Close of an empty mp4 succeeded")
	}

	pe, err := NewEncoder(ctx, filepath.Join(dir, "b.png"), EncoderOptions{Container: "png", Width: 4, Height: 4, Input: frame.RGB24})
	if err != nil {
		t.Fatal(err)
	}
	g := newFrame(t, frame.RGB24, 4, 4)
	if err := pe.Write(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := pe.Write(ctx, g); err == nil {
		t.Error("second png frame accepted")
	}
	if err := pe.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestYUVToPNG encodes a YUV420P frame as PNG, which converts with the
// frame's matrix and range.
func TestYUVToPNG(t *testing.T) {
	for _, full := range []bool{false, true} {
		f := newFrame(t, frame.YUV420P, 16, 16)
		for i := range f.Planes[0] {
			f.Planes[0][i] = 235
		}
		for i := range f.Planes[1] {
			f.Planes[1][i], f.Planes[2][i] = 128, 128
		}
		f.FullRange = full
		p := tmpPath(t, "y.png")
		writePNG(t, p, f, false)
		_, got := decodeAll(t, FileInput(p), DecodeOptions{Format: frame.RGB24})
		want := 255
		if full {
			want = 235
		}
		if v := int(got[0].Planes[0][0]); v < want-1 || v > want+1 {
			t.Errorf("full=%v: white Y=235 gives %d, want %d", full, v, want)
		}
	}
}
