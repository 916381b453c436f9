package bench

import (
	"fmt"
	"math"
)

// MatteScores are the DAVIS-style scores of one sequence. The means leave
// out the first and the last frame (the DAVIS protocol).
type MatteScores struct {
	J, F    float64   // mean region similarity (IoU) and boundary F-measure
	JDecay  float64   // mean J of the first quarter minus that of the last
	Flicker float64   // mean frame-to-frame change of |P|-|G| over the mean |G| (percent), see Scores
	PerJ    []float64 // J per frame (all frames)
	PerF    []float64 // F per frame (all frames)
}

func (s MatteScores) String() string {
	return fmt.Sprintf("J %.3f  F %.3f  J-decay %+.3f  flicker %.2f%%", s.J, s.F, s.JDecay, s.Flicker)
}

// binary thresholds a matte at 0.5.
func binary(m []float32) []bool {
	b := make([]bool, len(m))
	for i, v := range m {
		b[i] = v >= 0.5
	}
	return b
}

// JaccardIndex is |P∩G|/|P∪G|, 1 when both are empty.
func JaccardIndex(p, g []bool) float64 {
	var in, un int
	for i := range p {
		if p[i] && g[i] {
			in++
		}
		if p[i] || g[i] {
			un++
		}
	}
	if un == 0 {
		return 1
	}
	return float64(in) / float64(un)
}

// boundary marks the pixels of mask that have a 4-neighbour outside it
// (the image border does not count).
func boundary(m []bool, w, h int) []int {
	var out []int
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			if !m[i] {
				continue
			}
			if (x > 0 && !m[i-1]) || (x < w-1 && !m[i+1]) || (y > 0 && !m[i-w]) || (y < h-1 && !m[i+w]) {
				out = append(out, i)
			}
		}
	}
	return out
}

// BoundaryF is the DAVIS boundary F-measure: precision and recall of the
// boundary pixels matched within a tolerance of ceil(0.008 * diagonal)
// pixels; 1 when both boundaries are empty, 0 when only one is.
func BoundaryF(p, g []bool, w, h int) float64 {
	bp, bg := boundary(p, w, h), boundary(g, w, h)
	if len(bp) == 0 && len(bg) == 0 {
		return 1
	}
	if len(bp) == 0 || len(bg) == 0 {
		return 0
	}
	tol := int(math.Ceil(0.008 * math.Hypot(float64(w), float64(h))))
	mp := make([]bool, w*h)
	mg := make([]bool, w*h)
	for _, i := range bp {
		mp[i] = true
	}
	for _, i := range bg {
		mg[i] = true
	}
	near := func(i int, other []bool) bool {
		x0, y0 := i%w, i/w
		for dy := -tol; dy <= tol; dy++ {
			y := y0 + dy
			if y < 0 || y >= h {
				continue
			}
			for dx := -tol; dx <= tol; dx++ {
				x := x0 + dx
				if x < 0 || x >= w || dx*dx+dy*dy > tol*tol {
					continue
				}
				if other[y*w+x] {
					return true
				}
			}
		}
		return false
	}
	var hp, hg int
	for _, i := range bp {
		if near(i, mg) {
			hp++
		}
	}
	for _, i := range bg {
		if near(i, mp) {
			hg++
		}
	}
	prec, rec := float64(hp)/float64(len(bp)), float64(hg)/float64(len(bg))
	if prec+rec == 0 {
		return 0
	}
	return 2 * prec * rec / (prec + rec)
}

// Scorer accumulates per-frame scores of a sequence in frame order.
type Scorer struct {
	W, H   int
	perJ   []float64
	perF   []float64
	np, ng []float64 // |P| and |G| per frame
}

// Add scores one frame: pred and truth are mattes (thresholded at 0.5).
func (s *Scorer) Add(pred, truth []float32) {
	p, g := binary(pred), binary(truth)
	s.perJ = append(s.perJ, JaccardIndex(p, g))
	s.perF = append(s.perF, BoundaryF(p, g, s.W, s.H))
	var np, ng int
	for i := range p {
		if p[i] {
			np++
		}
		if g[i] {
			ng++
		}
	}
	s.np = append(s.np, float64(np))
	s.ng = append(s.ng, float64(ng))
}

// Scores returns the sequence's scores. Flicker is the mean over
// consecutive frames of the absolute change of the area error |P|-|G|,
// in percent of the mean |G|: a steady over- or under-estimate scores 0,
// popping does not, and frames where the object is out of view (|G| 0)
// count like any other.
func (s *Scorer) Scores() MatteScores {
	n := len(s.perJ)
	out := MatteScores{PerJ: s.perJ, PerF: s.perF}
	lo, hi := 1, n-1 // DAVIS leaves out the first and the last frame
	if n < 3 {
		lo, hi = 0, n
	}
	for i := lo; i < hi; i++ {
		out.J += s.perJ[i]
		out.F += s.perF[i]
	}
	if hi > lo {
		out.J /= float64(hi - lo)
		out.F /= float64(hi - lo)
	}
	// J decay: first quarter minus last quarter of the evaluated frames.
	if q := (hi - lo) / 4; q > 0 {
		var a, b float64
		for i := 0; i < q; i++ {
			a += s.perJ[lo+i]
			b += s.perJ[hi-q+i]
		}
		out.JDecay = (a - b) / float64(q)
	}
	if hi-lo > 1 {
		mean := 0.0
		for i := lo; i < hi; i++ {
			mean += s.ng[i]
		}
		mean /= float64(hi - lo)
		for i := lo + 1; i < hi; i++ {
			out.Flicker += math.Abs((s.np[i] - s.ng[i]) - (s.np[i-1] - s.ng[i-1]))
		}
		out.Flicker = 100 * out.Flicker / float64(hi-lo-1) / math.Max(mean, 1)
	}
	return out
}
