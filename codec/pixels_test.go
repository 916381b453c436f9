package codec

import (
	"fmt"
	"math/rand"
	"testing"
)

func TestCopyRotate(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, rot := range []int{0, 90, 180, 270} {
		for _, bpp := range []struct{ s, d, ch int }{{1, 1, 0}, {3, 3, 0}, {2, 1, 1}, {2, 1, 0}} {
			for _, sz := range [][2]int{{1, 1}, {5, 3}, {37, 19}, {16, 33}} {
				w, h := sz[0], sz[1]
				t.Run(fmt.Sprintf("rot%d-%dto%d-ch%d-%dx%d", rot, bpp.s, bpp.d, bpp.ch, w, h), func(t *testing.T) {
					srcStride := w*bpp.s + 3
					src := make([]byte, srcStride*h)
					rng.Read(src)
					dw, dh := rotSize(w, h, rot)
					dstStride := dw*bpp.d + 5
					got := make([]byte, dstStride*dh)
					copyRotate(got, dstStride, src, srcStride, w, h, bpp.s, bpp.d, bpp.ch, rot)
					for y := 0; y < h; y++ {
						for x := 0; x < w; x++ {
							var X, Y int
							switch rot {
							case 0:
								X, Y = x, y
							case 90:
								X, Y = h-1-y, x
							case 180:
								X, Y = w-1-x, h-1-y
							case 270:
								X, Y = y, w-1-x
							}
							for c := 0; c < bpp.d; c++ {
								sc := c
								if bpp.d == 1 {
									sc = bpp.ch
								}
								if g, want := got[Y*dstStride+X*bpp.d+c], src[y*srcStride+x*bpp.s+sc]; g != want {
									t.Fatalf("(%d,%d) -> (%d,%d)[%d]: %d, want %d", x, y, X, Y, c, g, want)
								}
							}
						}
					}
				})
			}
		}
	}
}

func TestSnapRotation(t *testing.T) {
	for in, want := range map[float64]int{0: 0, 90: 90, -90: 270, 180: 180, -180: 180, 270: 270, 89.9: 90, 359: 0, 450: 90, -0.1: 0} {
		if got := snapRotation(in); got != want {
			t.Errorf("snapRotation(%v) = %d, want %d", in, got, want)
		}
	}
}

func TestLimitsDefaults(t *testing.T) {
	if got := (Limits{}).withDefaults(); got != DefaultLimits() {
		t.Errorf("zero limits = %+v", got)
	}
	d := DefaultLimits()
	if d.MaxPixels != 2_770_000 || d.MaxFrames != 240 || d.MaxAspect != 4 {
		t.Errorf("defaults %+v", d)
	}
	if err := d.checkSize(1920, 1440, 1920, 1440); err != nil {
		t.Errorf("1920x1440: %v", err)
	}
	if err := d.checkSize(400, 100, 400, 100); err != nil {
		t.Errorf("exactly 4:1: %v", err)
	}
}
