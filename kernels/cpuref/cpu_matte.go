package cpuref

import (
	"fmt"
	"math"

	"github.com/vfxrender/vfx/kernels/rows"
)

// Gradient writes central differences (see MatteOps.Gradient).
func (d *CPU) Gradient(dst, src Image) error {
	const op = "Gradient"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	if err := wantChannels(op, "dst", o, 2); err != nil {
		return err
	}
	if err := wantChannels(op, "src", s, 1); err != nil {
		return err
	}
	w, h := o.w, o.h
	p := s.plane(0)
	gx, gy := o.plane(0), o.plane(1)
	d.parallel(h, BandRows(w), func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			up, dn := max(y-1, 0)*w, min(y+1, h-1)*w
			row := p[y*w : y*w+w]
			for x := 0; x < w; x++ {
				l, r := row[max(x-1, 0)], row[min(x+1, w-1)]
				gx[y*w+x] = (r - l) * 0.5
				gy[y*w+x] = (p[dn+x] - p[up+x]) * 0.5
			}
		}
	})
	return nil
}

// Warp samples src along a flow field (see MatteOps.Warp).
func (d *CPU) Warp(dst, src, flow Image, scale float32) error {
	const op = "Warp"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	f, err := cpuImg(op, "flow", flow)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return shapeErr(op, "src %s, dst %s", dims(s), dims(o))
	}
	if err := wantChannels(op, "flow", f, 2); err != nil {
		return err
	}
	if err := sameSize(op, o, []string{"flow"}, f); err != nil {
		return err
	}
	if o == s {
		return shapeErr(op, "dst aliases src")
	}
	w, h := o.w, o.h
	fu, fv := f.plane(0), f.plane(1)
	d.parallel(h, BandRows(w), func(_, y0, y1 int) {
		for c := 0; c < o.c; c++ {
			sp, op := s.plane(c), o.plane(c)
			for y := y0; y < y1; y++ {
				for x := 0; x < w; x++ {
					i := y*w + x
					op[i] = rows.Bilinear(sp, w, h, float32(x)+scale*fu[i], float32(y)+scale*fv[i])
				}
			}
		}
	})
	return nil
}

// Shift samples src at a constant offset (see MatteOps.Shift): the
// positions' columns and rows are clamped once, then each pixel is
// Warp's bilinear formula.
func (d *CPU) Shift(dst, src Image, dx, dy float32) error {
	const op = "Shift"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return shapeErr(op, "src %s, dst %s", dims(s), dims(o))
	}
	if o == s {
		return shapeErr(op, "dst aliases src")
	}
	w, h := o.w, o.h
	sh := rows.NewShift(w, h, dx, dy)
	d.parallel(h, BandRows(w), func(_, ya, yb int) {
		for c := 0; c < o.c; c++ {
			sp, op := s.plane(c), o.plane(c)
			for y := ya; y < yb; y++ {
				sh.Row(op[y*w:][:w], sp, y, 0, w)
			}
		}
	})
	return nil
}

// FlowTensor writes the structure products (see MatteOps.FlowTensor).
func (d *CPU) FlowTensor(dst, grad Image) error {
	const op = "FlowTensor"
	o, g, err := pair(op, dst, grad)
	if err != nil {
		return err
	}
	if err := wantChannels(op, "dst", o, 3); err != nil {
		return err
	}
	if err := wantChannels(op, "grad", g, 2); err != nil {
		return err
	}
	w := o.w
	gx, gy := g.plane(0), g.plane(1)
	a, b, c := o.plane(0), o.plane(1), o.plane(2)
	d.parallel(o.h, BandRows(w), func(_, y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			a[i] = gx[i] * gx[i]
			b[i] = gx[i] * gy[i]
			c[i] = gy[i] * gy[i]
		}
	})
	return nil
}

// FlowMismatch writes the mismatch products (see MatteOps.FlowMismatch).
func (d *CPU) FlowMismatch(dst, grad, ref, warped Image) error {
	const op = "FlowMismatch"
	o, g, err := pair(op, dst, grad)
	if err != nil {
		return err
	}
	r, err := cpuImg(op, "ref", ref)
	if err != nil {
		return err
	}
	wp, err := cpuImg(op, "warped", warped)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		n string
		m *cpuImage
		c int
	}{{"dst", o, 2}, {"grad", g, 2}, {"ref", r, 1}, {"warped", wp, 1}} {
		if err := wantChannels(op, c.n, c.m, c.c); err != nil {
			return err
		}
	}
	if err := sameSize(op, o, []string{"ref", "warped"}, r, wp); err != nil {
		return err
	}
	w := o.w
	gx, gy := g.plane(0), g.plane(1)
	rp, ww := r.plane(0), wp.plane(0)
	p, q := o.plane(0), o.plane(1)
	d.parallel(o.h, BandRows(w), func(_, y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			e := ww[i] - rp[i]
			p[i] = gx[i] * e
			q[i] = gy[i] * e
		}
	})
	return nil
}

// FlowSolve takes one regularised Lucas–Kanade step (see
// MatteOps.FlowSolve).
func (d *CPU) FlowSolve(flow, tensor, mismatch Image, lambda, maxStep, scale float32) error {
	const op = "FlowSolve"
	f, err := cpuImg(op, "flow", flow)
	if err != nil {
		return err
	}
	t, err := cpuImg(op, "tensor", tensor)
	if err != nil {
		return err
	}
	m, err := cpuImg(op, "mismatch", mismatch)
	if err != nil {
		return err
	}
	if err := wantChannels(op, "flow", f, 2); err != nil {
		return err
	}
	if err := wantChannels(op, "tensor", t, 3); err != nil {
		return err
	}
	if err := wantChannels(op, "mismatch", m, 2); err != nil {
		return err
	}
	if err := sameSize(op, f, []string{"tensor", "mismatch"}, t, m); err != nil {
		return err
	}
	if !(scale > 0) {
		return fmt.Errorf("kernels: cpu: %s: scale %g must be > 0", op, scale)
	}
	w := f.w
	fu, fv := f.plane(0), f.plane(1)
	ta, tb, tc := t.plane(0), t.plane(1), t.plane(2)
	mp, mq := m.plane(0), m.plane(1)
	lam, ms, sc := float64(lambda), float64(maxStep), float64(scale)
	d.parallel(f.h, BandRows(w), func(_, y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			a, b, c := float64(ta[i])+lam, float64(tb[i]), float64(tc[i])+lam
			det := a*c - b*b
			if det <= 1e-12 {
				continue
			}
			p, q := float64(mp[i]), float64(mq[i])
			inv := 1 / det
			du := -(c*p - b*q) * inv
			dv := -(a*q - b*p) * inv
			if n2 := du*du + dv*dv; n2 > ms*ms {
				n := math.Sqrt(n2)
				du, dv = du*ms/n, dv*ms/n
			}
			fu[i] = float32(float64(fu[i]) + du/sc)
			fv[i] = float32(float64(fv[i]) + dv/sc)
		}
	})
	return nil
}

// FlowConfidence writes forward–backward consistency (see
// MatteOps.FlowConfidence).
func (d *CPU) FlowConfidence(dst, fwd, bwd Image, sigma float32) error {
	const op = "FlowConfidence"
	o, f, err := pair(op, dst, fwd)
	if err != nil {
		return err
	}
	b, err := cpuImg(op, "bwd", bwd)
	if err != nil {
		return err
	}
	if err := wantChannels(op, "dst", o, 1); err != nil {
		return err
	}
	if err := wantChannels(op, "fwd", f, 2); err != nil {
		return err
	}
	if err := wantChannels(op, "bwd", b, 2); err != nil {
		return err
	}
	if err := sameSize(op, o, []string{"bwd"}, b); err != nil {
		return err
	}
	if !(sigma > 0) {
		return fmt.Errorf("kernels: cpu: %s: sigma %g must be > 0", op, sigma)
	}
	w, h := o.w, o.h
	fu, fv, bu, bv := f.plane(0), f.plane(1), b.plane(0), b.plane(1)
	q := o.plane(0)
	s2 := float64(sigma) * float64(sigma)
	d.parallel(h, BandRows(w), func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			for x := 0; x < w; x++ {
				i := y*w + x
				px, py := float32(x)+fu[i], float32(y)+fv[i]
				if !(px >= -0.5 && px <= float32(w)-0.5 && py >= -0.5 && py <= float32(h)-0.5) {
					q[i] = 0
					continue
				}
				eu := float64(fu[i] + rows.Bilinear(bu, w, h, px, py))
				ev := float64(fv[i] + rows.Bilinear(bv, w, h, px, py))
				q[i] = float32(math.Exp(-(eu*eu + ev*ev) / s2))
			}
		}
	})
	return nil
}

// ColourHistogram returns a weighted colour histogram (see
// MatteOps.ColourHistogram).
func (d *CPU) ColourHistogram(src, weight Image, bins int) ([]float64, error) {
	const op = "ColourHistogram"
	s, err := cpuImg(op, "src", src)
	if err != nil {
		return nil, err
	}
	wt, err := optImg(op, "weight", weight)
	if err != nil {
		return nil, err
	}
	if err := wantChannels(op, "src", s, 3); err != nil {
		return nil, err
	}
	if err := wantChannels(op, "weight", wt, 1); err != nil {
		return nil, err
	}
	if err := sameSize(op, s, []string{"weight"}, wt); err != nil {
		return nil, err
	}
	if bins < 2 || bins > 64 {
		return nil, fmt.Errorf("kernels: cpu: %s: bins %d: want 2..64", op, bins)
	}
	w, h := s.w, s.h
	band := BandRows(w)
	nb := (h + band - 1) / band
	cells := bins * bins * bins
	parts := make([][]float64, nb)
	r, g, b := s.plane(0), s.plane(1), s.plane(2)
	var wp []float32
	if wt != nil {
		wp = wt.plane(0)
	}
	d.parallel(h, band, func(_, y0, y1 int) {
		hist := make([]float64, cells)
		for i := y0 * w; i < y1*w; i++ {
			v := 1.0
			if wp != nil {
				v = float64(wp[i])
			}
			hist[rows.ColourCell(r[i], g[i], b[i], bins)] += v
		}
		parts[y0/band] = hist
	})
	out := make([]float64, cells)
	for _, p := range parts {
		for i, v := range p {
			out[i] += v
		}
	}
	return out, nil
}

// MatteFuse combines the evidence into a matte (see MatteOps.MatteFuse).
func (d *CPU) MatteFuse(dst, src, prior, conf, localFg, localBg, localM, plate Image, table []float32, p FuseParams) error {
	const op = "MatteFuse"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	var opt [6]*cpuImage
	names := []string{"prior", "conf", "localFg", "localBg", "localM", "plate"}
	chans := []int{1, 1, 3, 3, 1, 3}
	for k, im := range []Image{prior, conf, localFg, localBg, localM, plate} {
		if opt[k], err = optImg(op, names[k], im); err != nil {
			return err
		}
		if err := wantChannels(op, names[k], opt[k], chans[k]); err != nil {
			return err
		}
	}
	if err := sameSize(op, o, names, opt[:]...); err != nil {
		return err
	}
	if err := wantChannels(op, "dst", o, 1); err != nil {
		return err
	}
	if err := wantChannels(op, "src", s, 3); err != nil {
		return err
	}
	pr, cf, lf, lb, lm, pl := opt[0], opt[1], opt[2], opt[3], opt[4], opt[5]
	if (lf == nil) != (lb == nil) || (lf == nil) != (lm == nil) {
		return shapeErr(op, "localFg, localBg and localM must be all nil or all set")
	}
	useTable := table != nil && p.Global != 0
	if useTable {
		if p.Bins < 2 || p.Bins > 64 || len(table) != p.Bins*p.Bins*p.Bins {
			return shapeErr(op, "table has %d entries for %d bins", len(table), p.Bins)
		}
	}
	useLocal := lf != nil && p.Local != 0
	if useLocal && !(p.LocalSigma > 0) {
		return fmt.Errorf("kernels: cpu: %s: LocalSigma %g must be > 0", op, p.LocalSigma)
	}
	usePlate := pl != nil && p.Plate != 0
	if usePlate && !(p.PlateSoftness > 0) {
		return fmt.Errorf("kernels: cpu: %s: PlateSoftness %g must be > 0", op, p.PlateSoftness)
	}
	usePrior := pr != nil && p.Prior != 0
	w := o.w
	q := o.plane(0)
	sr, sg, sb := s.plane(0), s.plane(1), s.plane(2)
	wPrior, wGlobal, wLocal, wPlate := float64(p.Prior), float64(p.Global), float64(p.Local), float64(p.Plate)
	inv2s2 := 1 / (2 * float64(p.LocalSigma) * float64(p.LocalSigma))
	pt, ps := float64(p.PlateThreshold), float64(p.PlateSoftness)
	d.parallel(o.h, BandRows(w), func(_, y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			L := 0.0
			if usePrior {
				c := 1.0
				if cf != nil {
					c = float64(cf.pix[i])
				}
				L += wPrior * c * rows.Logit(float64(pr.pix[i]))
			}
			if useTable {
				L += wGlobal * rows.Logit(float64(table[rows.ColourCell(sr[i], sg[i], sb[i], p.Bins)]))
			}
			if useLocal {
				m := float64(lm.pix[i])
				if m > 0.02 && m < 0.98 {
					n := w * o.h
					var df, db float64
					for c, sp := range [3][]float32{sr, sg, sb} {
						v := float64(sp[i])
						f := float64(lf.pix[c*n+i]) / m
						b := float64(lb.pix[c*n+i]) / (1 - m)
						df += (v - f) * (v - f)
						db += (v - b) * (v - b)
					}
					L += wLocal * min(max((db-df)*inv2s2, -8), 8)
				}
			}
			if usePlate {
				n := w * o.h
				var e float64
				for c, sp := range [3][]float32{sr, sg, sb} {
					dv := float64(sp[i]) - float64(pl.pix[c*n+i])
					e += dv * dv
				}
				L += wPlate * min(max((math.Sqrt(e)-pt)/ps, -8), 8)
			}
			q[i] = float32(1 / (1 + math.Exp(-L)))
		}
	})
	return nil
}

// ChromaKey keys a coloured screen with despill (see MatteOps.ChromaKey).
func (d *CPU) ChromaKey(alpha, dst, src Image, p ChromaParams) error {
	const op = "ChromaKey"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	a, err := cpuImg(op, "alpha", alpha)
	if err != nil {
		return err
	}
	if err := wantChannels(op, "dst", o, 3); err != nil {
		return err
	}
	if err := wantChannels(op, "src", s, 3); err != nil {
		return err
	}
	if err := wantChannels(op, "alpha", a, 1); err != nil {
		return err
	}
	if err := sameSize(op, o, []string{"alpha"}, a); err != nil {
		return err
	}
	if p.Channel != 1 && p.Channel != 2 {
		return fmt.Errorf("kernels: cpu: %s: channel %d: want 1 (green) or 2 (blue)", op, p.Channel)
	}
	if !(p.Low >= 0 && p.High > p.Low) {
		return fmt.Errorf("kernels: cpu: %s: want 0 <= Low < High, got %g, %g", op, p.Low, p.High)
	}
	c := p.Channel
	o1, o2 := 0, 3-c // green: red and blue; blue: red and green
	ks := p.Screen[c] - max(p.Screen[o1], p.Screen[o2])
	if !(ks > 0) {
		return fmt.Errorf("kernels: cpu: %s: screen colour %v has no %d-channel dominance", op, p.Screen, c)
	}
	w := o.w
	sc, s1, s2 := s.plane(c), s.plane(o1), s.plane(o2)
	dc, d1, d2 := o.plane(c), o.plane(o1), o.plane(o2)
	ap := a.plane(0)
	span := p.High - p.Low
	d.parallel(o.h, BandRows(w), func(_, y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			m := max(s1[i], s2[i])
			t := (sc[i] - m) / ks
			ap[i] = min(max((p.High-t)/span, 0), 1)
			d1[i], d2[i] = s1[i], s2[i]
			dc[i] = min(sc[i], m)
		}
	})
	return nil
}
