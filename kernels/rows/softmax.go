package rows

import "math"

// ExpScaled writes into out[e] math.Exp(float64((s[e]-m)/tau)), bit for
// bit, for each of the len(out) values of s not below cut (NaN included),
// and 0 for those below: a softmax's weights, m its largest value, the
// values under cut left out. With AVX2 and FMA the vector loop runs
// math.Exp's own amd64 algorithm (its FMA path, which math.Exp takes on
// such a CPU) on 4 values at a time, and skips blocks of 8 all below cut;
// blocks with a value outside [-700, 700] (where math.Exp leaves that
// path) take math.Exp itself.
func ExpScaled(out []float64, s []float32, m, tau, cut float32) {
	s = s[:len(out)]
	e := expScaledSIMD(out, s, m, tau, cut)
	for ; e < len(out); e++ {
		out[e] = expAbove(s[e], m, tau, cut)
	}
}

// expAbove is one value of ExpScaled.
func expAbove(s, m, tau, cut float32) float64 {
	if s < cut {
		return 0
	}
	return math.Exp(float64((s - m) / tau))
}
