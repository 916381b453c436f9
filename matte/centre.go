package matte

import (
	"context"
	"math"
	"slices"

	"github.com/vfxrender/vfx/kernels"
)

// The centre prior segments one keyframe at the flow size (about 240
// pixels on the short side, ~100k pixels) on the host: a graph cut over
// the 8-connected pixel grid with contrast-sensitive pairwise terms,
// iterated GrabCut-style with colour histograms, whose unary terms fuse
// an elliptical centre prior, the colour models and a motion cue (how far
// each pixel's flow departs from the camera's global affine motion).

// CentreOptions tune the centre-prior segmentation.
type CentreOptions struct {
	// Iterations are the GrabCut rounds (colour models re-learnt from the
	// previous cut).
	Iterations int
	// Gap is the frame distance of the motion cue: flow from the
	// keyframe to the frames Gap before and after it. 0 picks
	// max(1, frames/16).
	Gap int
	// Smooth is the weight (log-odds units) of a cut between two equal
	// neighbours; it falls with their colour difference.
	Smooth float64
	// Prior, Colour and Motion weigh the unary log-odds terms.
	Prior, Colour, Motion float64
}

// DefaultCentreOptions are the tuned defaults.
func DefaultCentreOptions() CentreOptions {
	return CentreOptions{Iterations: 5, Smooth: 3, Prior: 1, Colour: 1, Motion: 2}
}

// centrePrior is the soft ellipse over the middle of a w x h frame, 0.5
// at its rim.
func centrePrior(w, h int) []float32 {
	pv := make([]float32, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			dx := (float64(x) + 0.5 - 0.5*float64(w)) / (0.2 * float64(w))
			dy := (float64(y) + 0.5 - 0.55*float64(h)) / (0.38 * float64(h))
			r := math.Sqrt(dx*dx + dy*dy)
			pv[y*w+x] = float32(1 / (1 + math.Exp(6*(r-1))))
		}
	}
	return pv
}

// boxMean is the mean of src over (2r+1)^2 windows clamped to the image.
func boxMean(src []float64, w, h, r int) []float64 {
	// integral image
	ii := make([]float64, (w+1)*(h+1))
	for y := 0; y < h; y++ {
		s := 0.0
		for x := 0; x < w; x++ {
			s += src[y*w+x]
			ii[(y+1)*(w+1)+x+1] = ii[y*(w+1)+x+1] + s
		}
	}
	out := make([]float64, w*h)
	for y := 0; y < h; y++ {
		y0, y1 := max(0, y-r), min(h, y+r+1)
		for x := 0; x < w; x++ {
			x0, x1 := max(0, x-r), min(w, x+r+1)
			s := ii[y1*(w+1)+x1] - ii[y0*(w+1)+x1] - ii[y1*(w+1)+x0] + ii[y0*(w+1)+x0]
			out[y*w+x] = s / float64((y1-y0)*(x1-x0))
		}
	}
	return out
}

// texture returns the smaller eigenvalue of the 7x7 structure tensor of
// lum per pixel: where it is small, flow is not trustworthy.
func texture(lum []float32, w, h int) []float64 {
	n := w * h
	xx, xy, yy := make([]float64, n), make([]float64, n), make([]float64, n)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			gx := 0.5 * float64(lum[y*w+min(w-1, x+1)]-lum[y*w+max(0, x-1)])
			gy := 0.5 * float64(lum[min(h-1, y+1)*w+x]-lum[max(0, y-1)*w+x])
			p := y*w + x
			xx[p], xy[p], yy[p] = gx*gx, gx*gy, gy*gy
		}
	}
	xx, xy, yy = boxMean(xx, w, h, 3), boxMean(xy, w, h, 3), boxMean(yy, w, h, 3)
	out := make([]float64, n)
	for p := range out {
		tr, d := xx[p]+yy[p], xx[p]-yy[p]
		out[p] = 0.5 * (tr - math.Sqrt(d*d+4*xy[p]*xy[p]))
	}
	return out
}

// weightedMedian of v under weights wt (> 0 somewhere).
func weightedMedian(v, wt []float64) float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case v[a] < v[b]:
			return -1
		case v[a] > v[b]:
			return 1
		}
		return 0
	})
	tot := 0.0
	for _, wv := range wt {
		tot += wv
	}
	acc := 0.0
	for _, i := range idx {
		acc += wt[i]
		if acc >= tot/2 {
			return v[i]
		}
	}
	return 0
}

// globalMotion fits u(x, y) = a0 + a1 x + a2 y (and likewise v) to a flow
// field (planar u then v) by iteratively reweighted least squares with
// Cauchy weights, starting from the weighted median translation; wt
// weighs each pixel's reliability. It returns the residual magnitude per
// pixel.
func globalMotion(flow []float32, wt []float64, w, h int) ([]float64, [2][3]float64) {
	n := w * h
	u, v := make([]float64, n), make([]float64, n)
	for p := 0; p < n; p++ {
		u[p], v[p] = float64(flow[p]), float64(flow[n+p])
	}
	var au, av [3]float64
	au[0], av[0] = weightedMedian(u, wt), weightedMedian(v, wt)
	res := make([]float64, n)
	resid := func() {
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				p := y*w + x
				fx, fy := float64(x)/float64(w), float64(y)/float64(h)
				du := u[p] - (au[0] + au[1]*fx + au[2]*fy)
				dv := v[p] - (av[0] + av[1]*fx + av[2]*fy)
				res[p] = math.Hypot(du, dv)
			}
		}
	}
	resid()
	rw := make([]float64, n)
	for it := 0; it < 6; it++ {
		c := max(0.25, 1.5*weightedMedian(res, wt))
		var m [3][3]float64
		var bu, bv [3]float64
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				p := y*w + x
				q := res[p] / c
				rw[p] = wt[p] / (1 + q*q)
				f := [3]float64{1, float64(x) / float64(w), float64(y) / float64(h)}
				for i := 0; i < 3; i++ {
					for j := 0; j < 3; j++ {
						m[i][j] += rw[p] * f[i] * f[j]
					}
					bu[i] += rw[p] * f[i] * u[p]
					bv[i] += rw[p] * f[i] * v[p]
				}
			}
		}
		su, okU := solve3(m, bu)
		sv, okV := solve3(m, bv)
		if !okU || !okV {
			break
		}
		au, av = su, sv
		resid()
	}
	return res, [2][3]float64{au, av}
}

// compensatedError is, per pixel, the colour difference (sum over the
// channels) between the keyframe and the other frame sampled where the
// global motion A says the pixel went: small where the pixel moved with
// the camera, large where it moved otherwise (or was occluded).
func compensatedError(key, other []float32, A [2][3]float64, w, h int) []float64 {
	n := w * h
	out := make([]float64, n)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			sx := float64(x) + A[0][0] + A[0][1]*fx + A[0][2]*fy
			sy := float64(y) + A[1][0] + A[1][1]*fx + A[1][2]*fy
			sx = max(0, min(float64(w-1), sx))
			sy = max(0, min(float64(h-1), sy))
			x0, y0 := int(sx), int(sy)
			x1, y1 := min(w-1, x0+1), min(h-1, y0+1)
			ax, ay := sx-float64(x0), sy-float64(y0)
			e := 0.0
			for c := 0; c < 3; c++ {
				o := other[c*n:]
				v := (1-ay)*((1-ax)*float64(o[y0*w+x0])+ax*float64(o[y0*w+x1])) + ay*((1-ax)*float64(o[y1*w+x0])+ax*float64(o[y1*w+x1]))
				e += math.Abs(v - float64(key[c*n+y*w+x]))
			}
			out[y*w+x] = e
		}
	}
	return out
}

// solve3 solves m x = b by Cramer's rule.
func solve3(m [3][3]float64, b [3]float64) ([3]float64, bool) {
	det := func(a [3][3]float64) float64 {
		return a[0][0]*(a[1][1]*a[2][2]-a[1][2]*a[2][1]) - a[0][1]*(a[1][0]*a[2][2]-a[1][2]*a[2][0]) + a[0][2]*(a[1][0]*a[2][1]-a[1][1]*a[2][0])
	}
	d := det(m)
	if math.Abs(d) < 1e-12 {
		return [3]float64{}, false
	}
	var x [3]float64
	for k := 0; k < 3; k++ {
		mk := m
		for i := 0; i < 3; i++ {
			mk[i][k] = b[i]
		}
		x[k] = det(mk) / d
	}
	return x, true
}

// colourLLR learns 16^3-bin colour histograms of the pixels labelled
// foreground and background (smoothed over neighbouring bins) and
// returns log(P(colour | fg) / P(colour | bg)) per pixel, clamped.
func colourLLR(pix []float32, lab []bool, n int) []float64 {
	const bins = 16
	cell := make([]int, n)
	hf, hb := make([]float64, bins*bins*bins), make([]float64, bins*bins*bins)
	for p := 0; p < n; p++ {
		var k int
		for c := 0; c < 3; c++ {
			b := int(pix[c*n+p] * bins)
			k = k*bins + min(bins-1, max(0, b))
		}
		cell[p] = k
		if lab[p] {
			hf[k]++
		} else {
			hb[k]++
		}
	}
	hf, hb = blurHist(hf, bins), blurHist(hb, bins)
	var nf, nb float64
	for k := range hf {
		nf += hf[k]
		nb += hb[k]
	}
	eps := 1e-6
	out := make([]float64, n)
	for p := range out {
		k := cell[p]
		pf := (hf[k] + 0.1) / (nf + 0.1*float64(len(hf)) + eps)
		pb := (hb[k] + 0.1) / (nb + 0.1*float64(len(hb)) + eps)
		out[p] = max(-5, min(5, math.Log(pf/pb)))
	}
	return out
}

// blurHist applies a [1 2 1]/4 filter along each axis of a bins^3 cube.
func blurHist(h []float64, bins int) []float64 {
	strides := []int{bins * bins, bins, 1}
	for _, s := range strides {
		o := make([]float64, len(h))
		for k := range h {
			i := (k / s) % bins
			v := 2 * h[k]
			if i > 0 {
				v += h[k-s]
			} else {
				v += h[k]
			}
			if i < bins-1 {
				v += h[k+s]
			} else {
				v += h[k]
			}
			o[k] = v / 4
		}
		h = o
	}
	return h
}

// graphCut labels each pixel foreground (true) or background by the
// minimum of sum unary + sum pairwise, where unary is the log-odds of
// foreground per pixel and pair holds the 4 forward neighbour weights
// (right, down, down-right, down-left) per pixel.
func graphCut(unary []float64, pair [][4]float64, w, h int) []bool {
	const scale = 1000
	n := w * h
	g := newGraph(n, 4*n)
	for p := 0; p < n; p++ {
		l := math.Round(unary[p] * scale)
		if l > 0 {
			g.addTerminal(p, int64(l), 0) // labelling p background costs l
		} else {
			g.addTerminal(p, 0, int64(-l))
		}
	}
	off := [4][2]int{{1, 0}, {0, 1}, {1, 1}, {-1, 1}}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			p := y*w + x
			for k, o := range off {
				xx, yy := x+o[0], y+o[1]
				if xx < 0 || xx >= w || yy >= h {
					continue
				}
				c := int32(math.Round(pair[p][k] * scale))
				if c > 0 {
					g.addEdge(p, yy*w+xx, c, c)
				}
			}
		}
	}
	g.maxflow()
	lab := make([]bool, n)
	for p := range lab {
		lab[p] = g.inSource(p)
	}
	return lab
}

// pairWeights are the contrast-sensitive Potts weights of the 8-connected
// grid (GrabCut's gamma exp(-beta |dI|^2) / distance).
func pairWeights(pix []float32, w, h int, gamma float64) [][4]float64 {
	n := w * h
	d2 := func(p, q int) float64 {
		s := 0.0
		for c := 0; c < 3; c++ {
			d := float64(pix[c*n+p] - pix[c*n+q])
			s += d * d
		}
		return s
	}
	off := [4][2]int{{1, 0}, {0, 1}, {1, 1}, {-1, 1}}
	sum, cnt := 0.0, 0
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for _, o := range off {
				xx, yy := x+o[0], y+o[1]
				if xx < 0 || xx >= w || yy >= h {
					continue
				}
				sum += d2(y*w+x, yy*w+xx)
				cnt++
			}
		}
	}
	beta := 0.0
	if sum > 0 {
		beta = float64(cnt) / (2 * sum)
	}
	out := make([][4]float64, n)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for k, o := range off {
				xx, yy := x+o[0], y+o[1]
				if xx < 0 || xx >= w || yy >= h {
					continue
				}
				dist := 1.0
				if k >= 2 {
					dist = math.Sqrt2
				}
				out[y*w+x][k] = gamma * math.Exp(-beta*d2(y*w+x, yy*w+xx)) / dist
			}
		}
	}
	return out
}

// motionCue returns the foreground log-odds of the motion cue per pixel
// (nil when the clip's motion says nothing: no frame pair, or no part of
// the frame moving unlike the camera): the residual of each pixel's flow
// to the global affine motion, the smaller of the flows to the frame Gap
// before and the frame Gap after (a background pixel occluded in one of
// them is visible in the other), gated by texture.
func motionCue(key []float32, others, flows [][]float32, lum []float32, w, h int) []float64 {
	if len(flows) == 0 {
		return nil
	}
	n := w * h
	tex := texture(lum, w, h)
	medTex := weightedMedian(tex, ones(n))
	if medTex <= 0 {
		return nil
	}
	wt := make([]float64, n)
	for p := range wt {
		wt[p] = tex[p] / (tex[p] + 0.25*medTex)
	}
	var res, pe []float64
	for k, f := range flows {
		r, A := globalMotion(f, wt, w, h)
		e := boxMean(compensatedError(key, others[k], A, w, h), w, h, 1)
		if res == nil {
			res, pe = r, e
			continue
		}
		for p := range res {
			res[p] = min(res[p], r[p])
			pe[p] = min(pe[p], e[p])
		}
	}
	// The noise level of the background's residual sets the thresholds.
	tau := max(0.75, 4*weightedMedian(res, wt))
	tauE := max(0.02, 3*weightedMedian(pe, wt))
	moving, tot := 0.0, 0.0
	out := make([]float64, n)
	for p := range out {
		tot += wt[p]
		if res[p] > 2*tau {
			moving += wt[p]
		}
		// The flow residual is smooth (flow windows blur it beyond the
		// subject): weak evidence. The compensated error is sharp but
		// says nothing where there is no texture.
		lf := max(-1, min(1, (res[p]-tau)/tau))
		le := max(-2, min(3, 2*(pe[p]-tauE)/tauE))
		out[p] = 0.5*lf + wt[p]*le
	}
	if share := moving / tot; share < 0.005 || share > 0.6 {
		return nil
	}
	return out
}

func ones(n int) []float64 {
	o := make([]float64, n)
	for i := range o {
		o[i] = 1
	}
	return o
}

// segmentCentre is the host-side segmentation of one keyframe: pix its
// sRGB pixels (planar), prior the centre ellipse, motion the motion cue's
// log-odds (nil: none). It returns the foreground labels.
func segmentCentre(pix []float32, prior []float32, motion []float64, w, h int, o CentreOptions) []bool {
	n := w * h
	base := make([]float64, n)
	for p := range base {
		pv := min(max(float64(prior[p]), 1e-6), 1-1e-6)
		base[p] = o.Prior * max(-2, min(2, math.Log(pv/(1-pv))))
		if motion != nil {
			base[p] += o.Motion * motion[p]
		}
	}
	pair := pairWeights(pix, w, h, o.Smooth)
	var lab []bool
	if motion != nil {
		lab = graphCut(base, pair, w, h)
	} else {
		lab = make([]bool, n)
		for p := range lab {
			lab[p] = prior[p] > 0.5
		}
	}
	un := make([]float64, n)
	for it := 0; it < max(1, o.Iterations); it++ {
		fg := 0
		for _, l := range lab {
			if l {
				fg++
			}
		}
		if fg == 0 || fg == n {
			break
		}
		llr := colourLLR(pix, lab, n)
		for p := range un {
			un[p] = base[p] + o.Colour*llr[p]
		}
		lab = graphCut(un, pair, w, h)
	}
	if !slices.Contains(lab, true) {
		// Nothing stood out: the centre ellipse, as GrabCut's box.
		for p := range lab {
			lab[p] = prior[p] > 0.5
		}
	}
	return lab
}

// centreKey segments frame index of src into key (1 channel, flow size).
func (a *AutoPlan) centreKey(ctx context.Context, src Frames, index int, key kernels.Image) error {
	p, err := newPropagator(a.dev, a.w, a.h, a.o.Select)
	if err != nil {
		return err
	}
	defer p.close()
	var imgs [2]kernels.Image
	for k := range imgs {
		if imgs[k], err = a.dev.NewImage(a.w, a.h, 3); err != nil {
			return err
		}
		defer a.dev.Free(imgs[k])
	}
	frame, other := imgs[0], imgs[1]
	keyP, err := p.lumaPyramid(ctx, src, index, frame)
	if err != nil {
		return err
	}
	defer keyP.free(a.dev)
	pix, err := a.dev.ReadPixels(frame)
	if err != nil {
		return err
	}
	lum, err := a.dev.ReadPixels(keyP.lum[0])
	if err != nil {
		return err
	}
	o := a.o.Centre
	n := src.Len()
	gap := o.Gap
	if gap <= 0 {
		gap = max(1, n/16)
	}
	var flows, others [][]float32
	for _, d := range []int{gap, -gap} {
		j := index + d
		if j < 0 || j >= n {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		op, err := p.lumaPyramid(ctx, src, j, other)
		if err != nil {
			return err
		}
		err = p.fe.flow(p.fwd, keyP, op)
		op.free(a.dev)
		if err != nil {
			return err
		}
		f, err := a.dev.ReadPixels(p.fwd)
		if err != nil {
			return err
		}
		op2, err := a.dev.ReadPixels(other)
		if err != nil {
			return err
		}
		flows, others = append(flows, f), append(others, op2)
	}
	motion := motionCue(pix, others, flows, lum, a.w, a.h)
	lab := segmentCentre(pix, centrePrior(a.w, a.h), motion, a.w, a.h, o)
	kv := make([]float32, a.w*a.h)
	for i, l := range lab {
		if l {
			kv[i] = 1
		}
	}
	return a.dev.WritePixels(key, kv)
}
