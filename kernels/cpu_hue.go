package kernels

import "math"

// HueBound's colour plane: CIELAB's opponent axes to first order about the
// grey axis, a = 500 (X/Xn - Y), b = 200 (Y - Z/Zn) from linear sRGB (D65):
// CIELAB's a*, b* are these times (1/3) Y^(-2/3) near grey, which does not
// change the angle, so the hue angle is CIELAB's near grey and close to it
// for moderate chroma, with no root or logarithm. A change of exposure
// scales a, b and Y together: hue and the relative chroma |(a, b)| / Y do
// not move.
var (
	// hueXYZ is linear sRGB to (X/Xn, Y, Z/Zn).
	hueXYZ = [9]float64{
		0.4124 / 0.95047, 0.3576 / 0.95047, 0.1805 / 0.95047,
		0.2126, 0.7152, 0.0722,
		0.0193 / 1.08883, 0.1192 / 1.08883, 0.9505 / 1.08883,
	}
	hueXYZInv = inv3(hueXYZ)
)

// hueArgs are HueBound's per-call constants, shared by the CPU and CUDA
// paths: the bound's cosine and sine at full chroma, and the ramp.
type hueArgs struct {
	maxHue, cosMax, sinMax, c0, c1, maxGain float64
}

// newHueArgs returns false for parameters out of range.
func newHueArgs(p HueParams) (hueArgs, bool) {
	h := float64(p.MaxHue)
	// π in float32 rounds up: it is accepted and taken as π.
	if !(h >= 0 && h <= float64(float32(math.Pi))) || !(p.C0 >= 0 && p.C1 > p.C0) || math.IsInf(float64(p.C1), 0) ||
		!(p.MaxGain > 0) || math.IsInf(float64(p.MaxGain), 0) {
		return hueArgs{}, false
	}
	h = min(h, math.Pi)
	return hueArgs{maxHue: h, cosMax: math.Cos(h), sinMax: math.Sin(h), c0: float64(p.C0), c1: float64(p.C1), maxGain: float64(p.MaxGain)}, true
}

// hueParamsRule is the message of parameters out of range.
const hueParamsRule = "want 0 <= MaxHue <= π, 0 <= C0 < C1 and MaxGain > 0 (finite)"

// hueAB returns HueBound's (a, b) and Y of linear RGB.
func hueAB(r, g, b float64) (a, bb, y float64) {
	x := hueXYZ[0]*r + hueXYZ[1]*g + hueXYZ[2]*b
	y = hueXYZ[3]*r + hueXYZ[4]*g + hueXYZ[5]*b
	z := hueXYZ[6]*r + hueXYZ[7]*g + hueXYZ[8]*b
	return 500 * (x - y), 200 * (y - z), y
}

// delta returns the change (da, db) that turns the vector (va, vb) back
// within the allowed angle of the reference's (ra, rb) (its Y ry), and
// false where none is needed. Written once for the CPU;
// the CUDA kernel (pixel.cu vfx_hue_bound) is the same arithmetic.
func (h *hueArgs) delta(va, vb, ra, rb, ry float64) (da, db float64, ok bool) {
	// The common case first, without a root: a grey reference, or a
	// vector within MaxHue (the bound at full chroma, the tightest).
	r2, v2 := ra*ra+rb*rb, va*va+vb*vb
	if !(ry > 0) || !(r2 > h.c0*h.c0*ry*ry) || v2 == 0 {
		return 0, 0, false
	}
	dot := ra*va + rb*vb
	if h.cosMax >= 0 && dot > 0 && dot*dot >= h.cosMax*h.cosMax*r2*v2 {
		return 0, 0, false
	}
	rc, vc := math.Sqrt(r2), math.Sqrt(v2)
	rel := rc / ry
	cosM, sinM := h.cosMax, h.sinMax
	if rel < h.c1 {
		t := (rel - h.c0) / (h.c1 - h.c0)
		t = t * t * (3 - 2*t)
		a := math.Pi - t*(math.Pi-h.maxHue)
		cosM, sinM = math.Cos(a), math.Sin(a)
	}
	ua, ub := ra/rc, rb/rc
	if (ua*va+ub*vb)/vc >= cosM {
		return 0, 0, false
	}
	// The side of ref that the vector lies on: turn toward it by the bound.
	s := sinM
	if ua*vb-ub*va < 0 {
		s = -s
	}
	return vc*(cosM*ua-s*ub) - va, vc*(cosM*ub+s*ua) - vb, true
}

// gains returns the gains that take ref (r0, r1, r2) to out (o0, o1, o2)
// moved by (da, db) in the plane, Y kept: X/Xn moves by da/500, Z/Zn by
// -db/200. A channel whose reference is at most 1e-4 keeps its gain.
func (h *hueArgs) gains(o0, o1, o2, r0, r1, r2 float64, g0, g1, g2 float32, da, db float64) (float32, float32, float32) {
	dx, dz := da/500, -db/200
	out := [3]float32{g0, g1, g2}
	for c, rc := range [3]float64{r0, r1, r2} {
		if rc <= 1e-4 {
			continue
		}
		v := [3]float64{o0, o1, o2}[c] + hueXYZInv[3*c]*dx + hueXYZInv[3*c+2]*dz
		out[c] = float32(min(max(v/rc, 0), h.maxGain))
	}
	return out[0], out[1], out[2]
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
	h, ok := newHueArgs(p)
	if !ok {
		return shapeErr(op, "params %+v: %s", p, hueParamsRule)
	}
	G := [3][]float32{g.plane(0), g.plane(1), g.plane(2)}
	R := [3][]float32{r.plane(0), r.plane(1), r.plane(2)}
	O := [3][]float32{o.plane(0), o.plane(1), o.plane(2)}
	d.parallel(o.h, bandRows(o.w), func(_, y0, y1 int) {
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
			ra, rb, ry := hueAB(r0, r1, r2)
			va, vb, _ := hueAB(o0, o1, o2)
			da, db, ok := h.delta(va, vb, ra, rb, ry)
			if !ok {
				p0[i], p1[i], p2[i] = g0[i], g1[i], g2[i]
				continue
			}
			p0[i], p1[i], p2[i] = h.gains(o0, o1, o2, r0, r1, r2, g0[i], g1[i], g2[i], da, db)
		}
	})
	return nil
}
