package bench

import "testing"

// TestErode checks the square erosion at its edge: a pixel exactly r from
// the outside is kept, one r-1 from it is not, and the image border does
// not erode.
func TestErode(t *testing.T) {
	const w, h, r = 20, 12, 3
	m := make([]bool, w*h)
	for i := range m {
		m[i] = i%w != 10 // one outside column at x = 10
	}
	var tmp []bool
	e := erode(nil, &tmp, m, w, h, r)
	for x := 0; x < w; x++ {
		want := x < 10-r || x > 10+r
		for y := 0; y < h; y++ {
			if e[y*w+x] != want {
				t.Fatalf("x=%d y=%d: interior %v, want %v", x, y, e[y*w+x], want)
			}
		}
	}
}

// TestInteriorScores checks Interior and Half on a frame whose interior
// is half at alpha 0.5 and half at 1.
func TestInteriorScores(t *testing.T) {
	const w, h = 40, 40
	truth := make([]float32, w*h)
	pred := make([]float32, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if x >= 10 && x < 30 && y >= 10 && y < 30 {
				truth[y*w+x] = 1
				pred[y*w+x] = 1
				if x < 20 {
					pred[y*w+x] = 0.5
				}
			}
		}
	}
	s := &Scorer{W: w, H: h}
	for range 3 { // the protocol leaves out the first and last frame
		s.Add(pred, truth)
	}
	sc := s.Scores()
	// Interior: x, y in 15..24 (10x10); x < 20 is half of it.
	if sc.Interior != 50 || sc.Half != 50 {
		t.Fatalf("Interior %.1f Half %.1f, want 50 and 50", sc.Interior, sc.Half)
	}
}
