package look

import (
	"math"
	"testing"

	"github.com/vfxrender/vfx/kernels"
)

// TestPlaceBoxError: a soft-edged disc placed by kernels.Place (area when
// shrinking, bilinear when enlarging) measures within a tenth of a pixel
// of its requested box; the same matte measured against another placement
// reads the difference (a move of 3 px reads about 3).
func TestPlaceBoxError(t *testing.T) {
	const w, h = 160, 120
	a := make([]float32, w*h)
	for y := range h {
		for x := range w {
			d := math.Hypot(float64(x)+0.5-70, float64(y)+0.5-64)
			a[y*w+x] = float32(min(1, max(0, (25-d)/2+0.5)))
		}
	}
	d := kernels.NewCPU(1)
	defer d.Close()
	src := upload3(d, w, h, 1, a)
	dst, err := d.NewImage(w, h, 1)
	if err != nil || src == nil {
		t.Fatal("allocate", err)
	}
	for _, pl := range []kernels.Placement{{Scale: 0.6, X: 0.15, Y: -0.15}, {Scale: 1.4, X: -0.1, Y: -0.1}, {Scale: 1, X: 0.2}} {
		if err := d.Place(dst, src, pl, true); err != nil {
			t.Fatal(err)
		}
		placed, _ := d.ReadPixels(dst)
		if e := placeBoxError(a, placed, w, h, pl); !(e <= 0.1) {
			t.Errorf("%+v: box error %.3f px, want <= 0.1", pl, e)
		}
		off := pl
		off.X += 3.0 / w
		if e := placeBoxError(a, placed, w, h, off); math.Abs(e-3) > 0.1 {
			t.Errorf("%+v measured against a placement 3 px to the right: %.3f px, want 3", pl, e)
		}
	}
	if e := placeBoxError(a, make([]float32, w*h), w, h, kernels.Placement{Scale: 1}); !math.IsNaN(e) {
		t.Errorf("empty placed matte: %v, want NaN", e)
	}
}
