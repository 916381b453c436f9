package bench

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vfxrender/vfx/matte"
)

// treeSet draws an interaction no linear model holds: y = 1 where the
// signs of x1 and x2 agree (an XOR of the two), x3 a linear term, over
// clips of unequal size.
func treeSet(seed uint64) *FitSet {
	r := rand.New(rand.NewPCG(seed, 3))
	s := &FitSet{D: 4}
	for c := int32(0); c < 3; c++ {
		for range 4000 * (int(c) + 1) {
			x := []float32{1, float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())}
			z := 0.5 * float64(x[3])
			if (x[1] > 0) == (x[2] > 0) {
				z += 3
			} else {
				z -= 3
			}
			y := float32(0)
			if r.Float64() < 1/(1+math.Exp(-z)) {
				y = 1
			}
			s.Add(c, x, y)
		}
	}
	return s
}

// TestFitTrees: boosted on a logistic fit's residuals, the trees learn
// the interaction the linear model cannot (the held-out loss falls far
// below the linear model's), the same seed gives the same trees, a model
// file keeps them through JSON, and bad options are refused.
func TestFitTrees(t *testing.T) {
	train, test := treeSet(1), treeSet(2)
	w, err := FitLogistic(train, 0)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := FitTrees(train, w, TreeOptions{Rounds: 30, Depth: 2, Shrink: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 30 {
		t.Fatalf("%d trees, want 30", len(tr))
	}
	lin, boosted := LogLossTrees(test, w, nil), LogLossTrees(test, w, tr)
	t.Logf("held-out log loss: linear %.4f, with trees %.4f", lin, boosted)
	if !(boosted < 0.75*lin) {
		t.Errorf("held-out log loss with trees %.4f, want well under the linear model's %.4f", boosted, lin)
	}
	again, err := FitTrees(train, w, TreeOptions{Rounds: 30, Depth: 2, Shrink: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(tr)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Error("two fits with the same seed differ")
	}
	// A feature that is the same everywhere is never split on.
	for _, tree := range tr {
		for k, f := range tree.Feat {
			if f == 0 {
				t.Errorf("tree splits on the constant bias feature at %v", tree.Thr[k])
			}
		}
	}
	for _, o := range []TreeOptions{{Rounds: -1}, {Depth: matte.MaxTreeDepth + 1}, {Sample: 1.5}, {Bins: 256}} {
		if _, err := FitTrees(train, w, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	if _, err := FitTrees(train, w[:2], TreeOptions{}); err == nil {
		t.Error("base weights of the wrong length accepted")
	}
	if _, err := FitTrees(&FitSet{D: 4}, w, TreeOptions{}); err == nil {
		t.Error("an empty set accepted")
	}
}

// TestFitFusionTreesStep: the "trees" step without "select" keeps the
// run's select weights (Base) and boosts trees on them; a base of the
// wrong length is refused.
func TestFitFusionTreesStep(t *testing.T) {
	s := treeSet(3)
	base := make([]float64, matte.NumFusionFeatures)
	base[0] = 0.25
	fd := &FitData{Steps: map[string]bool{"trees": true}, Trees: 3, Base: base}
	fd.Select.D = matte.NumFusionFeatures
	for i := range s.Len() {
		x := make([]float32, matte.NumFusionFeatures)
		copy(x, s.X[i*s.D:(i+1)*s.D])
		fd.Select.Add(s.clip[i], x, s.Y[i])
	}
	m, err := FitFusion(fd, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Select) != len(base) || m.Select[0] != 0.25 || len(m.SelectTrees) != 3 {
		t.Fatalf("select weights %v, %d trees: want the base kept and 3 trees", m.Select, len(m.SelectTrees))
	}
	fd.Base = base[:3]
	if _, err := FitFusion(fd, 1e-3); err == nil {
		t.Error("a base of 3 weights for 20 features accepted")
	}
}
