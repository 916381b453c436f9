package matte

import (
	"errors"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for _, s := range []string{"auto", "fill", "custom", "select"} {
		m, err := ParseMode(s)
		if err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	for _, s := range []string{"", "Fill", "none", "alpha"} {
		if _, err := ParseMode(s); !errors.Is(err, ErrInvalidMode) {
			t.Errorf("ParseMode(%q) err = %v, want ErrInvalidMode", s, err)
		}
	}
}

func TestSupported(t *testing.T) {
	for m, want := range map[Mode]error{Fill: nil, Custom: nil, Auto: nil, Select: nil, "x": ErrInvalidMode} {
		err := m.Supported()
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("%q.Supported() = %v, want %v", m, err, want)
		}
	}
	if !Custom.NeedsMatte() || !Select.NeedsMatte() || Fill.NeedsMatte() || Auto.NeedsMatte() {
		t.Error("NeedsMatte wrong")
	}
}

func TestCheckCustom(t *testing.T) {
	vid := Geometry{Video: true, Width: 1920, Height: 1080, Frames: 48}
	img := Geometry{Width: 1920, Height: 1080, Frames: 1}
	cases := []struct {
		name     string
		src, m   Geometry
		want     error
		contains string
	}{
		{"video ok", vid, vid, nil, ""},
		{"image ok", img, img, nil, ""},
		{"image matte for video", vid, img, ErrKindMismatch, "video but the custom matte is an image"},
		{"video matte for image", img, vid, ErrKindMismatch, "image but the custom matte is a video"},
		{"size", vid, Geometry{Video: true, Width: 1280, Height: 720, Frames: 48}, ErrSizeMismatch, "1920x1080, matte is 1280x720"},
		{"frames", vid, Geometry{Video: true, Width: 1920, Height: 1080, Frames: 47}, ErrFrameCountMismatch, "48 frames, matte has 47"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckCustom(c.src, c.m)
			if c.want == nil {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.contains) {
				t.Fatalf("err = %v, want %v containing %q", err, c.want, c.contains)
			}
		})
	}
}

func TestCheckKeyframe(t *testing.T) {
	vid := Geometry{Video: true, Width: 64, Height: 48, Frames: 10}
	key := Geometry{Width: 64, Height: 48, Frames: 1}
	if err := CheckKeyframe(vid, key, 9); err != nil {
		t.Fatal(err)
	}
	if err := CheckKeyframe(vid, key, 10); !errors.Is(err, ErrKeyframeIndex) || !strings.Contains(err.Error(), "valid 0..9") {
		t.Fatalf("index 10: %v", err)
	}
	if err := CheckKeyframe(vid, vid, 0); !errors.Is(err, ErrMustBeImage) {
		t.Fatalf("video keyframe: %v", err)
	}
	if err := CheckKeyframe(key, key, 5); err != nil {
		t.Fatalf("image source ignores the index: %v", err)
	}
}

func TestKeyframeSizeAndFormat(t *testing.T) {
	vid := Geometry{Video: true, Width: 1920, Height: 1080, Frames: 10}
	for _, c := range []struct {
		w, h int
		ok   bool
	}{{1920, 1080, true}, {960, 540, true}, {854, 480, true}, {3840, 2160, true}, {1080, 1920, false}, {1000, 1000, false}, {640, 480, false}} {
		err := CheckKeyframe(vid, Geometry{Width: c.w, Height: c.h, Frames: 1}, 0)
		if c.ok != (err == nil) || err != nil && !errors.Is(err, ErrSizeMismatch) {
			t.Errorf("%dx%d: err = %v, want ok=%v", c.w, c.h, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "aspect ratio") {
			t.Errorf("message %q does not explain the rule", err)
		}
	}
	for _, c := range []struct {
		container, pix string
		ok             bool
	}{{"png", "gray", true}, {"jpeg", "gray", true}, {"png", "gray16be", true}, {"png", "ya8", true},
		{"png", "rgb24", false}, {"jpeg", "yuvj420p", false}, {"webp", "gray", false}, {"mp4", "gray", false}} {
		err := CheckKeyframeFormat(c.container, c.pix)
		if c.ok != (err == nil) || err != nil && !errors.Is(err, ErrKeyframeFormat) {
			t.Errorf("%s %s: err = %v, want ok=%v", c.container, c.pix, err, c.ok)
		}
	}
}
