package render

import "testing"

// TestContactReach: a subject 100 px tall with two feet, the near one on
// the lowest line and the far one 8 px higher (8% of the height): a reach
// of 1/20 (5 px) puts a contact shadow under the near foot only, 1/10 (10
// px) under both; 0 is DefaultContactReach (1/8: both).
func TestContactReach(t *testing.T) {
	const w, h = 60, 130
	a := make([]float32, w*h)
	// A body from y = 10 to 100, x 20..39; the near foot (x 20..25) down
	// to y = 109, the far one (x 34..39) down to y = 101.
	for y := 10; y <= 109; y++ {
		for x := 20; x < 40; x++ {
			if y <= 100 || (x < 26) || (x >= 34 && y <= 101) {
				a[y*w+x] = 1
			}
		}
	}
	under := func(reach float64) (near, far float32) {
		q := &lookImages{contactReach: reach}
		d := make([]float32, w*h)
		q.shadowMap(d, a, w, h)
		return d[111*w+22], d[103*w+37]
	}
	for _, c := range []struct {
		reach float64
		near  bool
		far   bool
		name  string
	}{
		{1.0 / 20, true, false, "1/20"},
		{1.0 / 10, true, true, "1/10"},
		{0, true, true, "default"},
	} {
		n, f := under(c.reach)
		if (n > 0) != c.near || (f > 0) != c.far {
			t.Errorf("reach %s: contact under the near foot %v, the far foot %v; want %v, %v", c.name, n, f, c.near, c.far)
		}
	}
	if DefaultContactReach < 1.0/10 {
		t.Fatalf("the test's default case assumes DefaultContactReach >= 1/10, is %v", DefaultContactReach)
	}
}

// TestCastShadowUnderHorizon: a subject 100 px tall lit from in front
// and low (its near-field shadow would climb 145 px up the picture) casts
// a shadow that recedes towards the horizon, half its height above its
// ground line, and never crosses it; the shadow still reaches most of the
// way there (beyond 30 px), and by its foot it is where the near-field
// rule puts it.
func TestCastShadowUnderHorizon(t *testing.T) {
	const w, h = 300, 200
	const top, yg = 40, 139
	a := make([]float32, w*h)
	for y := top; y <= yg; y++ {
		for x := 140; x < 160; x++ {
			a[y*w+x] = 1
		}
	}
	q := &lookImages{castDark: 0.5, keyDir: [3]float32{-0.1, 0.2, 0.97}}
	d := make([]float32, w*h)
	q.shadowMap(d, a, w, h)
	up := 0 // the highest shadow pixel's height over the ground line
	for y := range h {
		for x := range w {
			if d[y*w+x] > 0 && a[y*w+x] < 0.5 {
				up = max(up, yg-y)
			}
		}
	}
	const horizon = (yg - top + 1) / 2
	if up >= horizon || up < 30 {
		t.Errorf("the cast shadow climbs %d px over the ground line; want 30 to %d (the horizon)", up, horizon-1)
	}
	// Beside the subject's foot, 6 px up: the near field puts the points
	// 4 to 5 px above the ground at 2 to 2.5 px right of the subject's
	// right edge, nearly unchanged by the perspective (d/(d+7) = 0.88).
	beside := false
	for x := 160; x < 164; x++ {
		beside = beside || d[(yg-6)*w+x] == 0.5
	}
	if !beside {
		t.Errorf("no shadow beside the foot: %v", d[(yg-6)*w+160:][:4])
	}
}
