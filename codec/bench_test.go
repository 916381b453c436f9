package codec

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// write1080p encodes n 1080p frames with the given preset.
func write1080p(b *testing.B, path string, n int, preset string) {
	b.Helper()
	writeMP4(b, path, mp4Spec{w: 1920, h: 1080, n: n, preset: preset, cs: frame.BT709})
}

func BenchmarkDecode1080p(b *testing.B) {
	p := filepath.Join(b.TempDir(), "1080p.mp4")
	const n = 30
	write1080p(b, p, n, "ultrafast")
	ctx := context.Background()
	for _, format := range []frame.PixelFormat{frame.YUV420P, frame.RGB24} {
		b.Run(format.String(), func(b *testing.B) {
			b.ReportAllocs()
			dst := &frame.HostFrame{}
			frames, bytes := 0, 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d, err := NewDecoder(ctx, FileInput(p), DefaultLimits(), DecodeOptions{Format: format})
				if err != nil {
					b.Fatal(err)
				}
				for {
					err := d.Next(ctx, dst)
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					frames++
					for _, pl := range dst.Planes {
						bytes += len(pl)
					}
				}
				d.Close()
			}
			s := b.Elapsed().Seconds()
			b.ReportMetric(float64(frames)/s, "frames/s")
			b.ReportMetric(float64(bytes)/s/1e6, "MB/s")
		})
	}
}

func BenchmarkEncode1080p(b *testing.B) {
	ctx := context.Background()
	src := newFrame(b, frame.YUV420P, 1920, 1080)
	for _, preset := range []string{"ultrafast", "medium"} {
		b.Run(preset, func(b *testing.B) {
			b.ReportAllocs()
			enc, err := NewEncoder(ctx, filepath.Join(b.TempDir(), "o.mp4"), EncoderOptions{Container: "mp4", Width: 1920,
				Height: 1080, Input: frame.YUV420P, FrameRate: Rational{30, 1}, Preset: preset, ColorSpace: frame.BT709})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				pattern(src, i) // moving content, as in a real clip (cost included)
				src.PTS = int64(i)
				if err := enc.Write(ctx, src); err != nil {
					b.Fatal(err)
				}
			}
			if err := enc.Close(); err != nil { // flush counted: the lookahead is real work
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}

// BenchmarkPNGEncode2_7MP is the output half of an image job: one 1920x1440
// RGB24 picture to a PNG file (open, encode, close).
func BenchmarkPNGEncode2_7MP(b *testing.B) {
	ctx := context.Background()
	src := newFrame(b, frame.RGB24, 1920, 1440)
	pattern(src, 0)
	p := filepath.Join(b.TempDir(), "o.png")
	b.ReportAllocs()
	b.SetBytes(int64(len(src.Planes[0])))
	for i := 0; i < b.N; i++ {
		enc, err := NewEncoder(ctx, p, EncoderOptions{Container: "png", Width: 1920, Height: 1440, Input: frame.RGB24})
		if err != nil {
			b.Fatal(err)
		}
		if err := enc.Write(ctx, src); err != nil {
			b.Fatal(err)
		}
		if err := enc.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPNGDecode2_7MP is the input half of an image job: probe-and-open
// plus decoding a 1920x1440 PNG to RGB24.
func BenchmarkPNGDecode2_7MP(b *testing.B) {
	ctx := context.Background()
	src := newFrame(b, frame.RGB24, 1920, 1440)
	pattern(src, 0)
	p := filepath.Join(b.TempDir(), "i.png")
	writePNG(b, p, src, false)
	dst := &frame.HostFrame{}
	b.ReportAllocs()
	b.SetBytes(int64(len(src.Planes[0])))
	for i := 0; i < b.N; i++ {
		d, err := NewDecoder(ctx, FileInput(p), DefaultLimits(), DecodeOptions{Format: frame.RGB24})
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Next(ctx, dst); err != nil {
			b.Fatal(err)
		}
		d.Close()
	}
}
