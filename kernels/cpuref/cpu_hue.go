package cpuref

import "github.com/vfxrender/vfx/kernels/rows"
import "math"

// NewHueArgs returns false for parameters out of range.
func NewHueArgs(p HueParams) (rows.HueArgs, bool) {
	h := float64(p.MaxHue)
	// π in float32 rounds up: it is accepted and taken as π.
	if !(h >= 0 && h <= float64(float32(math.Pi))) || !(p.C0 >= 0 && p.C1 > p.C0) || math.IsInf(float64(p.C1), 0) ||
		!(p.MaxGain > 0) || math.IsInf(float64(p.MaxGain), 0) {
		return rows.HueArgs{}, false
	}
	h = min(h, math.Pi)
	return rows.HueArgs{MaxHue: h, CosMax: math.Cos(h), SinMax: math.Sin(h), C0: float64(p.C0), C1: float64(p.C1), MaxGain: float64(p.MaxGain)}, true
}

// HueBound bounds the hue rotation of a gain (see Ops.HueBound).
func (d *CPU) HueBound(dst, gain, ref, mask Image, p HueParams) error {
	const op = "HueBound"
	o, g, err := pair(op, dst, gain)
	if err != nil {
		return err
	}
	r, err := cpuImg(op, "ref", ref)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		name string
		im   *cpuImage
	}{{"gain", g}, {"dst", o}, {"ref", r}} {
		if err := wantChannels(op, c.name, c.im, 3); err != nil {
			return err
		}
	}
	m, err := optImg(op, "mask", mask)
	if err != nil {
		return err
	}
	if err := wantChannels(op, "mask", m, 1); err != nil {
		return err
	}
	if err := sameSize(op, o, []string{"ref", "mask"}, r, m); err != nil {
		return err
	}
	if r == o || m == o {
		return shapeErr(op, "ref or mask aliases dst")
	}
	h, ok := NewHueArgs(p)
	if !ok {
		return shapeErr(op, "params %+v: %s", p, rows.HueParamsRule)
	}
	G := [3][]float32{g.plane(0), g.plane(1), g.plane(2)}
	R := [3][]float32{r.plane(0), r.plane(1), r.plane(2)}
	O := [3][]float32{o.plane(0), o.plane(1), o.plane(2)}
	d.parallel(o.h, BandRows(o.w), func(_, y0, y1 int) {
		i0, i1 := y0*o.w, y1*o.w
		g0, g1, g2 := G[0][i0:i1], G[1][i0:i1], G[2][i0:i1]
		q0, q1, q2 := R[0][i0:i1], R[1][i0:i1], R[2][i0:i1]
		p0, p1, p2 := O[0][i0:i1], O[1][i0:i1], O[2][i0:i1]
		q1, q2, g0, g1, g2 = q1[:len(q0)], q2[:len(q0)], g0[:len(q0)], g1[:len(q0)], g2[:len(q0)]
		p0, p1, p2 = p0[:len(q0)], p1[:len(q0)], p2[:len(q0)]
		var mk []float32
		if m != nil {
			mk = m.pix[i0:i1:i1]
			mk = mk[:len(q0)]
		}
		for i := range q0 {
			if mk != nil && mk[i] == 0 {
				p0[i], p1[i], p2[i] = g0[i], g1[i], g2[i]
				continue
			}
			r0, r1, r2 := float64(q0[i]), float64(q1[i]), float64(q2[i])
			o0, o1, o2 := r0*float64(g0[i]), r1*float64(g1[i]), r2*float64(g2[i])
			ra, rb, ry := rows.HueAB(r0, r1, r2)
			va, vb, _ := rows.HueAB(o0, o1, o2)
			da, db, ok := h.Delta(va, vb, ra, rb, ry)
			if !ok {
				p0[i], p1[i], p2[i] = g0[i], g1[i], g2[i]
				continue
			}
			p0[i], p1[i], p2[i] = h.Gains(o0, o1, o2, r0, r1, r2, g0[i], g1[i], g2[i], da, db)
		}
	})
	return nil
}
