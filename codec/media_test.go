package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/asticode/go-astiav"
	"github.com/vfxrender/vfx/frame"
)

// rgbImage is a smooth NRGBA picture for the stdlib encoders.
func rgbImage(w, h int, alpha func(x, y int) uint8) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			a := uint8(255)
			if alpha != nil {
				a = alpha(x, y)
			}
			m.SetNRGBA(x, y, color.NRGBA{uint8(x * 255 / w), uint8(y * 255 / h), 128, a})
		}
	}
	return m
}

// asFrame converts m's colour to an RGB24 HostFrame.
func asFrame(t *testing.T, m *image.NRGBA) *frame.HostFrame {
	b := m.Bounds()
	f := newFrame(t, frame.RGB24, b.Dx(), b.Dy())
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			c := m.NRGBAAt(x, y)
			o := y*f.Strides[0] + 3*x
			f.Planes[0][o], f.Planes[0][o+1], f.Planes[0][o+2] = c.R, c.G, c.B
		}
	}
	return f
}

func jpegBytes(t *testing.T, m image.Image) []byte { return jpegBytesTB(t, m) }

func jpegBytesTB(t testing.TB, m image.Image) []byte {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// withExifOrientation inserts an APP1 Exif segment with the orientation tag.
func withExifOrientation(j []byte, orientation uint16, order binary.ByteOrder) []byte {
	if order == nil {
		order = binary.LittleEndian
	}
	tiff := make([]byte, 26)
	if order == binary.LittleEndian {
		copy(tiff, "II")
	} else {
		copy(tiff, "MM")
	}
	order.PutUint16(tiff[2:], 42)
	order.PutUint32(tiff[4:], 8)
	order.PutUint16(tiff[8:], 1)
	order.PutUint16(tiff[10:], 0x0112)
	order.PutUint16(tiff[12:], 3)
	order.PutUint32(tiff[14:], 1)
	order.PutUint16(tiff[18:], orientation)
	payload := append([]byte("Exif\x00\x00"), tiff...)
	seg := []byte{0xFF, 0xE1, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(len(payload)+2))
	seg = append(seg, payload...)
	out := append([]byte{}, j[:2]...)
	out = append(out, seg...)
	return append(out, j[2:]...)
}

func TestJPEG(t *testing.T) {
	m := rgbImage(64, 48, nil)
	want := asFrame(t, m)
	j := jpegBytes(t, m)
	info, err := Probe(context.Background(), bytesInput(j), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != KindImage || info.Container != "jpeg" || info.Codec != "mjpeg" || info.Width != 64 ||
		info.Height != 48 || !info.FullRange || info.ColorSpace != frame.BT601 || info.Frames != 1 || info.HasAlpha {
		t.Fatalf("probe %+v", info)
	}
	_, got := decodeAll(t, bytesInput(j), DecodeOptions{})
	if len(got) != 1 || got[0].Format != frame.RGB24 {
		t.Fatalf("decoded %d frames", len(got))
	}
	if mean, _ := planeDiff(got[0], want, 0); mean > 3 {
		t.Errorf("jpeg decode mean diff %.2f", mean)
	}
	// As YUV420P the planes stay full range (JPEG's), and say so.
	_, yuv := decodeAll(t, bytesInput(j), DecodeOptions{Format: frame.YUV420P})
	if !yuv[0].FullRange || yuv[0].ColorSpace != frame.BT601 {
		t.Errorf("yuv from jpeg: full=%v cs=%v", yuv[0].FullRange, yuv[0].ColorSpace)
	}
}

func TestJPEGExifRotation(t *testing.T) {
	m := rgbImage(64, 48, nil)
	src := asFrame(t, m)
	j := jpegBytes(t, m)
	for _, c := range []struct {
		orientation uint16
		rot         int
		order       binary.ByteOrder
	}{{6, 90, binary.LittleEndian}, {3, 180, binary.BigEndian}, {8, 270, binary.BigEndian}, {1, 0, binary.LittleEndian}} {
		t.Run(strings.TrimSpace(string(rune('0'+c.orientation))), func(t *testing.T) {
			in := bytesInput(withExifOrientation(j, c.orientation, c.order))
			info, err := Probe(context.Background(), in, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			dw, dh := rotSize(64, 48, c.rot)
			if info.Rotation != c.rot || info.DisplayWidth != dw || info.DisplayHeight != dh {
				t.Fatalf("probe rotation %d display %dx%d", info.Rotation, info.DisplayWidth, info.DisplayHeight)
			}
			_, got := decodeAll(t, in, DecodeOptions{})
			want := newFrame(t, frame.RGB24, dw, dh)
			copyRotate(want.Planes[0], want.Strides[0], src.Planes[0], src.Strides[0], 64, 48, 3, 3, 0, c.rot)
			if got[0].Width != dw || got[0].Height != dh {
				t.Fatalf("decoded %dx%d", got[0].Width, got[0].Height)
			}
			if mean, _ := planeDiff(got[0], want, 0); mean > 3 {
				t.Errorf("rotated decode mean diff %.2f", mean)
			}
		})
	}
}

func TestAlphaPNGMatte(t *testing.T) {
	circle := func(x, y int) uint8 {
		if (x-32)*(x-32)+(y-24)*(y-24) < 15*15 {
			return 255
		}
		return 0
	}
	for _, c := range []struct {
		name   string
		alpha  func(x, y int) uint8
		wantFn func(f *frame.HostFrame, x, y int) uint8
	}{
		{"alpha", circle, func(_ *frame.HostFrame, x, y int) uint8 { return circle(x, y) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := rgbImage(64, 48, c.alpha)
			var buf bytes.Buffer
			if err := png.Encode(&buf, m); err != nil {
				t.Fatal(err)
			}
			in := bytesInput(buf.Bytes())
			info, err := Probe(context.Background(), in, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if !info.HasAlpha || info.PixelFormat != "rgba" {
				t.Fatalf("probe %+v", info)
			}
			_, got := decodeAll(t, in, DecodeOptions{Format: frame.Gray8})
			rgb := asFrame(t, m)
			bad := 0
			for y := 0; y < 48; y++ {
				for x := 0; x < 64; x++ {
					g, w := int(got[0].Planes[0][y*got[0].Strides[0]+x]), int(c.wantFn(rgb, x, y))
					if g-w > 2 || w-g > 2 {
						bad++
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d matte pixels off by more than 2", bad)
			}
		})
	}
	t.Run("opaque-alpha-uses-luma", func(t *testing.T) {
		// Go's png encoder drops an opaque alpha channel; ffmpeg keeps it.
		dir := t.TempDir()
		writePNG(t, filepath.Join(dir, "rgb.png"), asFrame(t, rgbImage(64, 48, nil)), false)
		ffmpeg(t, dir, "-i", "rgb.png", "-pix_fmt", "rgba", "rgba.png")
		in := FileInput(filepath.Join(dir, "rgba.png"))
		info, err := Probe(context.Background(), in, DefaultLimits())
		if err != nil || !info.HasAlpha {
			t.Fatalf("probe %+v %v", info, err)
		}
		_, rgb := decodeAll(t, in, DecodeOptions{Format: frame.RGB24})
		_, got := decodeAll(t, in, DecodeOptions{Format: frame.Gray8})
		p := rgb[0].Planes[0]
		for i, g := range got[0].Planes[0] {
			w := luma709(float64(p[3*i]), float64(p[3*i+1]), float64(p[3*i+2]))
			if !near(float64(g), w, 2) {
				t.Fatalf("pixel %d: matte %d, luma %.1f", i, g, w)
			}
		}
	})
}

// rawRGB decodes path's first frame with the ffmpeg CLI (autorotate on)
// to a packed RGB24 frame of size w x h.
func rawRGB(t *testing.T, path string, w, h int) *frame.HostFrame {
	out := filepath.Join(t.TempDir(), "f.rgb")
	ffmpeg(t, "", "-i", path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", out)
	b := readFile(t, out)
	if len(b) != w*h*3 {
		t.Fatalf("ffmpeg gave %d bytes, want %dx%dx3", len(b), w, h)
	}
	return &frame.HostFrame{Format: frame.RGB24, Width: w, Height: h, Planes: [3][]byte{b}, Strides: [3]int{w * 3}}
}

func TestWebP(t *testing.T) {
	needFFmpeg(t, "libwebp")
	dir := t.TempDir()
	smooth := asFrame(t, rgbImage(64, 48, nil))
	writePNG(t, filepath.Join(dir, "smooth.png"), smooth, false)
	lossy := filepath.Join(dir, "lossy.webp")
	ffmpeg(t, dir, "-i", "smooth.png", "-c:v", "libwebp", "-quality", "95", lossy)
	info, err := Probe(context.Background(), FileInput(lossy), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if info.Container != "webp" || info.Codec != "webp" || info.Kind != KindImage || info.Width != 64 || info.Height != 48 {
		t.Fatalf("probe %+v", info)
	}
	_, got := decodeAll(t, FileInput(lossy), DecodeOptions{})
	if mean, _ := planeDiff(got[0], rawRGB(t, lossy, 64, 48), 0); mean > 3 {
		t.Errorf("webp decode differs from ffmpeg's by %.2f", mean)
	}
	if mean, _ := planeDiff(got[0], smooth, 0); mean > 3 {
		t.Errorf("webp decode differs from the original by %.2f", mean)
	}

	alpha := filepath.Join(dir, "alpha.webp")
	ffmpeg(t, dir, "-f", "lavfi", "-i", "color=c=red@0.5:s=64x48,format=rgba", "-frames:v", "1", "-c:v", "libwebp", "-lossless", "1", alpha)
	info, err = Probe(context.Background(), FileInput(alpha), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if !info.HasAlpha {
		t.Fatalf("lossless rgba webp: %+v", info)
	}
	_, got = decodeAll(t, FileInput(alpha), DecodeOptions{Format: frame.Gray8})
	if v := got[0].Planes[0][100]; v < 120 || v > 135 {
		t.Errorf("matte of 50%% alpha webp = %d", v)
	}
}

func TestAnimatedImagesRejected(t *testing.T) {
	needFFmpeg(t, "libwebp_anim")
	dir := t.TempDir()
	ffmpeg(t, dir, "-f", "lavfi", "-i", "testsrc=s=64x48:r=5", "-frames:v", "3", "-c:v", "libwebp_anim", "-loop", "0", "anim.webp")
	ffmpeg(t, dir, "-f", "lavfi", "-i", "testsrc=s=64x48:r=5", "-frames:v", "3", "-plays", "0", "-f", "apng", "anim.png")
	for _, n := range []string{"anim.webp", "anim.png"} {
		_, err := Probe(context.Background(), FileInput(filepath.Join(dir, n)), DefaultLimits())
		if !errors.Is(err, ErrUnsupportedFormat) || !strings.Contains(err.Error(), "animated") {
			t.Errorf("%s: %v", n, err)
		}
	}
}

func TestHEVC(t *testing.T) {
	needFFmpeg(t, "libx265")
	dir := t.TempDir()
	for _, pf := range []string{"yuv420p", "yuv420p10le"} {
		ffmpeg(t, dir, "-f", "lavfi", "-i", "testsrc2=s=64x48:r=25", "-frames:v", "5", "-c:v", "libx265",
			"-x265-params", "log-level=error", "-pix_fmt", pf, pf+".mp4")
	}
	var decoded [][]*frame.HostFrame
	for _, pf := range []string{"yuv420p", "yuv420p10le"} {
		p := filepath.Join(dir, pf+".mp4")
		info, err := Probe(context.Background(), FileInput(p), DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if info.Codec != "hevc" || info.PixelFormat != pf || info.Frames != 5 || info.Width != 64 || info.Height != 48 ||
			info.FrameRate != (Rational{25, 1}) {
			t.Fatalf("%s: probe %+v", pf, info)
		}
		_, got := decodeAll(t, bytesInput(readFile(t, p)), DecodeOptions{})
		if len(got) != 5 || got[0].Format != frame.YUV420P {
			t.Fatalf("%s: %d frames", pf, len(got))
		}
		decoded = append(decoded, got)
	}
	// 10-bit reduced to 8 bits looks like the 8-bit encode of the same source.
	for i := range decoded[0] {
		for p := 0; p < 3; p++ {
			if mean, _ := planeDiff(decoded[0][i], decoded[1][i], p); mean > 4 {
				t.Errorf("frame %d plane %d: 8-bit vs 10-bit mean diff %.2f", i, p, mean)
			}
		}
	}
}

func TestRotation(t *testing.T) {
	needFFmpeg(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src.mp4")
	writeMP4(t, src, mp4Spec{w: 64, h: 48, n: 2, preset: "veryfast"})
	for _, tag := range []string{"90", "180", "270"} {
		t.Run(tag, func(t *testing.T) {
			p := filepath.Join(dir, "rot"+tag+".mp4")
			ffmpeg(t, dir, "-i", src, "-c", "copy", "-metadata:s:v:0", "rotate="+tag, p)
			info, err := Probe(context.Background(), FileInput(p), DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("rotate=%s tag -> clockwise Rotation %d", tag, info.Rotation)
			if info.Rotation == 0 || info.Rotation%90 != 0 {
				t.Fatalf("rotation %d", info.Rotation)
			}
			dw, dh := rotSize(64, 48, info.Rotation)
			if info.DisplayWidth != dw || info.DisplayHeight != dh || (tag != "180" && dw != 48) {
				t.Fatalf("display %dx%d", info.DisplayWidth, info.DisplayHeight)
			}
			_, got := decodeAll(t, FileInput(p), DecodeOptions{Format: frame.RGB24})
			if got[0].Width != dw || got[0].Height != dh {
				t.Fatalf("decoded %dx%d", got[0].Width, got[0].Height)
			}
			// The ffmpeg CLI's autorotated picture is the reference.
			if mean, _ := planeDiff(got[0], rawRGB(t, p, dw, dh), 0); mean > 3 {
				t.Errorf("rotation %d: differs from ffmpeg's autorotate by %.2f", info.Rotation, mean)
			}
			// Remuxing keeps the display matrix.
			cp := filepath.Join(dir, "copy"+tag+".mp4")
			if err := CopyVideo(context.Background(), FileInput(p), cp); err != nil {
				t.Fatal(err)
			}
			cinfo, err := Probe(context.Background(), FileInput(cp), DefaultLimits())
			if err != nil || cinfo.Rotation != info.Rotation {
				t.Fatalf("copy: rotation %d, err %v", cinfo.Rotation, err)
			}
		})
	}
}

// countPackets counts the packets of the first stream of type mt in path.
func countPackets(t *testing.T, path string, mt astiav.MediaType) int {
	d, err := openDemuxer(context.Background(), FileInput(path))
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	st, _ := d.firstStream(mt, nil)
	if st == nil {
		return 0
	}
	n, err := d.countPackets(context.Background(), st.Index(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAudioPassthrough(t *testing.T) {
	needFFmpeg(t, "aac", "libx264")
	dir := t.TempDir()
	src := filepath.Join(dir, "src.mp4")
	ffmpeg(t, dir, "-f", "lavfi", "-i", "testsrc2=s=64x48:r=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
		"-t", "1", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-shortest", src)
	in := FileInput(src)
	info, err := Probe(context.Background(), in, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if !info.HasAudio || info.AudioCodec != "aac" {
		t.Fatalf("source probe %+v", info)
	}
	srcAudio := countPackets(t, src, astiav.MediaTypeAudio)
	if srcAudio < 40 {
		t.Fatalf("source has %d audio packets", srcAudio)
	}

	// Re-encode the video, copy the audio.
	out := filepath.Join(dir, "out.mp4")
	ctx := context.Background()
	dec, err := NewDecoder(ctx, in, DefaultLimits(), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	enc, err := NewEncoder(ctx, out, EncoderOptions{Container: "mp4", Width: 64, Height: 48, Input: frame.YUV420P,
		FrameRate: info.FrameRate, TimeBase: info.TimeBase, Preset: "ultrafast", AudioFrom: &in})
	if err != nil {
		t.Fatal(err)
	}
	f := &frame.HostFrame{}
	n := 0
	for ; dec.Next(ctx, f) == nil; n++ {
		if err := enc.Write(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	oinfo, err := Probe(ctx, FileInput(out), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if !oinfo.HasAudio || oinfo.AudioCodec != "aac" || oinfo.Frames != n || n != info.Frames {
		t.Fatalf("output probe %+v (wrote %d of %d frames)", oinfo, n, info.Frames)
	}
	if got := countPackets(t, out, astiav.MediaTypeAudio); got != srcAudio {
		t.Errorf("output has %d audio packets, source %d", got, srcAudio)
	}

	// Stream copy keeps both streams' packets.
	cp := filepath.Join(dir, "copy.mp4")
	if err := CopyVideo(ctx, bytesInput(readFile(t, src)), cp); err != nil {
		t.Fatal(err)
	}
	if a, v := countPackets(t, cp, astiav.MediaTypeAudio), countPackets(t, cp, astiav.MediaTypeVideo); a != srcAudio || v != info.Frames {
		t.Errorf("copy has %d audio and %d video packets, want %d and %d", a, v, srcAudio, info.Frames)
	}
}

func TestAudioNotForMP4(t *testing.T) {
	needFFmpeg(t, "libx264")
	dir := t.TempDir()
	src := filepath.Join(dir, "pcm.mov")
	ffmpeg(t, dir, "-f", "lavfi", "-i", "testsrc2=s=64x48:r=25", "-f", "lavfi", "-i", "sine", "-t", "0.2",
		"-c:v", "libx264", "-preset", "ultrafast", "-c:a", "pcm_s16le", src)
	in := FileInput(src)
	info, err := Probe(context.Background(), in, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if info.Container != "mov" || info.AudioCodec != "pcm_s16le" {
		t.Fatalf("probe %+v", info)
	}
	out := filepath.Join(dir, "out.mp4")
	_, err = NewEncoder(context.Background(), out, EncoderOptions{Container: "mp4", Width: 64, Height: 48,
		Input: frame.YUV420P, FrameRate: Rational{25, 1}, AudioFrom: &in})
	if !errors.Is(err, ErrUnsupportedFormat) || !strings.Contains(err.Error(), "pcm_s16le") {
		t.Fatalf("NewEncoder: %v", err)
	}
	if _, serr := os.Stat(out); !os.IsNotExist(serr) {
		t.Errorf("failed encoder left %s behind", out)
	}
	if err := CopyVideo(context.Background(), in, out); !errors.Is(err, ErrUnsupportedFormat) {
		t.Errorf("CopyVideo: %v", err)
	}
}

func TestCopyVideo(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.mp4")
	writeMP4(t, src, mp4Spec{w: 64, h: 48, n: 6, preset: "veryfast"})
	out := filepath.Join(dir, "out.mp4")
	if err := CopyVideo(context.Background(), FileInput(src), out); err != nil {
		t.Fatal(err)
	}
	a, b := readFile(t, src), readFile(t, out)
	ia, err := Probe(context.Background(), bytesInput(a), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	ib, err := Probe(context.Background(), bytesInput(b), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if ia != ib {
		t.Fatalf("copy changed the stream:\n%+v\n%+v", ia, ib)
	}
	_, fa := decodeAll(t, bytesInput(a), DecodeOptions{})
	_, fb := decodeAll(t, bytesInput(b), DecodeOptions{})
	for i := range fa {
		if _, mx := planeDiff(fa[i], fb[i], 0); mx != 0 || fa[i].PTS != fb[i].PTS {
			t.Fatalf("frame %d differs after stream copy", i)
		}
	}
	png := filepath.Join(dir, "x.png")
	writePNG(t, png, newFrame(t, frame.RGB24, 8, 8), false)
	if err := CopyVideo(context.Background(), FileInput(png), out); !errors.Is(err, ErrUnsupportedFormat) {
		t.Errorf("CopyVideo(png): %v", err)
	}
}
