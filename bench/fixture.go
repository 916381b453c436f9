// Package bench generates test media with exact ground truth and measures
// vfx against reference tools. Product code never imports it; the vfx
// command uses it for `vfx bench`.
package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/frame"
)

// FixtureOptions describe the sample media to generate.
type FixtureOptions struct {
	Width, Height int    // video and still size (even numbers for video)
	Frames        int    // video length
	FPS           int    // frame rate, default 25
	Seed          uint64 // texture variation
	Preset        string // x264 preset for the fixture videos, default "ultrafast"
	// Pan moves the background this many pixels a frame to the left,
	// wrapping around, as a camera panning right would (0: locked off).
	Pan int
}

// FixturePaths are the files WriteFixture made.
type FixturePaths struct {
	Source     string // H.264 MP4: a textured subject moving over a textured background
	Matte      string // H.264 MP4 whose luma is the exact matte of Source
	Reference  string // PNG at Width x Height: a colourful scene for the new background
	Still      string // PNG: frame 0 of Source as an image
	StillMatte string // gray PNG: the exact matte of Still
}

// Scene draws the synthetic scene: a textured, shaded subject (head and
// body ellipses) that moves across a textured background. Alpha is the
// subject's exact coverage; the source pixel is alpha*subject +
// (1-alpha)*background, so the matte is ground truth by construction.
type Scene struct {
	W, H   int
	Frames int
	phase  [6]float64
	bg     [3][]float64 // the background, computed once
	// Pan is the background's motion: frame i shows the background
	// Pan*i pixels further right (wrapping), a camera panning right.
	Pan int
}

// NewScene returns the scene for a size, length and seed.
func NewScene(w, h, frames int, seed uint64) *Scene {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	s := &Scene{W: w, H: h, Frames: frames}
	for i := range s.phase {
		s.phase[i] = r.Float64() * 2 * math.Pi
	}
	for c := range s.bg {
		s.bg[c] = make([]float64, w*h)
	}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)+0.5, float64(y)+0.5
			u, v := fx/float64(w), fy/float64(h)
			chk := 0.0
			if (int(fx/24)+int(fy/24))%2 == 0 {
				chk = 0.08
			}
			s.bg[0][y*w+x] = 0.35 + 0.15*math.Sin(9*u+s.phase[1]) + chk
			s.bg[1][y*w+x] = 0.40 + 0.12*math.Sin(7*v+s.phase[2]) + chk
			s.bg[2][y*w+x] = 0.45 + 0.15*math.Sin(5*(u+v)+s.phase[3]) + chk
		}
	}
	return s
}

// center returns the subject's centre and scale at frame i.
func (s *Scene) center(i int) (cx, cy, r float64) {
	t := 0.0
	if s.Frames > 1 {
		t = float64(i) / float64(s.Frames-1)
	}
	short := math.Min(float64(s.W), float64(s.H))
	r = 0.16 * short
	cx = float64(s.W) * (0.3 + 0.4*t)
	cy = float64(s.H)*0.55 + 0.04*short*math.Sin(2*math.Pi*t*2+s.phase[0])
	return
}

// coverage is the anti-aliased inside-ness of an ellipse (1 px ramp).
func coverage(x, y, cx, cy, rx, ry float64) float64 {
	dx, dy := (x-cx)/rx, (y-cy)/ry
	d := math.Sqrt(dx*dx+dy*dy) - 1 // in units of the radius
	px := d * math.Min(rx, ry)      // approximately pixels
	return math.Min(1, math.Max(0, 0.5-px))
}

// Pixel returns the sRGB colour (0..1) and the matte of pixel (x, y) at
// frame i.
func (s *Scene) Pixel(i, x, y int) (r, g, b, a float64) {
	fx, fy := float64(x)+0.5, float64(y)+0.5
	cx, cy, rad := s.center(i)
	bx := x
	if s.Pan != 0 {
		bx = ((x+s.Pan*i)%s.W + s.W) % s.W
	}
	br, bg, bb := s.bg[0][y*s.W+bx], s.bg[1][y*s.W+bx], s.bg[2][y*s.W+bx]
	if math.Abs(fx-cx) > 0.75*rad+1 || fy < cy-1.37*rad-1 || fy > cy+1.4*rad+1 {
		return br, bg, bb, 0
	}
	// Subject: a body ellipse and a head circle.
	ab := coverage(fx, fy, cx, cy+0.35*rad, 0.75*rad, 1.05*rad)
	ah := coverage(fx, fy, cx, cy-0.95*rad, 0.42*rad, 0.42*rad)
	a = math.Max(ab, ah)
	if a <= 0 {
		return br, bg, bb, 0
	}
	// Subject texture moves with the subject; shading from the upper left.
	lx, ly := (fx-cx)/rad, (fy-cy)/rad
	shade := 0.65 + 0.35*math.Max(-1, math.Min(1, -0.5*lx-0.6*ly))
	tex := 0.5 + 0.5*math.Sin(11*lx+s.phase[4])*math.Sin(13*ly+s.phase[5])
	sr := (0.75 + 0.15*tex) * shade
	sg := (0.50 + 0.12*tex) * shade
	sb := (0.38 + 0.10*tex) * shade
	return a*sr + (1-a)*br, a*sg + (1-a)*bg, a*sb + (1-a)*bb, a
}

func to8(v float64) byte {
	return byte(math.Max(0, math.Min(255, math.Round(v*255))))
}

// FillYUV writes frame i of the scene into src (YUV420P, BT.709 limited)
// and its matte into m (Gray8). Both must be allocated at W x H.
func (s *Scene) FillYUV(i int, src, m *frame.HostFrame) {
	const kr, kb = 0.2126, 0.0722
	kg := 1 - kr - kb
	w, h := s.W, s.H
	rowR := make([]float64, 2*w)
	rowG := make([]float64, 2*w)
	rowB := make([]float64, 2*w)
	for y := 0; y < h; y += 2 {
		for dy := 0; dy < 2 && y+dy < h; dy++ {
			for x := 0; x < w; x++ {
				r, g, b, a := s.Pixel(i, x, y+dy)
				rowR[dy*w+x], rowG[dy*w+x], rowB[dy*w+x] = r, g, b
				yy := kr*r + kg*g + kb*b
				src.Planes[0][(y+dy)*src.Strides[0]+x] = to8((16 + 219*yy) / 255)
				m.Planes[0][(y+dy)*m.Strides[0]+x] = to8(a)
			}
		}
		rows := 2
		if y+1 >= h {
			rows = 1
		}
		for x := 0; x < w; x += 2 {
			var r, g, b float64
			n := 0.0
			for dy := 0; dy < rows; dy++ {
				for dx := 0; dx < 2 && x+dx < w; dx++ {
					r += rowR[dy*w+x+dx]
					g += rowG[dy*w+x+dx]
					b += rowB[dy*w+x+dx]
					n++
				}
			}
			r, g, b = r/n, g/n, b/n
			yy := kr*r + kg*g + kb*b
			u := (b - yy) / (2 * (1 - kb))
			v := (r - yy) / (2 * (1 - kr))
			src.Planes[1][(y/2)*src.Strides[1]+x/2] = to8((128 + 224*u) / 255)
			src.Planes[2][(y/2)*src.Strides[2]+x/2] = to8((128 + 224*v) / 255)
		}
	}
	src.ColorSpace, src.FullRange = frame.BT709, false
}

// FillRGB writes frame i into an RGB24 frame and its matte into a Gray8
// frame.
func (s *Scene) FillRGB(i int, dst, m *frame.HostFrame) {
	for y := 0; y < s.H; y++ {
		for x := 0; x < s.W; x++ {
			r, g, b, a := s.Pixel(i, x, y)
			o := y*dst.Strides[0] + 3*x
			dst.Planes[0][o], dst.Planes[0][o+1], dst.Planes[0][o+2] = to8(r), to8(g), to8(b)
			m.Planes[0][y*m.Strides[0]+x] = to8(a)
		}
	}
}

// FillReference writes a colourful reference scene (a sunset-like sky over
// a dark ground with warm lights) into an RGB24 frame.
func FillReference(dst *frame.HostFrame, seed uint64) {
	r := rand.New(rand.NewPCG(seed+1, seed^0x5bd1e995))
	sunX := 0.2 + 0.6*r.Float64()
	for y := 0; y < dst.Height; y++ {
		v := (float64(y) + 0.5) / float64(dst.Height)
		for x := 0; x < dst.Width; x++ {
			u := (float64(x) + 0.5) / float64(dst.Width)
			var cr, cg, cb float64
			if v < 0.62 {
				t := v / 0.62
				cr, cg, cb = 0.25+0.7*t, 0.30+0.35*t, 0.55-0.25*t
				d := math.Hypot(u-sunX, (v-0.55)*1.6)
				glow := math.Exp(-d * d * 30)
				cr, cg, cb = cr+0.6*glow, cg+0.45*glow, cb+0.2*glow
			} else {
				t := (v - 0.62) / 0.38
				cr, cg, cb = 0.22-0.12*t, 0.16-0.08*t, 0.12-0.06*t
				if math.Sin(u*60)*math.Sin(v*40) > 0.96 {
					cr, cg, cb = 0.95, 0.7, 0.35
				}
			}
			o := y*dst.Strides[0] + 3*x
			dst.Planes[0][o], dst.Planes[0][o+1], dst.Planes[0][o+2] = to8(cr), to8(cg), to8(cb)
		}
	}
}

// WriteFixture writes the fixture files into dir with the project's own
// encoder. It stops at the next frame when ctx is cancelled.
func WriteFixture(ctx context.Context, dir string, o FixtureOptions) (FixturePaths, error) {
	if o.FPS == 0 {
		o.FPS = 25
	}
	if o.Preset == "" {
		o.Preset = "ultrafast"
	}
	if o.Width <= 0 || o.Height <= 0 || o.Frames <= 0 || o.Width%2 != 0 || o.Height%2 != 0 {
		return FixturePaths{}, fmt.Errorf("bench: fixture size %dx%d x %d frames: want positive, even sizes", o.Width, o.Height, o.Frames)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return FixturePaths{}, fmt.Errorf("bench: %w", err)
	}
	p := FixturePaths{
		Source:     filepath.Join(dir, "source.mp4"),
		Matte:      filepath.Join(dir, "matte.mp4"),
		Reference:  filepath.Join(dir, "reference.png"),
		Still:      filepath.Join(dir, "still.png"),
		StillMatte: filepath.Join(dir, "still_matte.png"),
	}
	sc := NewScene(o.Width, o.Height, o.Frames, o.Seed)
	sc.Pan = o.Pan
	base := codec.EncoderOptions{
		Container: "mp4", Width: o.Width, Height: o.Height,
		FrameRate: codec.Rational{Num: o.FPS, Den: 1}, TimeBase: codec.Rational{Num: 1, Den: o.FPS},
		ColorSpace: frame.BT709, Preset: o.Preset, CRF: 12,
	}
	srcEnc, mEnc, err := sourceMatteEncoders(ctx, base, p.Source, p.Matte)
	if err != nil {
		return p, err
	}
	defer srcEnc.Close()
	defer mEnc.Close()
	src, _ := frame.New(frame.YUV420P, o.Width, o.Height)
	m, _ := frame.New(frame.Gray8, o.Width, o.Height)
	for i := 0; i < o.Frames; i++ {
		if err := ctx.Err(); err != nil {
			return p, err
		}
		sc.FillYUV(i, src, m)
		src.PTS, m.PTS = int64(i), int64(i)
		if err := srcEnc.Write(ctx, src); err != nil {
			return p, fmt.Errorf("bench: encode source: %w", err)
		}
		if err := mEnc.Write(ctx, m); err != nil {
			return p, fmt.Errorf("bench: encode matte: %w", err)
		}
	}
	if err := srcEnc.Close(); err != nil {
		return p, fmt.Errorf("bench: finish source: %w", err)
	}
	if err := mEnc.Close(); err != nil {
		return p, fmt.Errorf("bench: finish matte: %w", err)
	}

	ref, _ := frame.New(frame.RGB24, o.Width, o.Height)
	FillReference(ref, o.Seed)
	if err := writePNG(ctx, p.Reference, ref); err != nil {
		return p, err
	}
	still, _ := frame.New(frame.RGB24, o.Width, o.Height)
	sc.FillRGB(0, still, m)
	if err := writePNG(ctx, p.Still, still); err != nil {
		return p, err
	}
	if err := writePNG(ctx, p.StillMatte, m); err != nil {
		return p, err
	}
	return p, nil
}

func writePNG(ctx context.Context, path string, f *frame.HostFrame) error {
	enc, err := codec.NewEncoder(ctx, path, codec.EncoderOptions{
		Container: "png", Width: f.Width, Height: f.Height, Input: f.Format, Gray: f.Format == frame.Gray8,
	})
	if err != nil {
		return fmt.Errorf("bench: png encoder: %w", err)
	}
	if err := enc.Write(ctx, f); err != nil {
		enc.Close()
		return fmt.Errorf("bench: encode %s: %w", filepath.Base(path), err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("bench: finish %s: %w", filepath.Base(path), err)
	}
	return nil
}

// sourceMatteEncoders opens the H.264 encoders of a fixture: base with
// YUV420P input at srcPath, and grey (luma = matte) at mattePath.
func sourceMatteEncoders(ctx context.Context, base codec.EncoderOptions, srcPath, mattePath string) (src, matte *codec.Encoder, err error) {
	so := base
	so.Input = frame.YUV420P
	if src, err = codec.NewEncoder(ctx, srcPath, so); err != nil {
		return nil, nil, fmt.Errorf("bench: source encoder: %w", err)
	}
	mo := base
	mo.Input, mo.Gray = frame.Gray8, true
	if matte, err = codec.NewEncoder(ctx, mattePath, mo); err != nil {
		_ = src.Close()
		return nil, nil, fmt.Errorf("bench: matte encoder: %w", err)
	}
	return src, matte, nil
}
