package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// paddedFrame allocates a frame whose strides exceed the plane widths, to
// exercise stride handling, filled with random bytes.
func paddedFrame(t *testing.T, rng *rand.Rand, f frame.PixelFormat, w, h int) *frame.HostFrame {
	t.Helper()
	hf := &frame.HostFrame{Format: f, Width: w, Height: h}
	for i := range f.NumPlanes() {
		pw, ph := hf.PlaneDims(i)
		hf.Strides[i] = pw + 3
		hf.Planes[i] = make([]byte, hf.Strides[i]*ph)
		for j := range hf.Planes[i] {
			hf.Planes[i][j] = byte(rng.IntN(256))
		}
	}
	if err := hf.Validate(); err != nil {
		t.Fatal(err)
	}
	return hf
}

type yuvCase struct {
	cs   frame.ColorSpace
	full bool
}

var yuvCases = []yuvCase{{frame.BT601, false}, {frame.BT601, true}, {frame.BT709, false}, {frame.BT709, true}}

func (c yuvCase) String() string { return fmt.Sprintf("%v/full=%v", c.cs, c.full) }

// refYUV converts one Y'CbCr sample to gamma-encoded R'G'B' (unclamped).
func refYUV(c yuvCase, Y, U, V byte) (r, g, b float64) {
	kr, kb := 0.299, 0.114
	if c.cs == frame.BT709 {
		kr, kb = 0.2126, 0.0722
	}
	kg := 1 - kr - kb
	var yn, pb, pr float64
	if c.full {
		yn, pb, pr = float64(Y)/255, (float64(U)-128)/255, (float64(V)-128)/255
	} else {
		yn, pb, pr = (float64(Y)-16)/219, (float64(U)-128)/224, (float64(V)-128)/224
	}
	r = yn + 2*(1-kr)*pr
	g = yn - 2*kb*(1-kb)/kg*pb - 2*kr*(1-kr)/kg*pr
	b = yn + 2*(1-kb)*pb
	return
}

func clamp01(v float64) float64 { return math.Max(0, math.Min(1, v)) }

// refRGBToYUV returns Y, Cb, Cr codes (rounded, clamped) of R'G'B'.
func refRGBToYUV(c yuvCase, r, g, b float64) (y, u, v float64) {
	kr, kb := 0.299, 0.114
	if c.cs == frame.BT709 {
		kr, kb = 0.2126, 0.0722
	}
	kg := 1 - kr - kb
	yy := kr*r + kg*g + kb*b
	pb := (b - yy) / (2 * (1 - kb))
	pr := (r - yy) / (2 * (1 - kr))
	if c.full {
		return 255 * yy, 128 + 255*pb, 128 + 255*pr
	}
	return 16 + 219*yy, 128 + 224*pb, 128 + 224*pr
}

func code(v float64) int { return int(math.Max(0, math.Min(255, math.Floor(v+0.5)))) }

func TestUploadYUV420P(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(1)
	for _, yc := range yuvCases {
		for _, sz := range testSizes {
			t.Run(yc.String()+"/"+sizeName(sz), func(t *testing.T) {
				w, h := sz[0], sz[1]
				f := paddedFrame(t, rng, frame.YUV420P, w, h)
				f.ColorSpace, f.FullRange = yc.cs, yc.full
				m := img(t, d, w, h, 3, nil)
				if err := d.Upload(m, f); err != nil {
					t.Fatal(err)
				}
				want := make([]float64, 3*w*h)
				for y := range h {
					for x := range w {
						Y := f.Planes[0][y*f.Strides[0]+x]
						U := f.Planes[1][(y/2)*f.Strides[1]+x/2]
						V := f.Planes[2][(y/2)*f.Strides[2]+x/2]
						r, g, b := refYUV(yc, Y, U, V)
						want[y*w+x] = refEOTF(clamp01(r))
						want[w*h+y*w+x] = refEOTF(clamp01(g))
						want[2*w*h+y*w+x] = refEOTF(clamp01(b))
					}
				}
				closeAll(t, "linear", pixels(t, d, m), want, 1e-4, 0)
			})
		}
	}
}

func TestUploadKnownValues(t *testing.T) {
	d := NewCPU(1)
	cases := []struct {
		yc      yuvCase
		Y, U, V byte
		want    [3]float64
	}{
		{yuvCase{frame.BT709, false}, 235, 128, 128, [3]float64{1, 1, 1}},
		{yuvCase{frame.BT709, false}, 16, 128, 128, [3]float64{0, 0, 0}},
		{yuvCase{frame.BT601, false}, 235, 128, 128, [3]float64{1, 1, 1}},
		{yuvCase{frame.BT709, true}, 255, 128, 128, [3]float64{1, 1, 1}},
		{yuvCase{frame.BT601, true}, 0, 128, 128, [3]float64{0, 0, 0}},
		{yuvCase{frame.BT709, false}, 250, 128, 128, [3]float64{1, 1, 1}}, // super-white clamps
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v/Y%d", c.yc, c.Y), func(t *testing.T) {
			f, _ := frame.New(frame.YUV420P, 2, 2)
			f.ColorSpace, f.FullRange = c.yc.cs, c.yc.full
			for i := range f.Planes[0] {
				f.Planes[0][i] = c.Y
			}
			f.Planes[1][0], f.Planes[2][0] = c.U, c.V
			m := img(t, d, 2, 2, 3, nil)
			if err := d.Upload(m, f); err != nil {
				t.Fatal(err)
			}
			p := pixels(t, d, m)
			for ch := range 3 {
				if got := float64(p[ch*4]); got != c.want[ch] {
					t.Errorf("channel %d = %v, want exactly %v", ch, got, c.want[ch])
				}
			}
		})
	}
}

func TestUploadRGB24AndGray8(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(2)
	for _, sz := range testSizes {
		w, h := sz[0], sz[1]
		t.Run("rgb24/"+sizeName(sz), func(t *testing.T) {
			f := paddedFrame(t, rng, frame.RGB24, w, h)
			m := img(t, d, w, h, 3, nil)
			if err := d.Upload(m, f); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, 3*w*h)
			for y := range h {
				for x := range w {
					for c := range 3 {
						want[c*w*h+y*w+x] = refEOTF(float64(f.Planes[0][y*f.Strides[0]+3*x+c]) / 255)
					}
				}
			}
			closeAll(t, "linear", pixels(t, d, m), want, 1e-7, 1e-6)
		})
		t.Run("gray8/"+sizeName(sz), func(t *testing.T) {
			f := paddedFrame(t, rng, frame.Gray8, w, h)
			m := img(t, d, w, h, 1, nil)
			if err := d.Upload(m, f); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, w*h)
			for y := range h {
				for x := range w {
					want[y*w+x] = float64(f.Planes[0][y*f.Strides[0]+x]) / 255
				}
			}
			closeAll(t, "gray", pixels(t, d, m), want, 1e-7, 0)
		})
	}
}

// specials are linear values around the clamps and code boundaries.
func specials() []float32 {
	v := []float32{0, -1, 2, 1, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0.5, 1e-9, 0.0031308, 0.99999}
	for k := range 255 {
		th := refEOTF((float64(k) + 0.5) / 255)
		v = append(v, float32(th), math.Nextafter32(float32(th), 0), math.Nextafter32(float32(th), 2))
	}
	return v
}

func TestDownloadRGB24Exact(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(3)
	sp := specials()
	sizes := append(testSizes, [2]int{len(sp), 3})
	for _, sz := range sizes {
		t.Run(sizeName(sz), func(t *testing.T) {
			w, h := sz[0], sz[1]
			data := randVals(rng, 3*w*h, -0.1, 1.1)
			if w == len(sp) {
				copy(data, sp)
				copy(data[2*w*h:], sp)
			}
			m := img(t, d, w, h, 3, data)
			f := paddedFrame(t, rng, frame.RGB24, w, h)
			if err := d.Download(f, m); err != nil {
				t.Fatal(err)
			}
			bad := 0
			for y := range h {
				for x := range w {
					for c := range 3 {
						v := float64(data[c*w*h+y*w+x])
						if math.IsNaN(v) {
							v = 0
						}
						want := code(refOETF(v) * 255)
						got := int(f.Planes[0][y*f.Strides[0]+3*x+c])
						if got != want && bad < 5 {
							t.Errorf("(%d,%d,%d) linear %v: code %d, want %d", x, y, c, v, got, want)
							bad++
						}
					}
				}
			}
		})
	}
	t.Run("half", func(t *testing.T) {
		m := img(t, d, 1, 1, 3, []float32{0.5, 0, 1})
		f, _ := frame.New(frame.RGB24, 1, 1)
		if err := d.Download(f, m); err != nil {
			t.Fatal(err)
		}
		if got := f.Planes[0]; got[0] != 188 || got[1] != 0 || got[2] != 255 {
			t.Errorf("linear (0.5, 0, 1) -> %v, want [188 0 255]", got[:3])
		}
	})
}

func TestRGB24RoundTrip(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(4)
	w, h := 256, 3
	f, _ := frame.New(frame.RGB24, w, h)
	for i := range f.Planes[0] {
		f.Planes[0][i] = byte(rng.IntN(256))
	}
	for x := range 256 { // every code in row 0 of every channel
		f.Planes[0][3*x], f.Planes[0][3*x+1], f.Planes[0][3*x+2] = byte(x), byte(255-x), byte(x)
	}
	m := img(t, d, w, h, 3, nil)
	if err := d.Upload(m, f); err != nil {
		t.Fatal(err)
	}
	g, _ := frame.New(frame.RGB24, w, h)
	if err := d.Download(g, m); err != nil {
		t.Fatal(err)
	}
	for i := range f.Planes[0] {
		if f.Planes[0][i] != g.Planes[0][i] {
			t.Fatalf("byte %d: %d -> %d", i, f.Planes[0][i], g.Planes[0][i])
		}
	}
}

func TestDownloadGray8(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(5)
	for _, sz := range testSizes {
		t.Run(sizeName(sz), func(t *testing.T) {
			w, h := sz[0], sz[1]
			data := randVals(rng, w*h, -0.2, 1.2)
			data[0] = float32(math.NaN())
			m := img(t, d, w, h, 1, data)
			f := paddedFrame(t, rng, frame.Gray8, w, h)
			if err := d.Download(f, m); err != nil {
				t.Fatal(err)
			}
			for y := range h {
				for x := range w {
					v := float64(data[y*w+x])
					if math.IsNaN(v) {
						v = 0
					}
					want := code(clamp01(v) * 255)
					if got := int(f.Planes[0][y*f.Strides[0]+x]); got != want {
						t.Fatalf("(%d,%d) %v: %d, want %d", x, y, v, got, want)
					}
				}
			}
			// Gray round trip is exact.
			if err := d.Upload(m, f); err != nil {
				t.Fatal(err)
			}
			g := paddedFrame(t, rng, frame.Gray8, w, h)
			if err := d.Download(g, m); err != nil {
				t.Fatal(err)
			}
			for y := range h {
				for x := range w {
					if f.Planes[0][y*f.Strides[0]+x] != g.Planes[0][y*g.Strides[0]+x] {
						t.Fatalf("gray round trip differs at (%d,%d)", x, y)
					}
				}
			}
		})
	}
}

func TestDownloadYUV420P(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(6)
	for _, yc := range yuvCases {
		for _, sz := range testSizes {
			t.Run(yc.String()+"/"+sizeName(sz), func(t *testing.T) {
				w, h := sz[0], sz[1]
				data := randVals(rng, 3*w*h, -0.05, 1.05)
				m := img(t, d, w, h, 3, data)
				f := paddedFrame(t, rng, frame.YUV420P, w, h)
				f.ColorSpace, f.FullRange = yc.cs, yc.full
				if err := d.Download(f, m); err != nil {
					t.Fatal(err)
				}
				rgb := func(x, y int) (float64, float64, float64) {
					return refOETF(at(data, w, h, x, y, 0)), refOETF(at(data, w, h, x, y, 1)), refOETF(at(data, w, h, x, y, 2))
				}
				check := func(what string, got byte, want float64) {
					t.Helper()
					if math.Abs(float64(got)-float64(code(want))) > 1 {
						t.Errorf("%s = %d, want %d (%.3f)", what, got, code(want), want)
					}
				}
				for y := range h {
					for x := range w {
						r, g, b := rgb(x, y)
						yy, _, _ := refRGBToYUV(yc, r, g, b)
						check(fmt.Sprintf("Y(%d,%d)", x, y), f.Planes[0][y*f.Strides[0]+x], yy)
					}
				}
				for cy := range (h + 1) / 2 {
					for cx := range (w + 1) / 2 {
						var sr, sg, sb float64
						n := 0
						for y := 2 * cy; y < min(2*cy+2, h); y++ {
							for x := 2 * cx; x < min(2*cx+2, w); x++ {
								r, g, b := rgb(x, y)
								sr, sg, sb = sr+r, sg+g, sb+b
								n++
							}
						}
						_, u, v := refRGBToYUV(yc, sr/float64(n), sg/float64(n), sb/float64(n))
						check(fmt.Sprintf("U(%d,%d)", cx, cy), f.Planes[1][cy*f.Strides[1]+cx], u)
						check(fmt.Sprintf("V(%d,%d)", cx, cy), f.Planes[2][cy*f.Strides[2]+cx], v)
					}
				}
			})
		}
	}
}

func TestYUVFlatRoundTrip(t *testing.T) {
	d := NewCPU(2)
	colours := [][3]byte{{128, 128, 128}, {81, 90, 240}, {145, 54, 34}, {41, 240, 110}, {200, 100, 150}, {60, 140, 100}}
	for _, yc := range yuvCases {
		for _, col := range colours {
			for _, sz := range [][2]int{{1, 1}, {7, 5}, {16, 8}} {
				w, h := sz[0], sz[1]
				r, g, b := refYUV(yc, col[0], col[1], col[2])
				if r < 0 || r > 1 || g < 0 || g > 1 || b < 0 || b > 1 {
					continue // out of gamut: clamping changes the colour
				}
				t.Run(fmt.Sprintf("%v/%v/%s", yc, col, sizeName(sz)), func(t *testing.T) {
					f, _ := frame.New(frame.YUV420P, w, h)
					f.ColorSpace, f.FullRange = yc.cs, yc.full
					for p, v := range col {
						for i := range f.Planes[p] {
							f.Planes[p][i] = v
						}
					}
					m := img(t, d, w, h, 3, nil)
					if err := d.Upload(m, f); err != nil {
						t.Fatal(err)
					}
					g, _ := frame.New(frame.YUV420P, w, h)
					g.ColorSpace, g.FullRange = yc.cs, yc.full
					if err := d.Download(g, m); err != nil {
						t.Fatal(err)
					}
					for p := range 3 {
						for i, v := range g.Planes[p] {
							if math.Abs(float64(v)-float64(col[p])) > 1 {
								t.Fatalf("plane %d sample %d: %d, want %d±1", p, i, v, col[p])
							}
						}
					}
				})
			}
		}
	}
}

func TestConvertErrors(t *testing.T) {
	d := NewCPU(1)
	m3 := img(t, d, 4, 4, 3, nil)
	m1 := img(t, d, 4, 4, 1, nil)
	yuv, _ := frame.New(frame.YUV420P, 4, 4)
	gray, _ := frame.New(frame.Gray8, 4, 4)
	small, _ := frame.New(frame.RGB24, 3, 4)
	bad := &frame.HostFrame{Format: frame.RGB24, Width: 4, Height: 4}
	cases := []struct {
		name string
		err  error
	}{
		{"yuv into 1ch", d.Upload(m1, yuv)},
		{"gray into 3ch", d.Upload(m3, gray)},
		{"size", d.Upload(m3, small)},
		{"download 1ch to yuv", d.Download(yuv, m1)},
		{"download size", d.Download(small, m3)},
		{"unallocated frame", d.Upload(m3, bad)},
		{"nil frame", d.Upload(m3, nil)},
		{"foreign", d.Upload(foreign{}, yuv)},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}
