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
	dotsScalar(out, q, keys)
}

// lanes8 is the partial sums of Dots (the AVX2 vector's width).
const lanes8 = 8

// sum8 adds 8 partial sums pairwise.
func sum8(s *[lanes8]float32) float32 {
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}

// dotsTileBytes is how many bytes of keys DotsBlock reads for every query
// of a block before it moves to the next keys: a tile that stays in L2
// while the queries pass over it (each query row is read once per tile).
const dotsTileBytes = 128 << 10

// DotsBlock writes into out[i*stride+e] the dot product of query row i of
// qs with row e of keys (rows of c values; len(qs)/c queries, len(keys)/c
// keys; stride at least the keys). Each value is Dots' for that query, bit
// for bit (the same 8 partial sums, the same pairwise sum and tail), but
// the keys are read once per tile of keys for all the queries, and the
// vector loop holds 3 queries and 2 keys in registers: each key vector
// loaded serves 3 queries, and 6 sums in flight hide the additions'
// latency (about half Dots' time per product on AVX2).
func DotsBlock(out []float32, stride int, qs, keys []float32, c int) {
	if c <= 0 || len(qs)%c != 0 || len(keys)%c != 0 {
		panic("rows: DotsBlock: rows of queries or keys not of c values")
	}
	nq, n := len(qs)/c, len(keys)/c
	if nq == 0 || n == 0 {
		return
	}
	if stride < n || len(out) < (nq-1)*stride+n {
		panic("rows: DotsBlock: fewer outputs than queries x keys")
	}
	tile := max(4, dotsTileBytes/(4*c))
	for k0 := 0; k0 < n; k0 += tile {
		k1 := min(n, k0+tile)
		kt := keys[k0*c : k1*c]
		if dotsBlockSIMD(out[k0:], stride, qs, kt, c) {
			continue
		}
		for i := 0; i < nq; i++ {
			dotsScalar(out[i*stride+k0:i*stride+k1], qs[i*c:(i+1)*c], kt)
		}
	}
}

// dotsScalar is Dots' scalar loop.
func dotsScalar(out, q, keys []float32) {
	c := len(q)
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
