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
