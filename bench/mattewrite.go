package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
)

// CasePaths are the files WriteMatteCase made.
type CasePaths struct {
	Source string // H.264 MP4 of the case
	Matte  string // H.264 MP4 whose luma is the exact matte
	// Keyframes are gray PNG mattes of the requested frames, by index.
	Keyframes map[int]string
	// Stills are RGB PNGs of the requested frames, by index.
	Stills map[int]string
}

// WriteMatteCase encodes a synthetic case (even sizes) as an MP4 with its
// exact matte, plus a gray PNG keyframe matte and an RGB still of each
// frame in keys.
func WriteMatteCase(ctx context.Context, dir string, c *MatteCase, keys ...int) (CasePaths, error) {
	if c.W%2 != 0 || c.H%2 != 0 {
		return CasePaths{}, fmt.Errorf("bench: case size %dx%d: want even sizes", c.W, c.H)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return CasePaths{}, fmt.Errorf("bench: %w", err)
	}
	p := CasePaths{Source: filepath.Join(dir, c.Name+".mp4"), Matte: filepath.Join(dir, c.Name+"_matte.mp4"),
		Keyframes: map[int]string{}, Stills: map[int]string{}}
	base := codec.EncoderOptions{Container: "mp4", Width: c.W, Height: c.H,
		FrameRate: codec.Rational{Num: 25, Den: 1}, TimeBase: codec.Rational{Num: 1, Den: 25},
		ColorSpace: frame.BT709, Preset: "ultrafast", CRF: 12}
	srcEnc, mEnc, err := sourceMatteEncoders(ctx, base, p.Source, p.Matte)
	if err != nil {
		return p, err
	}
	defer srcEnc.Close()
	defer mEnc.Close()
	yuv, _ := frame.New(frame.YUV420P, c.W, c.H)
	rgb, _ := frame.New(frame.RGB24, c.W, c.H)
	m, _ := frame.New(frame.Gray8, c.W, c.H)
	want := map[int]bool{}
	for _, k := range keys {
		want[k] = true
	}
	for i := 0; i < c.Frames; i++ {
		if err := ctx.Err(); err != nil {
			return p, err
		}
		for y := 0; y < c.H; y++ {
			for x := 0; x < c.W; x++ {
				col, a := c.Pixel(i, x, y)
				o := y*rgb.Strides[0] + 3*x
				rgb.Planes[0][o], rgb.Planes[0][o+1], rgb.Planes[0][o+2] = to8(col[0]), to8(col[1]), to8(col[2])
				m.Planes[0][y*m.Strides[0]+x] = to8(a)
			}
		}
		rgbToYUV(yuv, rgb)
		yuv.PTS, m.PTS = int64(i), int64(i)
		if err := srcEnc.Write(ctx, yuv); err != nil {
			return p, fmt.Errorf("bench: encode source: %w", err)
		}
		if err := mEnc.Write(ctx, m); err != nil {
			return p, fmt.Errorf("bench: encode matte: %w", err)
		}
		if want[i] {
			p.Keyframes[i] = filepath.Join(dir, fmt.Sprintf("%s_key%03d.png", c.Name, i))
			p.Stills[i] = filepath.Join(dir, fmt.Sprintf("%s_still%03d.png", c.Name, i))
			if err := writePNG(ctx, p.Keyframes[i], m); err != nil {
				return p, err
			}
			if err := writePNG(ctx, p.Stills[i], rgb); err != nil {
				return p, err
			}
		}
	}
	if err := srcEnc.Close(); err != nil {
		return p, fmt.Errorf("bench: finish source: %w", err)
	}
	if err := mEnc.Close(); err != nil {
		return p, fmt.Errorf("bench: finish matte: %w", err)
	}
	return p, nil
}

// rgbToYUV converts an RGB24 frame to YUV420P (BT.709, limited range),
// averaging the chroma over each 2x2 block.
func rgbToYUV(dst, src *frame.HostFrame) {
	const kr, kb = 0.2126, 0.0722
	kg := 1 - kr - kb
	w, h := src.Width, src.Height
	px := func(x, y int) (float64, float64, float64) {
		o := y*src.Strides[0] + 3*x
		return float64(src.Planes[0][o]) / 255, float64(src.Planes[0][o+1]) / 255, float64(src.Planes[0][o+2]) / 255
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r, g, b := px(x, y)
			dst.Planes[0][y*dst.Strides[0]+x] = to8((16 + 219*(kr*r+kg*g+kb*b)) / 255)
		}
	}
	for y := 0; y < h; y += 2 {
		for x := 0; x < w; x += 2 {
			var r, g, b, n float64
			for dy := 0; dy < 2 && y+dy < h; dy++ {
				for dx := 0; dx < 2 && x+dx < w; dx++ {
					rr, gg, bb := px(x+dx, y+dy)
					r, g, b, n = r+rr, g+gg, b+bb, n+1
				}
			}
			r, g, b = r/n, g/n, b/n
			yy := kr*r + kg*g + kb*b
			dst.Planes[1][(y/2)*dst.Strides[1]+x/2] = to8((128 + 224*(b-yy)/(2*(1-kb))) / 255)
			dst.Planes[2][(y/2)*dst.Strides[2]+x/2] = to8((128 + 224*(r-yy)/(2*(1-kr))) / 255)
		}
	}
	dst.ColorSpace, dst.FullRange = frame.BT709, false
}
