package rows

import "math"

// Reinhard et al. 2001 colour space: linear RGB -> LMS (labMS), floor,
// natural log, then lαβ = labA * log(LMS).
var (
	LabM = [9]float64{
		0.3811, 0.5783, 0.0402,
		0.1967, 0.7244, 0.0782,
		0.0241, 0.1288, 0.8444,
	}
	LabA = func() [9]float64 {
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

// Inv3 inverts a row-major 3x3 matrix.
func Inv3(m [9]float64) [9]float64 {
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

// Mul3 returns the product a*b of row-major 3x3 matrices.
func Mul3(a, b [9]float64) [9]float64 {
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

// FastExps replaces every v[i] by e^v[i], with a relative error below
// 1e-11 for x = v[i] in [-700, 700] (inputs outside are clamped; NaN
// gives a meaningless value but no panic): x = (32k' + j) ln2/32 + r with |r| <= ln2/64 (Cody-Waite split
// of ln2), e^x = 2^k' * 2^(j/32) * e^r, e^r by its series to r^4
// (remainder < 2e-12). On slices, as fastLogs.
func FastExps(v []float64) {
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

// LMSRows holds one row's floored LMS (SetLMS) and their logarithms
// (Logs), and the exponents of LabTransfer.
type LMSRows struct {
	M, L, E [3][]float64
}

// NewLMSRows allocates the LMS, logarithm and exponent rows of n pixels.
func NewLMSRows(n int) *LMSRows {
	b := make([]float64, 9*n)
	var r LMSRows
	for c := range 3 {
		r.M[c] = b[c*n:][:n]
		r.L[c] = b[(3+c)*n:][:n]
		r.E[c] = b[(6+c)*n:][:n]
	}
	return &r
}

// SetLMS sets entry i of t.m to the floored LMS of r, g, b (as logLMS).
func (t *LMSRows) SetLMS(i int, r, g, b float64) {
	t.M[0][i] = max(LabM[0]*r+LabM[1]*g+LabM[2]*b, labFloor)
	t.M[1][i] = max(LabM[3]*r+LabM[4]*g+LabM[5]*b, labFloor)
	t.M[2][i] = max(LabM[6]*r+LabM[7]*g+LabM[8]*b, labFloor)
}

// Logs sets the first n entries of t.l to the logarithms of t.m's.
func (t *LMSRows) Logs(n int) {
	for c := range 3 {
		l := t.L[c][:n]
		copy(l, t.M[c][:n])
		fastLogs(l)
	}
}
