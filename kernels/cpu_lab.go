package kernels

import "math"

// Reinhard et al. 2001 colour space: linear RGB -> LMS (labMS), floor,
// natural log, then lαβ = labA * log(LMS).
var (
	labM = [9]float64{
		0.3811, 0.5783, 0.0402,
		0.1967, 0.7244, 0.0782,
		0.0241, 0.1288, 0.8444,
	}
	labA = func() [9]float64 {
		s3, s6, s2 := 1/math.Sqrt(3), 1/math.Sqrt(6), 1/math.Sqrt(2)
		return [9]float64{
			s3, s3, s3,
			s6, s6, -2 * s6,
			s2, -s2, 0,
		}
	}()
)

// labFloor is the LMS floor applied before the logarithm.
const labFloor = 1e-4

// inv3 inverts a row-major 3x3 matrix.
func inv3(m [9]float64) [9]float64 {
	a, b, c := m[0], m[1], m[2]
	d, e, f := m[3], m[4], m[5]
	g, h, i := m[6], m[7], m[8]
	A := e*i - f*h
	B := -(d*i - f*g)
	C := d*h - e*g
	det := a*A + b*B + c*C
	return [9]float64{
		A / det, -(b*i - c*h) / det, (b*f - c*e) / det,
		B / det, (a*i - c*g) / det, -(a*f - c*d) / det,
		C / det, -(a*h - b*g) / det, (a*e - b*d) / det,
	}
}

// mul3 returns the product a*b of row-major 3x3 matrices.
func mul3(a, b [9]float64) [9]float64 {
	var o [9]float64
	for r := range 3 {
		for c := range 3 {
			o[r*3+c] = a[r*3]*b[c] + a[r*3+1]*b[3+c] + a[r*3+2]*b[6+c]
		}
	}
	return o
}

// Tables of fastLogs and fastExps (read-only after package initialisation).
var (
	// logTab[j] = (1/c_j, ln c_j) for c_j = 1 + (j+0.5)/128.
	logTab = func() (t [128][2]float64) {
		for j := range t {
			c := 1 + (float64(j)+0.5)/128
			t[j] = [2]float64{1 / c, math.Log(c)}
		}
		return
	}()
	// exp2Tab[j] = 2^(j/32).
	exp2Tab = func() (t [32]float64) {
		for j := range t {
			t[j] = math.Exp2(float64(j) / 32)
		}
		return
	}()
)

// fastLogs replaces every v[i] by its natural logarithm (for x = v[i]
// positive, finite and normal) with an absolute error below 1e-12 (about
// 4x faster than math.Log, no division): x = m*2^e with m in [1, 2); the top 7 mantissa bits pick c near m, and
// ln(m) = ln(c) + ln(1 + r), r = (m-c)/c in [-1/256, 1/256], by its series
// to r^4 (remainder < 2e-13). Other inputs give meaningless values but
// never panic. It works on slices: a function of one value is too large
// for Go to inline, and a call per value cost more than the logarithm.
func fastLogs(v []float64) {
	const ln2 = 0.693147180559945309417232121458176568
	for i, x := range v {
		b := math.Float64bits(x)
		e := float64(int64(b>>52&0x7ff) - 1023)
		m := math.Float64frombits(b&(1<<52-1) | 1023<<52)
		t := &logTab[b>>45&127]
		c := 1 + (float64(b>>45&127)+0.5)/128
		r := (m - c) * t[0]
		r2 := r * r
		p := r - r2*0.5 + r2*r*(1.0/3-r*0.25)
		v[i] = (e*ln2 + t[1]) + p
	}
}

// fastExps replaces every v[i] by e^v[i], with a relative error below
// 1e-11 for x = v[i] in [-700, 700] (inputs outside are clamped; NaN
// gives a meaningless value but no panic): x = (32k' + j) ln2/32 + r with |r| <= ln2/64 (Cody-Waite split
// of ln2), e^x = 2^k' * 2^(j/32) * e^r, e^r by its series to r^4
// (remainder < 2e-12). On slices, as fastLogs.
func fastExps(v []float64) {
	const (
		inv   = 32 / 0.693147180559945309417232121458176568
		ln2hi = 6.93147180369123816490e-01 / 32
		ln2lo = 1.90821492927058770002e-10 / 32
	)
	for i, x := range v {
		x = max(-700, min(x, 700))
		k := int64(x*inv+65536.5) - 65536 // round(x*32/ln2)
		fk := float64(k)
		r := x - fk*ln2hi - fk*ln2lo
		r2 := r * r
		p := (1 + r) + r2*(0.5+r*(1.0/6)) + r2*r2*(1.0/24)
		sc := math.Float64frombits(math.Float64bits(exp2Tab[k&31]) + uint64(k>>5)<<52)
		v[i] = sc * p
	}
}

// lmsRows holds one row's floored LMS (setLMS) and their logarithms
// (logs), and the exponents of LabTransfer.
type lmsRows struct {
	m, l, e [3][]float64
}

func newLMSRows(n int) *lmsRows {
	b := make([]float64, 9*n)
	var r lmsRows
	for c := range 3 {
		r.m[c] = b[c*n:][:n]
		r.l[c] = b[(3+c)*n:][:n]
		r.e[c] = b[(6+c)*n:][:n]
	}
	return &r
}

// setLMS sets entry i of t.m to the floored LMS of r, g, b (as logLMS).
func (t *lmsRows) setLMS(i int, r, g, b float64) {
	t.m[0][i] = max(labM[0]*r+labM[1]*g+labM[2]*b, labFloor)
	t.m[1][i] = max(labM[3]*r+labM[4]*g+labM[5]*b, labFloor)
	t.m[2][i] = max(labM[6]*r+labM[7]*g+labM[8]*b, labFloor)
}

// logs sets the first n entries of t.l to the logarithms of t.m's.
func (t *lmsRows) logs(n int) {
	for c := range 3 {
		l := t.l[c][:n]
		copy(l, t.m[c][:n])
		fastLogs(l)
	}
}

// LabStats returns mask-weighted lαβ mean and std of a 3-channel linear
// RGB image (see Ops.LabStats); nil mask = weight 1, pixels of weight 0
// are skipped. Zero total weight gives zero statistics.
func (d *CPU) LabStats(src, mask Image) (LabStats, error) {
	const op = "LabStats"
	var st LabStats
	s, err := cpuImg(op, "src", src)
	if err != nil {
		return st, err
	}
	m, err := optImg(op, "mask", mask)
	if err != nil {
		return st, err
	}
	if err := wantChannels(op, "src", s, 3); err != nil {
		return st, err
	}
	if err := wantChannels(op, "mask", m, 1); err != nil {
		return st, err
	}
	if err := sameSize(op, s, []string{"mask"}, m); err != nil {
		return st, err
	}
	w := s.w
	R, G, B := s.plane(0), s.plane(1), s.plane(2)
	A := labA
	sums := d.reduce(w, s.h, 7, func(part []float64, y0, y1 int) {
		var acc [7]float64
		// Row by row: the pixels of nonzero weight, then their
		// logarithms in one loop (see fastLogs), then the sums in pixel
		// order.
		t := newLMSRows(w)
		wts := make([]float64, w)
		for y := y0; y < y1; y++ {
			n := 0
			for i := y * w; i < (y+1)*w; i++ {
				wt := 1.0
				if m != nil {
					wt = float64(m.pix[i])
					if wt == 0 {
						continue
					}
				}
				wts[n] = wt
				t.setLMS(n, float64(R[i]), float64(G[i]), float64(B[i]))
				n++
			}
			t.logs(n)
			L0, L1, L2 := t.l[0][:n], t.l[1][:n], t.l[2][:n]
			for j, wt := range wts[:n] {
				l0, l1, l2 := L0[j], L1[j], L2[j]
				a0 := A[0]*l0 + A[1]*l1 + A[2]*l2
				a1 := A[3]*l0 + A[4]*l1 + A[5]*l2
				a2 := A[6]*l0 + A[7]*l1 + A[8]*l2
				acc[0] += wt
				acc[1] += wt * a0
				acc[2] += wt * a1
				acc[3] += wt * a2
				acc[4] += wt * a0 * a0
				acc[5] += wt * a1 * a1
				acc[6] += wt * a2 * a2
			}
		}
		copy(part, acc[:])
	})
	st.Weight = sums[0]
	if sums[0] <= 0 {
		return st, nil
	}
	for c := range 3 {
		mean := sums[1+c] / sums[0]
		st.Mean[c] = mean
		st.Std[c] = math.Sqrt(max(sums[4+c]/sums[0]-mean*mean, 0))
	}
	return st, nil
}

// LabTransfer is Reinhard's colour transfer (see Ops.LabTransfer). With
// k = strength*mask, the blended lαβ is lab + k*((s-1)*lab + to.Mean -
// s*from.Mean) (s = to.Std/from.Std), which in log-LMS is
// L' = L + k*(P*L + q) with P = A^-1 diag(s-1) A and q = A^-1 o, composed
// once per call. The result is applied as a change of LMS:
// rgb' = rgb + M^-1 (exp(L') - max(M*rgb, 1e-4)), which equals
// M^-1 exp(L') wherever M*rgb is above the floor, and leaves a pixel
// exactly unchanged where k = 0 (so a zero mask or strength is an exact
// copy, and from == to is the identity even for black pixels).
// dst may equal src.
func (d *CPU) LabTransfer(dst, src, mask Image, from, to LabStats, strength float32) error {
	const op = "LabTransfer"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	m, err := optImg(op, "mask", mask)
	if err != nil {
		return err
	}
	if err := wantChannels(op, "src", s, 3); err != nil {
		return err
	}
	if err := wantChannels(op, "dst", o, 3); err != nil {
		return err
	}
	if err := wantChannels(op, "mask", m, 1); err != nil {
		return err
	}
	if err := sameSize(op, o, []string{"mask"}, m); err != nil {
		return err
	}
	var D [9]float64
	var off [3]float64
	for c := range 3 {
		sc := 1.0
		if from.Std[c] != 0 {
			sc = to.Std[c] / from.Std[c]
		}
		D[c*4] = sc - 1
		off[c] = to.Mean[c] - sc*from.Mean[c]
	}
	Ainv := inv3(labA)
	P := mul3(Ainv, mul3(D, labA))
	var q [3]float64
	for r := range 3 {
		q[r] = Ainv[r*3]*off[0] + Ainv[r*3+1]*off[1] + Ainv[r*3+2]*off[2]
	}
	Mi := inv3(labM)
	str := float64(strength)
	w := o.w
	R, G, B := s.plane(0), s.plane(1), s.plane(2)
	OR, OG, OB := o.plane(0), o.plane(1), o.plane(2)
	d.parallel(o.h, bandRows(w), func(_, y0, y1 int) {
		// Row by row: the logarithms, then the exponents, each in one
		// loop (see fastLogs); the same arithmetic per pixel.
		t := newLMSRows(w)
		for y := y0; y < y1; y++ {
			row := y * w
			for x := range w {
				t.setLMS(x, float64(R[row+x]), float64(G[row+x]), float64(B[row+x]))
			}
			t.logs(w)
			L0, L1, L2 := t.l[0][:w], t.l[1][:w], t.l[2][:w]
			E0, E1, E2 := t.e[0][:w], t.e[1][:w], t.e[2][:w]
			for x := range w {
				k := str
				if m != nil {
					k *= float64(m.pix[row+x])
				}
				l0, l1, l2 := L0[x], L1[x], L2[x]
				E0[x] = l0 + k*(P[0]*l0+P[1]*l1+P[2]*l2+q[0])
				E1[x] = l1 + k*(P[3]*l0+P[4]*l1+P[5]*l2+q[1])
				E2[x] = l2 + k*(P[6]*l0+P[7]*l1+P[8]*l2+q[2])
			}
			fastExps(E0)
			fastExps(E1)
			fastExps(E2)
			M0, M1, M2 := t.m[0][:w], t.m[1][:w], t.m[2][:w]
			for x := range w {
				i := row + x
				k := str
				if m != nil {
					k *= float64(m.pix[i])
				}
				if k == 0 {
					OR[i], OG[i], OB[i] = R[i], G[i], B[i]
					continue
				}
				r, g, b := float64(R[i]), float64(G[i]), float64(B[i])
				e0, e1, e2 := E0[x]-M0[x], E1[x]-M1[x], E2[x]-M2[x]
				OR[i] = float32(r + Mi[0]*e0 + Mi[1]*e1 + Mi[2]*e2)
				OG[i] = float32(g + Mi[3]*e0 + Mi[4]*e1 + Mi[5]*e2)
				OB[i] = float32(b + Mi[6]*e0 + Mi[7]*e1 + Mi[8]*e2)
			}
		}
	})
	return nil
}
