package bench

import (
	"errors"
	"fmt"
	"math"

	"github.com/vfxrender/vfx/matte"
)

// FitSet accumulates samples for one logistic model: d features per
// sample, a soft label in [0,1] (the true matte at the flow size) and a
// weight (each clip counts alike, whatever its size and length).
type FitSet struct {
	D int
	X []float32 // D per sample
	Y []float32
	// Wt holds each sample"s own weight when any was added with
	// AddWeighted (nil: every sample weighs 1).
	Wt []float32
	// Signs, when set (D entries), constrain the fitted weights: +1 keeps
	// weight k at or above 0, -1 at or below, 0 leaves it free. A weight
	// held at 0 by its sign is left out of the Newton step (a projected
	// Newton method: it is freed again when the gradient points into its
	// allowed side).
	Signs []int8
	// clip of each sample, and the per-clip counts for the weights
	clip   []int32
	counts map[int32]int
}

// Add appends one sample of clip c.
func (s *FitSet) Add(c int32, phi []float32, y float32) {
	if s.Wt != nil {
		s.Wt = append(s.Wt, 1)
	}
	s.add(c, phi, y)
}

// AddWeighted appends one sample of clip c with its own weight (within
// the clip"s share).
func (s *FitSet) AddWeighted(c int32, phi []float32, y, wt float32) {
	if s.Wt == nil {
		s.Wt = make([]float32, len(s.Y), len(s.Y)+1)
		for i := range s.Wt {
			s.Wt[i] = 1
		}
	}
	s.Wt = append(s.Wt, wt)
	s.add(c, phi, y)
}

func (s *FitSet) add(c int32, phi []float32, y float32) {
	s.X = append(s.X, phi...)
	s.Y = append(s.Y, y)
	s.clip = append(s.clip, c)
	if s.counts == nil {
		s.counts = map[int32]int{}
	}
	s.counts[c]++
}

// Len is the number of samples.
func (s *FitSet) Len() int { return len(s.Y) }

// Clips is the number of clips with samples.
func (s *FitSet) Clips() int { return len(s.counts) }

// FitLogistic fits P(y=1) = sigmoid(w·x) to the set by Newton"s method
// (iteratively reweighted least squares) with an L2 penalty lambda per
// unit of total weight on every weight but the first (the bias), each
// clip"s samples weighted by 1 over their count (times their own weights,
// when they have them). It stops when the largest step is
// under 1e-6 or after 50 iterations.
func FitLogistic(s *FitSet, lambda float64) ([]float64, error) {
	d, n := s.D, s.Len()
	if n == 0 {
		return nil, errors.New("bench: fit: no samples")
	}
	w := make([]float64, d)
	wt := make([]float64, n)
	for i, c := range s.clip {
		wt[i] = 1 / float64(s.counts[c])
		if s.Wt != nil {
			wt[i] *= float64(s.Wt[i])
		}
	}
	total := float64(len(s.counts))
	h := make([]float64, d*d)
	g := make([]float64, d)
	for it := 0; it < 50; it++ {
		for k := range h {
			h[k] = 0
		}
		for k := range g {
			g[k] = 0
		}
		for i := 0; i < n; i++ {
			x := s.X[i*d : (i+1)*d]
			z := 0.0
			for k, v := range x {
				z += w[k] * float64(v)
			}
			p := 1 / (1 + math.Exp(-z))
			r := wt[i] * (float64(s.Y[i]) - p)
			q := wt[i] * max(p*(1-p), 1e-6)
			for a, va := range x {
				if va == 0 {
					continue
				}
				g[a] += r * float64(va)
				row := h[a*d:]
				fa := q * float64(va)
				for b := a; b < d; b++ {
					row[b] += fa * float64(x[b])
				}
			}
		}
		for a := 0; a < d; a++ {
			for b := 0; b < a; b++ {
				h[a*d+b] = h[b*d+a]
			}
			if a > 0 {
				h[a*d+a] += lambda * total
				g[a] -= lambda * total * w[a]
			}
			h[a*d+a] += 1e-9 * total
		}
		held := s.held(w, g)
		for k := range held {
			if held[k] {
				for b := 0; b < d; b++ {
					h[k*d+b], h[b*d+k] = 0, 0
				}
				h[k*d+k], g[k] = 1, 0
			}
		}
		step, err := solveSPD(h, g, d)
		if err != nil {
			return nil, fmt.Errorf("bench: fit: %w", err)
		}
		big := 0.0
		for k := range w {
			w[k] += step[k]
			if k < len(s.Signs) && float64(s.Signs[k])*w[k] < 0 {
				w[k] = 0
			}
			big = max(big, math.Abs(step[k]))
		}
		if big < 1e-6 {
			break
		}
	}
	return w, nil
}

// held reports the weights a sign constraint holds at 0 for the next
// Newton step: those at 0 whose gradient g (of the penalised
// log-likelihood) points out of their allowed side.
func (s *FitSet) held(w, g []float64) []bool {
	out := make([]bool, len(w))
	for k, sg := range s.Signs {
		if k < len(w) && sg != 0 && w[k] == 0 && float64(sg)*g[k] <= 0 {
			out[k] = true
		}
	}
	return out
}

// LogLoss is the set"s mean cross-entropy (per clip, then over clips)
// under weights w.
func LogLoss(s *FitSet, w []float64) float64 { return LogLossTrees(s, w, nil) }

// solveSPD solves h·x = g for a symmetric positive definite h (d x d) by
// Cholesky decomposition.
func solveSPD(h, g []float64, d int) ([]float64, error) {
	l := make([]float64, d*d)
	for i := 0; i < d; i++ {
		for j := 0; j <= i; j++ {
			s := h[i*d+j]
			for k := 0; k < j; k++ {
				s -= l[i*d+k] * l[j*d+k]
			}
			if i == j {
				if s <= 0 {
					return nil, fmt.Errorf("matrix not positive definite at %d (%g)", i, s)
				}
				l[i*d+i] = math.Sqrt(s)
			} else {
				l[i*d+j] = s / l[j*d+j]
			}
		}
	}
	y := make([]float64, d)
	for i := 0; i < d; i++ {
		s := g[i]
		for k := 0; k < i; k++ {
			s -= l[i*d+k] * y[k]
		}
		y[i] = s / l[i*d+i]
	}
	x := make([]float64, d)
	for i := d - 1; i >= 0; i-- {
		s := y[i]
		for k := i + 1; k < d; k++ {
			s -= l[k*d+i] * x[k]
		}
		x[i] = s / l[i*d+i]
	}
	return x, nil
}

// FitData collects the fusion"s and the gap fill"s traces of a benchmark
// run with the true mattes at the flow size, for FitFusion.
type FitData struct {
	// Stride samples every Stride-th pixel in x and y of the frames the
	// network ran on, and every 2·Stride-th of the frames between them
	// (three times as many).
	Stride int
	// Steps are the models to fit: "select", "auto", "gap" (per pixel)
	// and "gate" (select"s and auto"s frame gates); nil fits every one.
	Steps map[string]bool
	// DropGate are gate features (indices into matte.GateFeatureNames)
	// left out of the gates' fits: their samples read 0 there, so their
	// weights fit to 0 (and the colour model is not asked for them).
	DropGate []int
	// GateSigns constrain the gates' weights (see FitSet.Signs).
	GateSigns []int8
	// Trees, with the "select" step, boosts this many trees on the fitted
	// select weights' residuals (FitTrees, DefaultTreeOptions otherwise;
	// 0: none). With the "trees" step and not "select", the trees are
	// boosted on Base, the select weights of the model the run used,
	// which are kept.
	Trees    int
	Base     []float64
	Select   FitSet
	Auto     FitSet
	Gap      FitSet
	Gate     FitSet
	GateAuto FitSet
	Mem      FitSet
	Region   FitSet
	clips    map[string]int32
}

// Wants reports whether step is to be fitted.
func (fd *FitData) Wants(step string) bool { return fd.Steps == nil || fd.Steps[step] }

func (fd *FitData) clipID(name string) int32 {
	if fd.clips == nil {
		fd.clips = map[string]int32{}
		fd.Select.D, fd.Auto.D, fd.Gap.D = matte.NumFusionFeatures, matte.NumFusionFeatures, matte.NumGapFeatures
		fd.Gate.D, fd.GateAuto.D = matte.NumGateFeatures, matte.NumGateFeatures
		fd.Mem.D = matte.NumMemFeatures
		fd.Region.D = matte.NumRegionFeatures
	}
	id, ok := fd.clips[name]
	if !ok {
		id = int32(len(fd.clips))
		fd.clips[name] = id
	}
	return id
}

// add samples one traced frame of clip (truth at the traced size) every
// step-th pixel in x and y.
func (fd *FitData) add(set *FitSet, clip int32, step, w, h, d int, phi, truth []float32) {
	st := max(step, 1)
	for y := st / 2; y < h; y += st {
		for x := st / 2; x < w; x += st {
			i := y*w + x
			set.Add(clip, phi[i*d:(i+1)*d], truth[i])
		}
	}
}

// Subset is the data of the named clips only (copies).
func (fd *FitData) Subset(clips []string) *FitData {
	keep := map[int32]bool{}
	for _, c := range clips {
		if id, ok := fd.clips[c]; ok {
			keep[id] = true
		}
	}
	out := &FitData{Stride: fd.Stride, Steps: fd.Steps, DropGate: fd.DropGate, GateSigns: fd.GateSigns, Trees: fd.Trees, Base: fd.Base, clips: fd.clips}
	out.Select.D, out.Auto.D, out.Gap.D = fd.Select.D, fd.Auto.D, fd.Gap.D
	out.Gate.D, out.GateAuto.D, out.Mem.D, out.Region.D = fd.Gate.D, fd.GateAuto.D, fd.Mem.D, fd.Region.D
	for _, p := range [][2]*FitSet{{&fd.Select, &out.Select}, {&fd.Auto, &out.Auto}, {&fd.Gap, &out.Gap}, {&fd.Gate, &out.Gate}, {&fd.GateAuto, &out.GateAuto}, {&fd.Mem, &out.Mem}, {&fd.Region, &out.Region}} {
		src, dst := p[0], p[1]
		for i, c := range src.clip {
			if !keep[c] {
				continue
			}
			if src.Wt != nil {
				dst.AddWeighted(c, src.X[i*src.D:(i+1)*src.D], src.Y[i], src.Wt[i])
			} else {
				dst.Add(c, src.X[i*src.D:(i+1)*src.D], src.Y[i])
			}
		}
	}
	return out
}

// FitFusion fits the three models of data into a new matte.FusionModel
// (lambda: see FitLogistic); a set without samples keeps its hand rule.
func FitFusion(data *FitData, lambda float64) (*matte.FusionModel, error) {
	m := matte.NewFusionModel()
	var err error
	if data.Select.Len() > 0 && data.Wants("select") {
		if m.Select, err = FitLogistic(&data.Select, lambda); err != nil {
			return nil, err
		}
		if data.Trees > 0 {
			if m.SelectTrees, err = FitTrees(&data.Select, m.Select, TreeOptions{Rounds: data.Trees}); err != nil {
				return nil, err
			}
		}
	}
	if data.Select.Len() > 0 && !data.Wants("select") && data.Wants("trees") && data.Trees > 0 {
		if len(data.Base) != data.Select.D {
			return nil, fmt.Errorf("bench: fit: trees on the run's select weights: the model has %d select weights for %d features", len(data.Base), data.Select.D)
		}
		m.Select = append([]float64(nil), data.Base...)
		if m.SelectTrees, err = FitTrees(&data.Select, m.Select, TreeOptions{Rounds: data.Trees}); err != nil {
			return nil, err
		}
	}
	if data.Auto.Len() > 0 && data.Wants("auto") {
		if m.Auto, err = FitLogistic(&data.Auto, lambda); err != nil {
			return nil, err
		}
	}
	if data.Gap.Len() > 0 && data.Wants("gap") {
		if m.Gap, err = FitLogistic(&data.Gap, lambda); err != nil {
			return nil, err
		}
	}
	data.Gate.Signs, data.GateAuto.Signs = data.GateSigns, data.GateSigns
	if data.Gate.Len() > 0 && data.Wants("gate") {
		if m.Gate, err = FitLogistic(&data.Gate, lambda); err != nil {
			return nil, err
		}
	}
	if data.GateAuto.Len() > 0 && data.Wants("gate") {
		if m.GateAuto, err = FitLogistic(&data.GateAuto, lambda); err != nil {
			return nil, err
		}
	}
	if data.Mem.Len() > 0 && data.Wants("mem") {
		if m.Mem, err = FitLogistic(&data.Mem, lambda); err != nil {
			return nil, err
		}
	}
	if data.Region.Len() > 0 && data.Wants("region") {
		if m.Region, err = FitLogistic(&data.Region, lambda); err != nil {
			return nil, err
		}
	}
	return m, nil
}
