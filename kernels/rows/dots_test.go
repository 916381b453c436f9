package rows

import (
	"math"
	"testing"
)

// refDot is one dot product in Dots' order, written out: product i into
// partial sum i mod 8 over the whole blocks of 8, the partial sums added
// pairwise, then the last len(q) mod 8 products one by one.
func refDot(q, k []float32) float32 {
	var s [8]float32
	n := len(q) / 8 * 8
	for i := 0; i < n; i++ {
		s[i%8] += q[i] * k[i]
	}
	t := ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
	for i := n; i < len(q); i++ {
		t += q[i] * k[i]
	}
	return t
}

// TestDotsBlock checks DotsBlock bit for bit against refDot (and Dots)
// for every remainder of the 4-query and 2- and 4-key blocks, rows under
// 8 values, rows with a tail, tiles of keys that split the keys (512
// values a row: 64 keys a tile), and values with NaN and infinities. It
// runs with whatever loops the build has: the vector loop under
// GOEXPERIMENT=simd on AVX2, the scalar loop otherwise.
func TestDotsBlock(t *testing.T) {
	rng := newRNG(11)
	type shape struct{ c, nq, n int }
	var shapes []shape
	for _, c := range []int{1, 3, 7, 8, 9, 15, 16, 17, 24, 61} {
		for nq := 0; nq <= 9; nq++ {
			for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 9} {
				shapes = append(shapes, shape{c, nq, n})
			}
		}
	}
	shapes = append(shapes, shape{512, 7, 131}, shape{512, 4, 64}, shape{512, 5, 65}, shape{513, 6, 67}, shape{8, 3, 16390})
	for _, sh := range shapes {
		c, nq, n := sh.c, sh.nq, sh.n
		qs, keys := randVals(rng, nq*c, -1, 1), randVals(rng, n*c, -1, 1)
		if c == 9 && nq*n > 0 { // NaN and infinities in some rows
			qs[0], keys[len(keys)-1] = float32(math.NaN()), float32(math.Inf(1))
			qs[len(qs)-1] = float32(math.Inf(-1))
		}
		// Rows of outputs n apart, and n+3 apart with the gaps and the
		// value past the end left alone.
		out := make([]float32, nq*n)
		DotsBlock(out, n, qs, keys, c)
		stride := n + 3
		wide := make([]float32, nq*stride+1)
		for i := range wide {
			wide[i] = 42
		}
		if nq > 0 {
			DotsBlock(wide[:(nq-1)*stride+n], stride, qs, keys, c)
		}
		for i := range wide {
			if e := i % stride; e >= n || i/stride >= nq {
				if wide[i] != 42 {
					t.Fatalf("c %d, %d x %d: wrote %v at %d, outside the outputs", c, nq, n, wide[i], i)
				}
			} else if math.Float32bits(wide[i]) != math.Float32bits(out[i/stride*n+e]) && wide[i] == wide[i] {
				t.Fatalf("c %d, %d x %d: stride %d: value %d differs", c, nq, n, stride, i)
			}
		}
		one := make([]float32, n)
		for i := 0; i < nq; i++ {
			q := qs[i*c : (i+1)*c]
			Dots(one, q, keys)
			for e := 0; e < n; e++ {
				want := refDot(q, keys[e*c:(e+1)*c])
				got := out[i*n+e]
				if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
					t.Fatalf("c %d, %d x %d: query %d key %d: %v (%#x), want %v (%#x)", c, nq, n, i, e, got, math.Float32bits(got), want, math.Float32bits(want))
				}
				if d := one[e]; math.Float32bits(d) != math.Float32bits(want) && !(d != d && want != want) {
					t.Fatalf("c %d: Dots of query %d key %d: %v, want %v", c, i, e, d, want)
				}
			}
		}
	}
	for _, bad := range []func(){
		func() { DotsBlock(make([]float32, 4), 2, make([]float32, 5), make([]float32, 4), 2) },
		func() { DotsBlock(make([]float32, 4), 2, make([]float32, 4), make([]float32, 5), 2) },
		func() { DotsBlock(make([]float32, 3), 2, make([]float32, 4), make([]float32, 4), 2) },
		func() { DotsBlock(make([]float32, 4), 1, make([]float32, 4), make([]float32, 4), 2) },
		func() { DotsBlock(nil, 0, nil, nil, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("DotsBlock with rows that do not fit: no panic")
				}
			}()
			bad()
		}()
	}
}

// BenchmarkDotsBlock is the similarities of one memory read of select's
// (matte/memory.go): 1024 query cells against 1024 remembered cells of
// 512 features; BenchmarkDots is one query of it.
func BenchmarkDotsBlock(b *testing.B) {
	rng := newRNG(3)
	const c, nq, n = 512, 1024, 1024
	qs, keys, out := randVals(rng, nq*c, -1, 1), randVals(rng, n*c, -1, 1), make([]float32, nq*n)
	b.SetBytes(nq * n * c * 4)
	for b.Loop() {
		DotsBlock(out, n, qs, keys, c)
	}
}

// BenchmarkDotsPerQuery is BenchmarkDotsBlock's work with Dots, one query
// at a time (the keys read once per query).
func BenchmarkDotsPerQuery(b *testing.B) {
	rng := newRNG(3)
	const c, nq, n = 512, 1024, 1024
	qs, keys, out := randVals(rng, nq*c, -1, 1), randVals(rng, n*c, -1, 1), make([]float32, nq*n)
	b.SetBytes(nq * n * c * 4)
	for b.Loop() {
		for i := 0; i < nq; i++ {
			Dots(out[i*n:(i+1)*n], qs[i*c:(i+1)*c], keys)
		}
	}
}
