package rows

import "math"

// ExpScaled writes into out[e] math.Exp(float64((s[e]-m)/tau)), bit for
// bit, for each of the len(out) values of s: a softmax's weights with m
// its largest value. With AVX2 and FMA the vector loop runs math.Exp's
// own amd64 algorithm (its FMA path, which math.Exp takes on such a CPU)
// on 4 values at a time; blocks with a value outside [-700, 700] (where
// math.Exp leaves that path) take math.Exp itself.
func ExpScaled(out []float64, s []float32, m, tau float32) {
	s = s[:len(out)]
	e := expScaledSIMD(out, s, m, tau)
	for ; e < len(out); e++ {
		out[e] = math.Exp(float64((s[e] - m) / tau))
	}
}
