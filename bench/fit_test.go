package bench

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFitLogistic recovers known weights from samples drawn from a
// logistic model, with clips of unequal size weighted alike.
func TestFitLogistic(t *testing.T) {
	want := []float64{-0.5, 2, -1.25}
	r := rand.New(rand.NewPCG(1, 2))
	s := &FitSet{D: 3}
	for c := int32(0); c < 4; c++ {
		for range 5000 * (int(c) + 1) {
			x := []float32{1, float32(r.NormFloat64()), float32(r.NormFloat64())}
			z := want[0] + want[1]*float64(x[1]) + want[2]*float64(x[2])
			y := float32(0)
			if r.Float64() < 1/(1+math.Exp(-z)) {
				y = 1
			}
			s.Add(c, x, y)
		}
	}
	w, err := FitLogistic(s, 0)
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if math.Abs(w[k]-want[k]) > 0.1 {
			t.Errorf("weight %d: %.3f, want %.3f", k, w[k], want[k])
		}
	}
	if l0, l := LogLoss(s, []float64{0, 0, 0}), LogLoss(s, w); l >= l0 {
		t.Errorf("log loss %.4f not below the null model's %.4f", l, l0)
	}
	if _, err := FitLogistic(&FitSet{D: 2}, 0); err == nil {
		t.Error("an empty set: no error")
	}
}
