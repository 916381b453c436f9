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
	// Interior is the share (percent) of the interior pixels (more than
	// InteriorDepth px inside the true mask) whose alpha is below 0.9:
	// what a compositor sees as background showing through the subject,
	// misses included. Half is the share of those with 0.1 < alpha < 0.9
	// only: half-transparent, not missed. Both over the protocol's frames.
	Interior, Half float64
}

// InteriorDepth is how far inside the true mask (pixels, a square
// erosion) a pixel must be to count as interior for MatteScores.Interior.
const InteriorDepth = 5

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
	// interior pixels per frame, those below 0.9 and those in (0.1, 0.9)
	nin, nlow, nhalf []float64
	ero, tmp         []bool
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
	s.ero = erode(s.ero, &s.tmp, g, s.W, s.H, InteriorDepth)
	var nin, nlow, nhalf int
	for i, in := range s.ero {
		if !in {
			continue
		}
		nin++
		if v := pred[i]; v < 0.9 {
			nlow++
			if v > 0.1 {
				nhalf++
			}
		}
	}
	s.nin = append(s.nin, float64(nin))
	s.nlow = append(s.nlow, float64(nlow))
	s.nhalf = append(s.nhalf, float64(nhalf))
}

// erode writes into dst (reused when large enough) the pixels of m whose
// (2r+1)-square neighbourhood lies wholly in m; pixels near the image
// border count their outside as inside (a subject cut by the frame edge
// still has an interior there).
func erode(dst []bool, tmp *[]bool, m []bool, w, h, r int) []bool {
	if cap(dst) < len(m) {
		dst = make([]bool, len(m))
	}
	dst = dst[:len(m)]
	if cap(*tmp) < len(m) {
		*tmp = make([]bool, len(m))
	}
	t := (*tmp)[:len(m)]
	// Rows: t[i] is true when no pixel of the row within r is outside m.
	for y := 0; y < h; y++ {
		row := m[y*w : (y+1)*w]
		lastOut := -1 << 30 // the last x seen outside m
		for x := 0; x < w+r; x++ {
			if x < w && !row[x] {
				lastOut = x
			}
			if c := x - r; c >= 0 && c < w {
				t[y*w+c] = lastOut < c-r
			}
		}
		// Every x up to c+r has been seen: an outside pixel in [c-r, c+r]
		// leaves lastOut >= c-r.
	}
	for x := 0; x < w; x++ {
		lastOut := -1 << 30
		for y := 0; y < h+r; y++ {
			if y < h && !t[y*w+x] {
				lastOut = y
			}
			if c := y - r; c >= 0 && c < h {
				dst[c*w+x] = lastOut < c-r
			}
		}
	}
	return dst
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
	var nin, nlow, nhalf float64
	for i := lo; i < hi && i < len(s.nin); i++ {
		nin, nlow, nhalf = nin+s.nin[i], nlow+s.nlow[i], nhalf+s.nhalf[i]
	}
	if nin > 0 {
		out.Interior, out.Half = 100*nlow/nin, 100*nhalf/nin
	}
	return out
}
