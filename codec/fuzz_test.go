package codec

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/vfxrender/vfx/frame"
)

// FuzzProbeDecode feeds arbitrary bytes through Probe and a few frames of
// decoding, over custom I/O, with tiny limits. It must never panic or
// crash; every failure must be an error.
func FuzzProbeDecode(f *testing.F) {
	dir := f.TempDir()
	mp4 := filepath.Join(dir, "a.mp4")
	writeMP4(f, mp4, mp4Spec{w: 16, h: 16, n: 3, preset: "veryfast"})
	rgb := filepath.Join(dir, "rgb.png")
	src := newFrame(f, frame.RGB24, 16, 12)
	pattern(src, 0)
	writePNG(f, rgb, src, false)
	gray := filepath.Join(dir, "gray.png")
	g := newFrame(f, frame.Gray8, 12, 16)
	pattern(g, 0)
	writePNG(f, gray, g, true)
	seeds := [][]byte{readFile(f, mp4), readFile(f, rgb), readFile(f, gray), bombPNG(300, 200), bombPNG(1, 1)}
	// Roto exports: RGBA with a partial alpha, 8 and 16 bits.
	cut := image.NewNRGBA64(image.Rect(0, 0, 10, 8))
	for i := range cut.Pix {
		cut.Pix[i] = uint8(i * 37)
	}
	for _, m := range []image.Image{cut, rgbImage(10, 8, func(x, y int) uint8 { return uint8(x * 25) })} {
		var buf bytes.Buffer
		if err := png.Encode(&buf, m); err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, buf.Bytes())
	}
	j := fuzzJPEG(f)
	seeds = append(seeds, j, withExifOrientation(j, 6, nil))
	for _, s := range seeds {
		f.Add(s)
		f.Add(s[:len(s)/2])
		f.Add(s[:len(s)*3/4])
		if len(s) > 64 {
			f.Add(s[:64])
		}
	}
	lim := Limits{MaxPixels: 65536, MaxFrames: 8, MaxAspect: 16}
	f.Fuzz(func(t *testing.T, b []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		in := bytesInput(b)
		info, err := Probe(ctx, in, lim)
		if err != nil {
			return
		}
		if info.Width <= 0 || info.Height <= 0 || info.Width*info.Height > lim.MaxPixels {
			t.Fatalf("probe passed a bad size: %+v", info)
		}
		format := []frame.PixelFormat{frame.YUV420P, frame.RGB24, frame.Gray8, frame.Gray16}[len(b)%4]
		d, err := NewDecoder(ctx, in, lim, DecodeOptions{Format: format, Width: 1 + len(b)%40})
		if err != nil {
			return
		}
		defer d.Close()
		dst := &frame.HostFrame{}
		for i := 0; i < 4; i++ {
			if err := d.Next(ctx, dst); err != nil {
				if !errors.Is(err, io.EOF) && ctx.Err() != nil {
					t.Fatalf("decoding took more than 10 s: %v", err)
				}
				return
			}
			if err := dst.Validate(); err != nil {
				t.Fatalf("decoded an invalid frame: %v", err)
			}
		}
	})
}

func fuzzJPEG(f *testing.F) []byte {
	return jpegBytesTB(f, rgbImage(16, 16, nil))
}
