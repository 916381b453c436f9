package rows

// Dots writes into out[e] the dot product of q with row e of keys (rows
// of len(q) values, len(out) of them). Each product goes into one of 8
// partial sums by its index mod 8, summed pairwise at the end, then the
// tail: the vector loop's order, so both give the same bits.
func Dots(out, q, keys []float32) {
	c := len(q)
	if len(keys) < len(out)*c {
		panic("rows: Dots: fewer keys than outputs")
	}
	if dotsSIMD(out, q, keys) {
		return
	}
	for e := range out {
		k := keys[e*c : (e+1)*c]
		var s [lanes8]float32
		i := 0
		for ; i+lanes8 <= c; i += lanes8 {
			for l := 0; l < lanes8; l++ {
				s[l] += q[i+l] * k[i+l]
			}
		}
		t := sum8(&s)
		for ; i < c; i++ {
			t += q[i] * k[i]
		}
		out[e] = t
	}
}

// lanes8 is the partial sums of Dots (the AVX2 vector's width).
const lanes8 = 8

// sum8 adds 8 partial sums pairwise.
func sum8(s *[lanes8]float32) float32 {
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}
