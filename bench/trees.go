package bench

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/vfxrender/vfx/matte"
)

// TreeOptions are FitTrees' settings. The zero value of a field takes
// DefaultTreeOptions' value.
type TreeOptions struct {
	// Rounds is the number of trees.
	Rounds int
	// Depth is each tree's depth (1..matte.MaxTreeDepth).
	Depth int
	// Shrink multiplies every leaf's Newton step (the learning rate).
	Shrink float64
	// Lambda is the L2 penalty on a leaf's value, and MinHess the least
	// Hessian weight on either side of a split, both as shares of the
	// whole set's Hessian weight at the base model (sum over samples of
	// weight·p(1-p)): a leaf holding a hundredth of that curvature takes
	// half its Newton step with Lambda 1e-2, and no split leaves a side
	// with under MinHess of it. (Per unit of sample weight they would
	// not scale: after a good logistic fit most samples are confident
	// and the curvature is a small part of their weight.)
	Lambda, MinHess float64
	// Sample is the share of samples each tree is grown on (a seeded
	// draw per round; the margins of all samples are updated).
	Sample float64
	// Bins is the most thresholds tried per feature (at quantiles).
	Bins int
	// Seed seeds the draws.
	Seed uint64
}

// DefaultTreeOptions: shallow trees, a small learning rate and strong
// leaf penalties, so that the trees correct the linear model only where
// many samples of many clips agree.
var DefaultTreeOptions = TreeOptions{Rounds: 40, Depth: 3, Shrink: 0.1, Lambda: 1e-2, MinHess: 1e-3, Sample: 0.5, Bins: 32, Seed: 1}

func (o TreeOptions) withDefaults() TreeOptions {
	d := DefaultTreeOptions
	orDefault(&o.Rounds, d.Rounds)
	orDefault(&o.Depth, d.Depth)
	orDefault(&o.Shrink, d.Shrink)
	orDefault(&o.Lambda, d.Lambda)
	orDefault(&o.MinHess, d.MinHess)
	orDefault(&o.Sample, d.Sample)
	orDefault(&o.Bins, d.Bins)
	return o
}

// orDefault sets *v to d when it is the zero value.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// FitTrees boosts regression trees on the residuals of the logistic model
// base (weights over s's features, as FitLogistic returns): each round
// fits a tree to the log-loss's gradient and Hessian at the current
// margins (base·x plus the trees so far), each leaf taking the penalised
// Newton step -G/(H+Lambda) times Shrink. Samples are weighted as in
// FitLogistic (each clip's alike). Deterministic for a given seed.
func FitTrees(s *FitSet, base []float64, o TreeOptions) (matte.Trees, error) {
	o = o.withDefaults()
	d, n := s.D, s.Len()
	switch {
	case n == 0:
		return nil, errors.New("bench: fit trees: no samples")
	case len(base) != d:
		return nil, fmt.Errorf("bench: fit trees: %d base weights for %d features", len(base), d)
	case o.Rounds < 0 || o.Depth < 1 || o.Depth > matte.MaxTreeDepth || o.Shrink <= 0 || o.Lambda < 0 ||
		o.MinHess < 0 || o.Sample <= 0 || o.Sample > 1 || o.Bins < 1 || o.Bins > 255:
		return nil, fmt.Errorf("bench: fit trees: options %+v out of range", o)
	}
	wt := make([]float64, n)
	for i, c := range s.clip {
		wt[i] = 1 / float64(s.counts[c])
		if s.Wt != nil {
			wt[i] *= float64(s.Wt[i])
		}
	}
	thr := treeThresholds(s, o.Bins, o.Seed)
	bins := binSamples(s, thr)
	z := make([]float64, n)
	for i := range z {
		x := s.X[i*d : (i+1)*d]
		for k, v := range x {
			z[i] += base[k] * float64(v)
		}
	}
	hTotal := 0.0
	for i := range z {
		p := 1 / (1 + math.Exp(-z[i]))
		hTotal += wt[i] * max(p*(1-p), 1e-6)
	}
	lambda, minH := o.Lambda*hTotal, o.MinHess*hTotal
	g, h := make([]float64, n), make([]float64, n)
	node := make([]int32, n)
	rng := rand.New(rand.NewPCG(o.Seed, 0x7265657374))
	nb := o.Bins + 1
	inner := 1<<o.Depth - 1
	var out matte.Trees
	for range o.Rounds {
		for i := range z {
			p := 1 / (1 + math.Exp(-z[i]))
			g[i] = wt[i] * (p - float64(s.Y[i]))
			h[i] = wt[i] * max(p*(1-p), 1e-6)
			node[i] = -1
			if rng.Float64() < o.Sample {
				node[i] = 0
			}
		}
		tr := matte.Tree{Depth: o.Depth, Feat: make([]int32, inner), Thr: make([]float32, inner), Leaf: make([]float32, inner+1)}
		nodeBin := make([]int, inner) // the split's bin per node (-1: none)
		for level := range o.Depth {
			first, count := 1<<level-1, 1<<level
			// Histograms of G and H per node of this level, feature and bin.
			hg := make([]float64, count*d*nb)
			hh := make([]float64, count*d*nb)
			gs, hs := make([]float64, count), make([]float64, count)
			for i, k := range node {
				if k < 0 {
					continue
				}
				j := int(k) - first
				gs[j] += g[i]
				hs[j] += h[i]
				b := bins[i*d : (i+1)*d]
				off := j * d * nb
				for f, v := range b {
					hg[off+f*nb+int(v)] += g[i]
					hh[off+f*nb+int(v)] += h[i]
				}
			}
			split := nodeBin[first : first+count] // right when bin > split; -1 none
			for j := range count {
				k := first + j
				tr.Feat[k], tr.Thr[k] = -1, 0
				split[j] = -1
				parent := gs[j] * gs[j] / (hs[j] + lambda)
				best := 1e-12 * hTotal
				for f := range d {
					if len(thr[f]) == 0 {
						continue
					}
					off := j*d*nb + f*nb
					gl, hl := 0.0, 0.0
					for b := 0; b < len(thr[f]); b++ {
						gl += hg[off+b]
						hl += hh[off+b]
						gr, hr := gs[j]-gl, hs[j]-hl
						if hl < minH || hr < minH {
							continue
						}
						gain := gl*gl/(hl+lambda) + gr*gr/(hr+lambda) - parent
						if gain > best {
							best = gain
							tr.Feat[k], tr.Thr[k] = int32(f), thr[f][b]
							split[j] = b
						}
					}
				}
			}
			for i, k := range node {
				if k < 0 {
					continue
				}
				j := int(k) - first
				right := split[j] >= 0 && int(bins[i*d+int(tr.Feat[k])]) > split[j]
				if right {
					node[i] = 2*k + 2
				} else {
					node[i] = 2*k + 1
				}
			}
		}
		gl, hl := make([]float64, inner+1), make([]float64, inner+1)
		for i, k := range node {
			if k >= 0 {
				gl[int(k)-inner] += g[i]
				hl[int(k)-inner] += h[i]
			}
		}
		for j := range tr.Leaf {
			tr.Leaf[j] = float32(-o.Shrink * gl[j] / (hl[j] + lambda))
		}
		for i := range z {
			z[i] += float64(tr.Leaf[treeLeaf(&tr, nodeBin, bins[i*d:(i+1)*d])])
		}
		out = append(out, tr)
	}
	return out, nil
}

// treeLeaf is the leaf index of a binned sample: the same path as
// matte.Tree's (x > Thr[k] is bin > the split's bin, nodeBin[k]).
func treeLeaf(t *matte.Tree, nodeBin []int, b []uint8) int {
	k := 0
	for range t.Depth {
		if nb := nodeBin[k]; nb >= 0 && t.Feat[k] >= 0 && int(b[t.Feat[k]]) > nb {
			k = 2*k + 2
		} else {
			k = 2*k + 1
		}
	}
	return k - len(t.Feat)
}

// treeThresholds are each feature's candidate thresholds: the distinct
// values' midpoints when a feature has at most bins+1 of them, else
// quantiles of a seeded draw of up to 200,000 samples (ascending, unique).
func treeThresholds(s *FitSet, bins int, seed uint64) [][]float32 {
	d, n := s.D, s.Len()
	rng := rand.New(rand.NewPCG(seed, 0x62696e73))
	take := min(n, 200000)
	idx := make([]int, take)
	for i := range idx {
		idx[i] = i
		if take < n {
			idx[i] = rng.IntN(n)
		}
	}
	out := make([][]float32, d)
	vals := make([]float32, take)
	for f := range d {
		for j, i := range idx {
			vals[j] = s.X[i*d+f]
		}
		slices.Sort(vals)
		u := slices.Compact(slices.Clone(vals))
		var t []float32
		if len(u) <= bins+1 {
			for j := 0; j+1 < len(u); j++ {
				t = append(t, u[j]+(u[j+1]-u[j])/2)
			}
		} else {
			for q := 1; q <= bins; q++ {
				v := vals[q*(take-1)/(bins+1)]
				if len(t) == 0 || v > t[len(t)-1] {
					t = append(t, v)
				}
			}
			// x > v must send the largest values right: drop a last
			// threshold equal to the maximum.
			if len(t) > 0 && t[len(t)-1] >= u[len(u)-1] {
				t = t[:len(t)-1]
			}
		}
		out[f] = t
	}
	return out
}

// binSamples gives each sample's feature its bin: the number of the
// feature's thresholds it is above.
func binSamples(s *FitSet, thr [][]float32) []uint8 {
	d, n := s.D, s.Len()
	out := make([]uint8, n*d)
	for i := range n {
		for f := range d {
			t := thr[f]
			x := s.X[i*d+f]
			k, _ := slices.BinarySearchFunc(t, x, func(a, b float32) int {
				if a < b {
					return -1
				}
				return 1
			})
			out[i*d+f] = uint8(k)
		}
	}
	return out
}

// LogLossTrees is LogLoss of the model sigmoid(w·x + t(x)).
func LogLossTrees(s *FitSet, w []float64, t matte.Trees) float64 {
	per := map[int32]float64{}
	for i := range s.Len() {
		x := s.X[i*s.D : (i+1)*s.D]
		z := t.Margin(x)
		for k, v := range x {
			z += w[k] * float64(v)
		}
		p := min(max(1/(1+math.Exp(-z)), 1e-7), 1-1e-7)
		y := float64(s.Y[i])
		per[s.clip[i]] -= y*math.Log(p) + (1-y)*math.Log(1-p)
	}
	sum := 0.0
	for c, v := range per {
		sum += v / float64(s.counts[c])
	}
	return sum / float64(len(per))
}
