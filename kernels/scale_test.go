package kernels

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// refUpscale1D is the direct formula of one UpscaleEdge pass on a line of
// n inputs resampled to m outputs, in float64.
func refUpscale1D(in []float64, m int, edge float64) []float64 {
	n := len(in)
	out := make([]float64, m)
	for i := range m {
		c := (float64(i)+0.5)*float64(n)/float64(m) - 0.5
		sum, wsum := 0.0, 0.0
		for j := int(math.Ceil(c - 3)); j <= int(math.Floor(c+3)); j++ {
			wv := refLanczos3(float64(j) - c)
			sum += wv * in[min(max(j, 0), n-1)]
			wsum += wv
		}
		l := sum / wsum
		f := int(math.Floor(c))
		a, b := in[min(max(f, 0), n-1)], in[min(max(f+1, 0), n-1)]
		lo, hi := math.Min(a, b), math.Max(a, b)
		out[i] = l + edge*(math.Min(math.Max(l, lo), hi)-l)
	}
	return out
}

func refUpscale(src []float32, sw, sh, c, dw, dh int, edge float64) []float64 {
	want := make([]float64, c*dw*dh)
	for ch := range c {
		mid := make([][]float64, sh) // rows, dw wide
		for y := range sh {
			row := make([]float64, sw)
			for x := range sw {
				row[x] = at(src, sw, sh, x, y, ch)
			}
			mid[y] = refUpscale1D(row, dw, edge)
		}
		for x := range dw {
			col := make([]float64, sh)
			for y := range sh {
				col[y] = mid[y][x]
			}
			for y, v := range refUpscale1D(col, dh, edge) {
				want[ch*dw*dh+y*dw+x] = v
			}
		}
	}
	return want
}

func TestUpscaleEdge(t *testing.T) {
	for _, workers := range []int{1, 3} {
		d := NewCPU(workers)
		rng := newRNG(71)
		for _, p := range [][4]int{{5, 4, 10, 8}, {7, 3, 16, 3}, {1, 1, 3, 2}, {19, 11, 38, 22}, {12, 9, 25, 17}} {
			sw, sh, dw, dh := p[0], p[1], p[2], p[3]
			for _, edge := range []float32{0, 0.5, 1} {
				src := randVals(rng, 3*sw*sh, 0, 1)
				out := img(t, d, dw, dh, 3, nil)
				if err := d.UpscaleEdge(out, img(t, d, sw, sh, 3, src), edge); err != nil {
					t.Fatal(err)
				}
				closeAll(t, sizeName([2]int{sw, sh})+"to"+sizeName([2]int{dw, dh}), pixels(t, d, out),
					refUpscale(src, sw, sh, 3, dw, dh, float64(edge)), 2e-6, 2e-5)
			}
		}
	}
	d := NewCPU(2)
	// A hard edge: edge 1 never leaves the range of the two nearest
	// inputs (no ringing); edge 0 (plain Lanczos) overshoots.
	step := make([]float32, 16*2)
	for y := range 2 {
		for x := 8; x < 16; x++ {
			step[y*16+x] = 1
		}
	}
	for _, edge := range []float32{0, 1} {
		out := img(t, d, 64, 2, 1, nil)
		if err := d.UpscaleEdge(out, img(t, d, 16, 2, 1, step), edge); err != nil {
			t.Fatal(err)
		}
		lo, hi := float32(0), float32(1)
		for _, v := range pixels(t, d, out) {
			lo, hi = min(lo, v), max(hi, v)
		}
		if ringing := lo < -1e-6 || hi > 1+1e-6; ringing != (edge == 0) {
			t.Errorf("edge %v: range [%v, %v]", edge, lo, hi)
		}
	}
	for _, bad := range [][2]Image{
		{img(t, d, 4, 4, 3, nil), img(t, d, 8, 4, 3, nil)}, // smaller dst
		{img(t, d, 8, 8, 1, nil), img(t, d, 4, 4, 3, nil)}, // channels
	} {
		if err := d.UpscaleEdge(bad[0], bad[1], 1); !errors.Is(err, ErrShape) {
			t.Errorf("bad shape: %v", err)
		}
	}
	same := randVals(newRNG(5), 27, 0, 1)
	out := img(t, d, 3, 3, 3, nil)
	if err := d.UpscaleEdge(out, img(t, d, 3, 3, 3, same), 1); err != nil || !equal32(pixels(t, d, out), same) {
		t.Errorf("equal sizes do not copy: %v", err)
	}
}

func equal32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSharpen(t *testing.T) {
	for _, workers := range []int{1, 3} {
		d := NewCPU(workers)
		r := newRNG(9)
		for _, sz := range [][2]int{{1, 1}, {2, 3}, {9, 7}, {40, 33}} {
			w, h := sz[0], sz[1]
			src := randVals(r, 3*w*h, 0, 1)
			const amount = 0.8
			out := img(t, d, w, h, 3, nil)
			if err := d.Sharpen(out, img(t, d, w, h, 3, src), amount); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, 3*w*h)
			cl := func(v, n int) int { return min(max(v, 0), n-1) }
			for c := range 3 {
				for y := range h {
					for x := range w {
						b := 0.0
						for dy := -1; dy <= 1; dy++ {
							for dx := -1; dx <= 1; dx++ {
								wt := (2 - math.Abs(float64(dx))) * (2 - math.Abs(float64(dy))) / 16
								b += wt * at(src, w, h, cl(x+dx, w), cl(y+dy, h), c)
							}
						}
						s := at(src, w, h, x, y, c)
						want[c*w*h+y*w+x] = s + amount*(s-b)
					}
				}
			}
			closeAll(t, "sharpen "+sizeName(sz), pixels(t, d, out), want, 1e-6, 1e-5)
		}
	}
	d := NewCPU(1)
	if err := d.Sharpen(img(t, d, 4, 4, 3, nil), img(t, d, 4, 5, 3, nil), 1); !errors.Is(err, ErrShape) {
		t.Errorf("bad shape: %v", err)
	}
}

func TestSharpenDownloadMatchesChain(t *testing.T) {
	for _, workers := range []int{1, 3} {
		d := NewCPU(workers)
		for _, sz := range [][2]int{{1, 1}, {2, 3}, {33, 17}, {64, 40}, {301, 71}} {
			w, h := sz[0], sz[1]
			src := img(t, d, w, h, 3, randVals(newRNG(uint64(w*h)), 3*w*h, -0.05, 1.05))
			tmp := img(t, d, w, h, 3, nil)
			if err := d.Sharpen(tmp, src, 0.6); err != nil {
				t.Fatal(err)
			}
			for _, f := range []frame.PixelFormat{frame.YUV420P, frame.RGB24} {
				for _, full := range []bool{false, true} {
					if f == frame.RGB24 && full {
						continue
					}
					want, _ := frame.New(f, w, h)
					got, _ := frame.New(f, w, h)
					want.ColorSpace, got.ColorSpace = frame.BT709, frame.BT709
					want.FullRange, got.FullRange = full, full
					if err := d.Download(want, tmp); err != nil {
						t.Fatal(err)
					}
					if err := d.SharpenDownload(got, src, 0.6); err != nil {
						t.Fatal(err)
					}
					for p := range f.NumPlanes() {
						if !bytes.Equal(got.Planes[p], want.Planes[p]) {
							t.Fatalf("workers %d %dx%d %v full %v: plane %d differs", workers, w, h, f, full, p)
						}
					}
				}
			}
		}
	}
}

// BenchmarkFinishUpscale1080to2160 is the per-frame device work of a
// vfx_finish job at 2160: Upload of a 1920x1080 YUV420P frame,
// UpscaleEdge to 3840x2160 and SharpenDownload to YUV420P (decode and
// encode not included).
func BenchmarkFinishUpscale1080to2160(b *testing.B) {
	e := newBench(b)
	in := randFrame(frame.YUV420P, fw, fh)
	out, _ := frame.New(frame.YUV420P, 2*fw, 2*fh)
	src := e.img(fw, fh, 3, 0, 1)
	big := e.img(2*fw, 2*fh, 3, 0, 1)
	e.run(frameBytes(in)+frameBytes(out), func() error {
		if err := e.d.Upload(src, in); err != nil {
			return err
		}
		if err := e.d.UpscaleEdge(big, src, 1); err != nil {
			return err
		}
		return e.d.SharpenDownload(out, big, 0.5)
	})
}

// BenchmarkUpscaleEdge1080to2160 is UpscaleEdge alone.
func BenchmarkUpscaleEdge1080to2160(b *testing.B) {
	e := newBench(b)
	src := e.img(fw, fh, 3, 0, 1)
	big := e.img(2*fw, 2*fh, 3, 0, 1)
	e.run(px(fw, fh, 3)+px(2*fw, 2*fh, 3), func() error { return e.d.UpscaleEdge(big, src, 1) })
}
