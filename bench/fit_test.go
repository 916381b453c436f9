package bench

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vfxrender/vfx/matte"
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

// TestFitLogisticWeighted checks that per-sample weights count: the same
// features labelled both ways, with the positives weighing three times
// the negatives, fit P = 3/4 (log-odds ln 3); and that a subset keeps the
// weights.
func TestFitLogisticWeighted(t *testing.T) {
	s := &FitSet{D: 1}
	for range 100 {
		s.Add(0, []float32{1}, 0)
		s.AddWeighted(0, []float32{1}, 1, 3)
	}
	w, err := FitLogistic(s, 0)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(w[0]-math.Log(3)) > 1e-3 {
		t.Errorf("bias %.4f, want ln 3 = %.4f", w[0], math.Log(3))
	}
	fd := &FitData{}
	id := fd.clipID("a")
	fd.clipID("b")
	fd.Gate = *s
	for i := range fd.Gate.clip {
		fd.Gate.clip[i] = id
	}
	sub := fd.Subset([]string{"a"})
	if sub.Gate.Len() != 200 || len(sub.Gate.Wt) != 200 || sub.Gate.Wt[1] != 3 {
		t.Fatalf("subset: %d samples, %d weights", sub.Gate.Len(), len(sub.Gate.Wt))
	}
	if fd.Subset([]string{"b"}).Gate.Len() != 0 {
		t.Error("subset of another clip holds samples")
	}
	// A fold's subset keeps the fit's settings (the sign constraints
	// were dropped from the fold files before session 25).
	fd.GateSigns, fd.DropGate, fd.Trees, fd.Base = []int8{0, 1}, []int{2}, 7, []float64{0.5}
	sub = fd.Subset([]string{"a"})
	if len(sub.GateSigns) != 2 || sub.GateSigns[1] != 1 || len(sub.DropGate) != 1 || sub.Trees != 7 || len(sub.Base) != 1 {
		t.Errorf("subset settings: signs %v, drop %v, trees %d, base %v", sub.GateSigns, sub.DropGate, sub.Trees, sub.Base)
	}
}

// TestFitLogisticSigns: data whose second weight is -1.25 fitted with
// that weight held at or above 0 gives it exactly 0 (and the others
// still near their values, the features being independent); held at or
// below 0 it is free again and comes back.
func TestFitLogisticSigns(t *testing.T) {
	want := []float64{-0.5, 2, -1.25}
	r := rand.New(rand.NewPCG(3, 4))
	s := &FitSet{D: 3}
	for range 20000 {
		x := []float32{1, float32(r.NormFloat64()), float32(r.NormFloat64())}
		z := want[0] + want[1]*float64(x[1]) + want[2]*float64(x[2])
		y := float32(0)
		if r.Float64() < 1/(1+math.Exp(-z)) {
			y = 1
		}
		s.Add(0, x, y)
	}
	s.Signs = []int8{0, 1, 1}
	w, err := FitLogistic(s, 0)
	if err != nil {
		t.Fatal(err)
	}
	if w[2] != 0 || w[1] <= 0 {
		t.Errorf("held at >= 0: weights %.3f, want w[2] exactly 0 and w[1] > 0", w)
	}
	s.Signs = []int8{0, 1, -1}
	w, err = FitLogistic(s, 0)
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if math.Abs(w[k]-want[k]) > 0.1 {
			t.Errorf("allowed sign: weight %d: %.3f, want %.3f", k, w[k], want[k])
		}
	}
}

// TestFitFusionRegion: region samples (soft labels: each region's share
// inside the true matte, weighted by its share of the frame) fit the
// region model alone when only that step is asked for, and a fold's
// subset keeps them.
func TestFitFusionRegion(t *testing.T) {
	fd := &FitData{Steps: map[string]bool{"region": true}}
	a, b := fd.clipID("a"), fd.clipID("b")
	phi := make([]float32, matte.NumRegionFeatures)
	// P(object) = sigmoid(-1 + 2·mem): the labels are that probability
	// itself (soft), on a grid of mem values.
	for k := range 41 {
		mem := float64(k-20) / 5
		phi[0], phi[1] = 1, float32(mem)
		y := 1 / (1 + math.Exp(-(-1 + 2*mem)))
		fd.Region.AddWeighted(a, phi, float32(y), 0.5)
		fd.Region.AddWeighted(b, phi, float32(y), 0.25)
	}
	m, err := FitFusion(fd, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Region) != matte.NumRegionFeatures || math.Abs(m.Region[0]+1) > 0.01 || math.Abs(m.Region[1]-2) > 0.01 {
		t.Fatalf("region weights %v, want bias -1 and mem 2", m.Region)
	}
	if len(m.Select)+len(m.Gap)+len(m.Mem) != 0 {
		t.Errorf("steps not asked for were fitted: select %d, gap %d, mem %d weights", len(m.Select), len(m.Gap), len(m.Mem))
	}
	if n := fd.Subset([]string{"b"}).Region.Len(); n != 41 {
		t.Errorf("clip b's subset: %d region samples, want 41", n)
	}
}
