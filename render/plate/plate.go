// Package plate measures a picture's grain, sharpness (edge width) and
// black level, over the whole picture or a matte's interior: render's
// plate matching (render/plate.go) and vfx bench look read them.
//
// Measures (Measure), on v = sqrt(linear luminance) (close to code
// values, where a camera's grain is about constant), over the plate or
// over the subject's interior:
//   - grain: Donoho's robust noise estimate, sigma = median(|HH|)/0.6745
//     of the finest diagonal subband HH of the orthonormal Haar
//     transform (D. L. Donoho and I. M. Johnstone, "Ideal spatial
//     adaptation by wavelet shrinkage", Biometrika 81(3), 1994, p. 446),
//     pooled over the half of the 16x16-pixel blocks with the least
//     gradient (mean |LH|+|HL|): texture and edges barely reach the
//     median of the diagonal detail of flat blocks, noise does;
//   - edge width: the blur (Gaussian sigma, pixels) of the strongest
//     edges: at the 5% of pixels with the largest gradient after a blur of
//     sigma 2 (above a floor well over the grain's), the ratio R of the
//     unblurred central-difference gradient to the blurred one gives
//     sigma = 2/sqrt(R^2-1) for a blurred step (median over those pixels);
//     a sharp edge reads about 0.9 px; 0 when there are too few edges;
//   - black level: the 2nd percentile of linear luminance.
package plate

import (
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/vfxrender/vfx/internal/hugepage"
	"github.com/vfxrender/vfx/kernels/rows"
)

const (
	// plateBlurSigma is the blur of the edge-width measure.
	plateBlurSigma = 2.0
	// plateEdgeFloor is the smallest blurred gradient (square-root
	// luminance per pixel) that counts as an edge.
	plateEdgeFloor = 0.004
	// sharpEdge is the edge width of an unblurred step (the sampling's
	// own width): a step blurred by sigma reads about hypot(sigma,
	// sharpEdge) (TestEdgeWidth).
	sharpEdge = 0.85
	// madScale is the median of |N(0,1)|.
	madScale = 0.6745
)

// Stats are the measures of Measure.
type Stats struct {
	// Grain is the grain's standard deviation in square-root luminance.
	Grain float64
	// Edge is the edge width (Gaussian sigma, pixels); 0 = unknown.
	Edge float64
	// Black is the 2nd percentile of linear luminance.
	Black float64
	// Pixels is the number of pixels measured.
	Pixels int
}

// Measure measures lum (w x h linear luminance) over the pixels whose
// weight is at least 0.98 and whose neighbours 3 pixels away are too (all
// pixels when wt is nil): the subject's interior, not its silhouette.
func Measure(lum []float32, w, h int, wt []float32) Stats {
	st, in, v := MeasureBase(lum, w, h, wt, true, true)
	if in == nil {
		return st
	}
	st.Edge = EdgeWidth(v, w, h, in, st.Grain)
	return st
}

// MeasureBase is Measure without the edge width, and without the
// black level unless black is set (a sort of the measured pixels); it
// also returns the interior and v, the square-root luminance (nil when
// too little is measured), which is 0 outside the interior unless edges
// is set (the edge width reads it everywhere).
func MeasureBase(lum []float32, w, h int, wt []float32, black, edges bool) (Stats, []bool, []float32) {
	n := w * h
	if len(lum) < n || w < 16 || h < 16 || (wt != nil && len(wt) < n) {
		return Stats{}, nil, nil
	}
	in := make([]bool, n)
	var blacks []float32
	count := 0
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := y*w + x
			ok := true
			if wt != nil {
				const d = 3
				ok = wt[i] >= 0.98 && x >= d && y >= d && x < w-d && y < h-d &&
					wt[i-d] >= 0.98 && wt[i+d] >= 0.98 && wt[i-d*w] >= 0.98 && wt[i+d*w] >= 0.98
			}
			in[i] = ok
			if ok {
				count++
				if black {
					blacks = append(blacks, lum[i])
				}
			}
		}
	}
	if count < 64 {
		return Stats{}, nil, nil
	}
	st := Stats{Pixels: count}
	if black {
		st.Black = float64(Percentile32(blacks, 0.02))
	}
	// Square-root luminance: everywhere for the edge width (its blur
	// reads outside), else only inside, where grainMAD reads it.
	v := make([]float32, n)
	hugepage.Advise(v)
	for i := range v {
		if edges || in[i] {
			v[i] = float32(math.Sqrt(math.Max(float64(lum[i]), 0)))
		}
	}
	st.Grain = grainMAD(v, w, h, in)
	return st, in, v
}

// Percentile32 returns the q-quantile of s (s is reordered).
func Percentile32(s []float32, q float64) float32 {
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// grainMAD is Donoho's median absolute deviation estimate of the noise
// on the Haar diagonal subband of v, over the flatter half of the
// 16x16-pixel blocks inside in (see the package comment above).
func grainMAD(v []float32, w, h int, in []bool) float64 {
	const b = 8 // Haar coefficients per block side (16 pixels)
	type block struct {
		grad   float64
		lo, hi int // the block's |HH| in hh[lo:hi]
	}
	var blocks []block
	hh := make([]float32, 0, (w/2)*(h/2))
	for by := 0; by+2*b <= h; by += 2 * b {
		for bx := 0; bx+2*b <= w; bx += 2 * b {
			lo := len(hh)
			var grad, mean float64
			for y := by; y < by+2*b; y += 2 {
				for x := bx; x < bx+2*b; x += 2 {
					i := y*w + x
					if !in[i] || !in[i+1] || !in[i+w] || !in[i+w+1] {
						continue
					}
					a, c, d, e := float64(v[i]), float64(v[i+1]), float64(v[i+w]), float64(v[i+w+1])
					hh = append(hh, float32(math.Abs(a-c-d+e)/2))
					grad += math.Abs(a+c-d-e)/2 + math.Abs(a-c+d-e)/2
					mean += a + c + d + e
				}
			}
			k := len(hh) - lo
			// Mostly inside, and not dark (8-bit quantisation dominates
			// there).
			if k < b*b*3/4 || mean/float64(4*k) < 0.1 {
				hh = hh[:lo]
				continue
			}
			blocks = append(blocks, block{grad: grad / float64(k), lo: lo, hi: len(hh)})
		}
	}
	if len(blocks) < 4 {
		return 0
	}
	slices.SortStableFunc(blocks, func(p, q block) int {
		switch {
		case p.grad < q.grad:
			return -1
		case p.grad > q.grad:
			return 1
		}
		return 0
	})
	var all []float32
	var sum float64
	for _, bl := range blocks[:max(4, len(blocks)/2)] {
		all = append(all, hh[bl.lo:bl.hi]...)
		for _, x := range hh[bl.lo:bl.hi] {
			sum += float64(x)
		}
	}
	if m := float64(Percentile32(all, 0.5)); m > 0 {
		return m / madScale
	}
	// Half or more of the coefficients are exactly 0: an 8-bit plate
	// whose grain is below a code value, flat in most of its flat
	// areas. The mean absolute value (sqrt(2/pi) sigma for Gaussian
	// noise) still reads the rest.
	return sum / float64(len(all)) * math.Sqrt(math.Pi/2)
}

// EdgeWidth is the edge width (Gaussian sigma, pixels) of v, square-root
// luminance, over in (see the package comment); grain is v's grain.
func EdgeWidth(v []float32, w, h int, in []bool, grain float64) float64 {
	vb := gaussBlur(v, w, h, plateBlurSigma)
	floor := math.Max(plateEdgeFloor, 2*grain/plateBlurSigma)
	type edge struct{ g2, r float64 }
	var es []edge
	for y := 1; y < h-1; y++ {
		for x := 1; x < w-1; x++ {
			i := y*w + x
			if !in[i] {
				continue
			}
			bx, by := float64(vb[i+1]-vb[i-1])/2, float64(vb[i+w]-vb[i-w])/2
			g2 := math.Hypot(bx, by)
			if g2 < floor {
				continue
			}
			fx, fy := float64(v[i+1]-v[i-1])/2, float64(v[i+w]-v[i-w])/2
			es = append(es, edge{g2, math.Hypot(fx, fy) / g2})
		}
	}
	if len(es) < 50 {
		return 0
	}
	// The k strongest edges, ties in raster order (as a stable sort by
	// descending g2 would take them), without sorting them all.
	k := max(50, len(es)/20)
	g := make([]float64, len(es))
	for i, e := range es {
		g[i] = e.g2
	}
	t := kthLargest(g, k)
	rs := make([]float32, 0, k)
	for _, e := range es {
		if e.g2 > t {
			rs = append(rs, float32(e.r))
		}
	}
	for _, e := range es {
		if len(rs) == k {
			break
		}
		if e.g2 == t {
			rs = append(rs, float32(e.r))
		}
	}
	r := float64(Percentile32(rs, 0.5))
	if r <= 1.01 {
		return 8
	}
	return math.Min(8, plateBlurSigma/math.Sqrt(r*r-1))
}

// kthLargest returns the k-th largest of g (1 <= k <= len(g); g is
// reordered): Hoare's selection with a median-of-three pivot.
func kthLargest(g []float64, k int) float64 {
	lo, hi, want := 0, len(g)-1, k-1 // want: the index in descending order
	for lo < hi {
		mid := lo + (hi-lo)/2
		a, b, c := g[lo], g[mid], g[hi]
		p := max(min(a, b), min(max(a, b), c))
		i, j := lo, hi
		for i <= j {
			for g[i] > p {
				i++
			}
			for g[j] < p {
				j--
			}
			if i <= j {
				g[i], g[j] = g[j], g[i]
				i++
				j--
			}
		}
		switch {
		case want <= j:
			hi = j
		case want >= i:
			lo = i
		default:
			return g[want]
		}
	}
	return g[want]
}

// gaussBlur is a separable Gaussian blur (edges clamped): each output the
// sum, tap by tap from the first, of the kernel times the clamped
// neighbours, horizontally then vertically (bit for bit the plain loops,
// gaussBlurRef in the tests). The columns whose taps stay inside the row skip the
// clamp, the vertical pass adds whole rows tap by tap (each output still
// takes its taps in order), and each pass splits its rows over the
// processors: the plate's and the subject's measures run once per job
// before the first frame, on one goroutine.
func gaussBlur(src []float32, w, h int, sigma float64) []float32 {
	k := gaussKernel(sigma)
	r := len(k) / 2
	tmp := make([]float32, w*h)
	out := make([]float32, w*h)
	hugepage.Advise(tmp)
	hugepage.Advise(out)
	rowsPar(h, func(y0, y1 int) {
		taps := make([][]float32, len(k))
		for y := y0; y < y1; y++ {
			row, o := src[y*w:][:w], tmp[y*w:][:w]
			// Columns [r, w-r) read row[x-r : x+r+1] without a clamp.
			lo, hi := min(r, w), max(w-r, min(r, w))
			for x := range lo {
				o[x] = clampTaps(row, k, x, r)
			}
			if hi > lo {
				for j := range k {
					taps[j] = row[lo-r+j:]
				}
				rows.SumTaps(o[lo:hi], taps, k)
			}
			for x := hi; x < w; x++ {
				o[x] = clampTaps(row, k, x, r)
			}
		}
	})
	rowsPar(h, func(y0, y1 int) {
		taps := make([][]float32, len(k))
		for y := y0; y < y1; y++ {
			for j := range k {
				taps[j] = tmp[min(max(y+j-r, 0), h-1)*w:][:w]
			}
			rows.SumTaps(out[y*w:][:w], taps, k)
		}
	})
	return out
}

// gaussKernel is gaussBlur's normalised kernel of radius ceil(3 sigma).
func gaussKernel(sigma float64) []float32 {
	r := int(math.Ceil(3 * sigma))
	k := make([]float32, 2*r+1)
	var sum float32
	for i := range k {
		d := float64(i - r)
		k[i] = float32(math.Exp(-d * d / (2 * sigma * sigma)))
		sum += k[i]
	}
	for i := range k {
		k[i] /= sum
	}
	return k
}

// clampTaps is one output of gaussBlur's horizontal pass at column x,
// its taps clamped to the row.
func clampTaps(row, k []float32, x, r int) float32 {
	w := len(row)
	var s float32
	for j, kv := range k {
		s += kv * row[min(max(x+j-r, 0), w-1)]
	}
	return s
}

// rowsPar calls fn on consecutive bands [y0, y1) of h rows, one band per
// processor (GOMAXPROCS), and waits for them.
func rowsPar(h int, fn func(y0, y1 int)) {
	n := min(runtime.GOMAXPROCS(0), max(h/32, 1))
	if n <= 1 {
		fn(0, h)
		return
	}
	var wg sync.WaitGroup
	for i := range n {
		y0, y1 := h*i/n, h*(i+1)/n
		wg.Go(func() { fn(y0, y1) })
	}
	wg.Wait()
}
