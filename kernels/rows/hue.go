package rows

import "math"

// HueBound's colour plane: CIELAB's opponent axes to first order about the
// grey axis, a = 500 (X/Xn - Y), b = 200 (Y - Z/Zn) from linear sRGB (D65):
// CIELAB's a*, b* are these times (1/3) Y^(-2/3) near grey, which does not
// change the angle, so the hue angle is CIELAB's near grey and close to it
// for moderate chroma, with no root or logarithm. A change of exposure
// scales a, b and Y together: hue and the relative chroma |(a, b)| / Y do
// not move.
var (
	// HueXYZ is linear sRGB to (X/Xn, Y, Z/Zn).
	HueXYZ = [9]float64{
		0.4124 / 0.95047, 0.3576 / 0.95047, 0.1805 / 0.95047,
		0.2126, 0.7152, 0.0722,
		0.0193 / 1.08883, 0.1192 / 1.08883, 0.9505 / 1.08883,
	}
	HueXYZInv = Inv3(HueXYZ)
)

// HueArgs are HueBound's per-call constants, shared by the CPU and CUDA
// paths: the bound's cosine and sine at full chroma, and the ramp.
type HueArgs struct {
	MaxHue, CosMax, SinMax, C0, C1, MaxGain float64
}

// HueParamsRule is the message of parameters out of range.
const HueParamsRule = "want 0 <= MaxHue <= π, 0 <= C0 < C1 and MaxGain > 0 (finite)"

// HueAB returns HueBound's (a, b) and Y of linear RGB.
func HueAB(r, g, b float64) (a, bb, y float64) {
	x := HueXYZ[0]*r + HueXYZ[1]*g + HueXYZ[2]*b
	y = HueXYZ[3]*r + HueXYZ[4]*g + HueXYZ[5]*b
	z := HueXYZ[6]*r + HueXYZ[7]*g + HueXYZ[8]*b
	return 500 * (x - y), 200 * (y - z), y
}

// Delta returns the change (da, db) that turns the vector (va, vb) back
// within the allowed angle of the reference's (ra, rb) (its Y ry), and
// false where none is needed. Written once for the CPU;
// the CUDA kernel (pixel.cu vfx_hue_bound) is the same arithmetic.
func (h *HueArgs) Delta(va, vb, ra, rb, ry float64) (da, db float64, ok bool) {
	// The common case first, without a root: a grey reference, or a
	// vector within MaxHue (the bound at full chroma, the tightest).
	r2, v2 := ra*ra+rb*rb, va*va+vb*vb
	if !(ry > 0) || !(r2 > h.C0*h.C0*ry*ry) || v2 == 0 {
		return 0, 0, false
	}
	dot := ra*va + rb*vb
	if h.CosMax >= 0 && dot > 0 && dot*dot >= h.CosMax*h.CosMax*r2*v2 {
		return 0, 0, false
	}
	rc, vc := math.Sqrt(r2), math.Sqrt(v2)
	rel := rc / ry
	cosM, sinM := h.CosMax, h.SinMax
	if rel < h.C1 {
		t := (rel - h.C0) / (h.C1 - h.C0)
		t = t * t * (3 - 2*t)
		a := math.Pi - t*(math.Pi-h.MaxHue)
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

// Gains returns the gains that take ref (r0, r1, r2) to out (o0, o1, o2)
// moved by (da, db) in the plane, Y kept: X/Xn moves by da/500, Z/Zn by
// -db/200. A channel whose reference is at most 1e-4 keeps its gain.
func (h *HueArgs) Gains(o0, o1, o2, r0, r1, r2 float64, g0, g1, g2 float32, da, db float64) (float32, float32, float32) {
	dx, dz := da/500, -db/200
	out := [3]float32{g0, g1, g2}
	for c, rc := range [3]float64{r0, r1, r2} {
		if rc <= 1e-4 {
			continue
		}
		v := [3]float64{o0, o1, o2}[c] + HueXYZInv[3*c]*dx + HueXYZInv[3*c+2]*dz
		out[c] = float32(min(max(v/rc, 0), h.MaxGain))
	}
	return out[0], out[1], out[2]
}
