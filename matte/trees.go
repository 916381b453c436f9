package matte

import (
	"fmt"
	"math"
)

// Tree is one regression tree of a boosted ensemble (Trees) over a
// feature vector: complete and of depth Depth, its internal nodes
// breadth-first (node k's children are 2k+1 and 2k+2), a sample going to
// the right child where its feature Feat[k] is above Thr[k] (a node that
// does not split has Feat[k] -1: every sample goes left). Leaf holds the
// 2^Depth leaves' values, added to the margin (log-odds).
type Tree struct {
	Depth int       `json:"depth"`
	Feat  []int32   `json:"feat"`
	Thr   []float32 `json:"thr"`
	Leaf  []float32 `json:"leaf"`
}

// MaxTreeDepth bounds a tree's depth (a file asking for more is refused).
const MaxTreeDepth = 8

// Trees is a boosted ensemble: the sum of its trees' leaf values is added
// to a logistic model's margin, so that the model stays sigmoid(w·x + T(x)).
// It is fitted by `vfx bench matte --fit ... --fit-trees N` on the linear
// model's residuals (bench.FitTrees): the linear features carry what
// holds everywhere, the trees the interactions between them.
type Trees []Tree

// Margin is the ensemble's sum for the feature vector x.
func (t Trees) Margin(x []float32) float64 {
	s := 0.0
	for i := range t {
		s += float64(t[i].leaf(x))
	}
	return s
}

func (t *Tree) leaf(x []float32) float32 {
	k := 0
	for range t.Depth {
		if f := t.Feat[k]; f >= 0 && x[f] > t.Thr[k] {
			k = 2*k + 2
		} else {
			k = 2*k + 1
		}
	}
	return t.Leaf[k-len(t.Feat)]
}

// check refuses a tree that does not fit d features or is malformed.
func (t Trees) check(d int) error {
	for i, tr := range t {
		if tr.Depth < 1 || tr.Depth > MaxTreeDepth {
			return fmt.Errorf("matte: fusion model: tree %d: depth %d, want 1..%d", i, tr.Depth, MaxTreeDepth)
		}
		nodes := 1<<tr.Depth - 1
		if len(tr.Feat) != nodes || len(tr.Thr) != nodes || len(tr.Leaf) != nodes+1 {
			return fmt.Errorf("matte: fusion model: tree %d of depth %d: %d features, %d thresholds, %d leaves (want %d, %d, %d)",
				i, tr.Depth, len(tr.Feat), len(tr.Thr), len(tr.Leaf), nodes, nodes, nodes+1)
		}
		for _, f := range tr.Feat {
			if f < -1 || int(f) >= d {
				return fmt.Errorf("matte: fusion model: tree %d: feature %d of %d", i, f, d)
			}
		}
		for _, v := range tr.Thr {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("matte: fusion model: tree %d: threshold %v", i, v)
			}
		}
		for _, v := range tr.Leaf {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("matte: fusion model: tree %d: leaf %v", i, v)
			}
		}
	}
	return nil
}
