package bench

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
)

// TestPhotoFixture draws the photo fixtures small from mate-backgrounds'
// photographs (skipped when they are not installed) and checks what the
// bench relies on: videos of the right size and length, a reference of
// the frame's size, and a matte with soft, noisy codes (few exact 0 or
// 255) whose subject share grows from small to large.
func TestPhotoFixture(t *testing.T) {
	if _, err := os.Stat(DefaultPhotoDir + "/" + photoReference); err != nil {
		t.Skipf("skipping: %v (apt-get install mate-backgrounds)", err)
	}
	ctx := context.Background()
	const w, h, n = 160, 90, 3
	var shares []float64
	for _, fx := range PhotoFixtures {
		p, err := WritePhotoFixture(ctx, t.TempDir(), fx, PhotoFixtureOptions{Width: w, Height: h, Frames: n})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{p.Source, p.Matte} {
			info, err := codec.Probe(ctx, codec.FileInput(f), codec.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if info.Kind != codec.KindVideo || info.Frames != n || info.Width != w || info.Height != h {
				t.Fatalf("%s %s: %+v", fx.Name, f, info)
			}
		}
		info, err := codec.Probe(ctx, codec.FileInput(p.Reference), codec.DefaultLimits())
		if err != nil || info.Kind != codec.KindImage || info.Width != w || info.Height != h {
			t.Fatalf("%s reference: %+v, %v", fx.Name, info, err)
		}
		d, err := codec.NewDecoder(ctx, codec.FileInput(p.Matte), codec.DefaultLimits(), codec.DecodeOptions{Format: frame.Gray8})
		if err != nil {
			t.Fatal(err)
		}
		m := &frame.HostFrame{}
		err = d.Next(ctx, m)
		d.Close()
		if err != nil {
			t.Fatal(err)
		}
		extremes, sum := 0, 0.0
		for y := range h {
			for _, c := range m.Planes[0][y*m.Strides[0]:][:w] {
				if c == 0 || c == 255 {
					extremes++
				}
				sum += float64(c) / 255
			}
		}
		if extremes > w*h/10 {
			t.Fatalf("%s: %d of %d matte codes are exactly 0 or 255: not a soft, noisy matte", fx.Name, extremes, w*h)
		}
		share := sum / float64(w*h)
		if share < fx.Share/2 || share > fx.Share*1.5+0.03 {
			t.Fatalf("%s: matte mean %.3f, want about %.2f", fx.Name, share, fx.Share)
		}
		shares = append(shares, share)
	}
	for i := 1; i < len(shares); i++ {
		if shares[i] <= shares[i-1] {
			t.Fatalf("subject shares %v: not growing from small to large", shares)
		}
	}
}

// TestPhotoFixtureNoPhotos: without the photographs the fixture fails
// with ErrNoPhotos (which the bench reports and skips), writing nothing.
func TestPhotoFixtureNoPhotos(t *testing.T) {
	dir := t.TempDir()
	_, err := WritePhotoFixture(context.Background(), dir+"/out", PhotoFixtures[0],
		PhotoFixtureOptions{Width: 64, Height: 36, Frames: 2, PhotoDir: dir})
	if !errors.Is(err, ErrNoPhotos) {
		t.Fatalf("err %v, want ErrNoPhotos", err)
	}
	if _, err := os.Stat(dir + "/out"); !os.IsNotExist(err) {
		t.Fatalf("wrote %s/out: %v", dir, err)
	}
	if _, err := WritePhotoFixture(context.Background(), dir, PhotoFixture{Name: "x", Share: 0.9, Plate: "a", Subject: "b"},
		PhotoFixtureOptions{Width: 64, Height: 36, Frames: 2}); err == nil {
		t.Fatal("a subject share of 0.9 was accepted")
	}
}
