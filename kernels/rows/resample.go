package rows

import "math"

// Taps is a separable resampling table: output i reads inputs
// start[i] .. start[i]+n-1 with weights w[off[i]:off[i+1]] (n of them),
// normalised to sum 1 and already folded at the clamped edges.
type Taps struct {
	Start []int32
	Off   []int32
	W     []float32
	fixed int // the tap count of every output, or -1 when they differ
}

func newTaps(n int) Taps {
	return Taps{Start: make([]int32, n), Off: make([]int32, 1, n+1)}
}

// push appends the taps of the next output from float64 weights ws that
// start at input index s; leading and trailing zero weights are dropped
// and the rest normalised.
func (t *Taps) push(s int, ws []float64) {
	for len(ws) > 1 && ws[0] == 0 {
		ws = ws[1:]
		s++
	}
	for len(ws) > 1 && ws[len(ws)-1] == 0 {
		ws = ws[:len(ws)-1]
	}
	sum := 0.0
	for _, v := range ws {
		sum += v
	}
	i := len(t.Off) - 1
	t.Start[i] = int32(s)
	if sum == 0 {
		t.W = append(t.W, 1)
		t.Off = append(t.Off, int32(len(t.W)))
		t.Start[i] = int32(s + len(ws)/2)
		t.setFixed(i)
		return
	}
	for _, v := range ws {
		t.W = append(t.W, float32(v/sum))
	}
	t.Off = append(t.Off, int32(len(t.W)))
	t.setFixed(i)
}

// setFixed updates fixed after output i was pushed.
func (t *Taps) setFixed(i int) {
	k := int(t.Off[i+1] - t.Off[i])
	if i == 0 {
		t.fixed = k
	} else if t.fixed != k {
		t.fixed = -1
	}
}

// AreaTaps gives exact box coverage of in samples by out (<= in) bins:
// output i covers [i*in/out, (i+1)*in/out), each input weighted by its
// overlap (fractional at the bin edges).
func AreaTaps(out, in int) Taps {
	t := newTaps(out)
	buf := make([]float64, 0, in/out+3)
	for i := range out {
		lo := float64(i*in) / float64(out)
		hi := float64((i+1)*in) / float64(out)
		j0 := int(math.Floor(lo))
		j1 := min(int(math.Ceil(hi)), in)
		buf = buf[:0]
		for j := j0; j < j1; j++ {
			buf = append(buf, max(0, math.Min(hi, float64(j+1))-math.Max(lo, float64(j))))
		}
		t.push(j0, buf)
	}
	return t
}

// lanczos3 is sinc(x)*sinc(x/3) on |x| < 3, exactly 1 at 0 and exactly 0
// at the other integers.
func lanczos3(x float64) float64 {
	if x == 0 {
		return 1
	}
	if x <= -3 || x >= 3 || x == math.Trunc(x) {
		return 0
	}
	px := math.Pi * x
	return 3 * math.Sin(px) * math.Sin(px/3) / (px * px)
}

// LanczosTaps maps output i to the input position
// c = (i + 0.5 + off)*inv - 0.5 (inv = input samples per output sample)
// and weights inputs by Lanczos-3, stretched by inv when inv > 1.
func LanczosTaps(out, in int, inv, off float64) Taps {
	t := newTaps(out)
	fs := max(inv, 1)
	support := 3 * fs
	buf := make([]float64, 0, int(2*support)+4)
	for i := range out {
		c := (float64(i)+0.5+off)*inv - 0.5
		jlo := int(math.Ceil(c - support))
		jhi := int(math.Floor(c + support))
		s0 := min(max(jlo, 0), in-1)
		s1 := min(max(jhi, 0), in-1)
		buf = buf[:0]
		for range s1 - s0 + 1 {
			buf = append(buf, 0)
		}
		for j := jlo; j <= jhi; j++ {
			jj := min(max(j, 0), in-1)
			buf[jj-s0] += lanczos3((float64(j) - c) / fs)
		}
		t.push(s0, buf)
	}
	return t
}

// Vtaps writes t = sum_k ws[k] * row(st+k) of the plane sp (width len(t)),
// summing in k order. Up to four rows are summed per pass over t (the
// same left-to-right sums as one row per pass, so bit-identical), which
// saves the loads and stores of t in between.
func Vtaps(t, sp []float32, sw, st int, ws []float32) {
	n := len(t)
	row := func(k int) []float32 { return sp[(st+k)*sw:][:n] }
	var k int
	switch {
	case len(ws) >= 4:
		r0, r1, r2, r3 := row(0), row(1), row(2), row(3)
		w0, w1, w2, w3 := ws[0], ws[1], ws[2], ws[3]
		for x := taps4RowSIMD(t, r0, r1, r2, r3, w0, w1, w2, w3); x < n; x++ {
			t[x] = w0*r0[x] + w1*r1[x] + w2*r2[x] + w3*r3[x]
		}
		k = 4
	case len(ws) == 3:
		r0, r1, r2 := row(0), row(1), row(2)
		w0, w1, w2 := ws[0], ws[1], ws[2]
		for x := range t {
			t[x] = w0*r0[x] + w1*r1[x] + w2*r2[x]
		}
		k = 3
	case len(ws) == 2:
		r0, r1 := row(0), row(1)
		w0, w1 := ws[0], ws[1]
		for x := lerpRowSIMD(t, r0, r1, w0, w1); x < n; x++ {
			t[x] = w0*r0[x] + w1*r1[x]
		}
		k = 2
	default:
		r0, w0 := row(0), ws[0]
		for x := scaleRowSIMD(t, r0, w0); x < n; x++ {
			t[x] = w0 * r0[x]
		}
		k = 1
	}
	for ; k+3 <= len(ws); k += 3 {
		r0, r1, r2 := row(k), row(k+1), row(k+2)
		w0, w1, w2 := ws[k], ws[k+1], ws[k+2]
		for x := range t {
			t[x] = t[x] + w0*r0[x] + w1*r1[x] + w2*r2[x]
		}
	}
	for ; k < len(ws); k++ {
		r, wv := row(k), ws[k]
		for x := range t {
			t[x] += wv * r[x]
		}
	}
}

// Htaps writes q[x] = sum_k w[k] * t[start[x]+k] over x's taps.
func Htaps(q, t []float32, tx *Taps) {
	n := len(q)
	starts := tx.Start[:n]
	offs := tx.Off[:n+1]
	if n > 0 && tx.fixed == 4 && len(tx.W) >= 4*n {
		// Every output has four taps (integer 4x area downsampling):
		// the same two interleaved sums, unrolled.
		ws := tx.W[:4*n]
		for x := range q {
			wx := ws[4*x : 4*x+4 : 4*x+4]
			seg := t[starts[x]:][:4]
			var a0, a1 float32
			a0 += wx[0] * seg[0]
			a1 += wx[1] * seg[1]
			a0 += wx[2] * seg[2]
			a1 += wx[3] * seg[3]
			q[x] = a0 + a1
		}
		return
	}
	for x := range q {
		wx := tx.W[offs[x]:offs[x+1]]
		seg := t[starts[x]:][:len(wx)]
		// Two interleaved sums halve the add dependency chain.
		var a0, a1 float32
		k := 0
		for ; k+1 < len(wx); k += 2 {
			a0 += wx[k] * seg[k]
			a1 += wx[k+1] * seg[k+1]
		}
		if k < len(wx) {
			a0 += wx[k] * seg[k]
		}
		q[x] = a0 + a1
	}
}
