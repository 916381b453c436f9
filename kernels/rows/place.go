package rows

import "math"

// PlaceTaps is the table of one axis of a placement (kernels.PlaceOps):
// output i (of out) reads the input (of in) at the continuous position
// (i + 0.5 - shift)/scale, where shift is in output pixels. A scale
// below 1 averages the input's box [(i-shift)/scale, (i+1-shift)/scale)
// by exact coverage (area); 1 and above interpolates linearly between the
// two nearest input centres (bilinear). The weights are normalised over
// the whole support; then the part of the support outside 0..in-1 is
// dropped (zero: the outside reads as 0, so an output wholly outside gets
// one tap of weight 0) or folded onto the nearest edge sample (clamp).
// scale > 0 and shift finite.
func PlaceTaps(out, in int, scale, shift float64, zero bool) Taps {
	t := newTaps(out)
	var ws []float64
	for i := range out {
		j0, ws2 := placeWeights(i, scale, shift, ws[:0])
		ws = ws2
		t.pushPlaced(j0, ws, in, zero)
	}
	return t
}

// placeWeights returns output i's weights over the inputs j0, j0+1, ...
// (in ws), normalised to sum 1, before any border rule.
func placeWeights(i int, scale, shift float64, ws []float64) (int, []float64) {
	if scale >= 1 {
		c := (float64(i)+0.5-shift)/scale - 0.5
		j0 := math.Floor(c)
		f := c - j0
		return int(j0), append(ws, 1-f, f)
	}
	lo := (float64(i) - shift) / scale
	hi := (float64(i+1) - shift) / scale
	j0 := int(math.Floor(lo))
	j1 := int(math.Ceil(hi))
	for j := j0; j < j1; j++ {
		ws = append(ws, max(0, math.Min(hi, float64(j+1))-math.Max(lo, float64(j)))*scale)
	}
	return j0, ws
}

// pushPlaced appends the taps of the next output: weights ws from input
// j0, with the border rule of PlaceTaps; zero weights at either end are
// dropped.
func (t *Taps) pushPlaced(j0 int, ws []float64, in int, zero bool) {
	i := len(t.Off) - 1
	lo, hi := j0, j0+len(ws) // the inputs [lo, hi) ws covers
	var out []float64
	start := 0
	switch {
	case zero:
		a, b := max(lo, 0), min(hi, in)
		if a < b {
			start, out = a, ws[a-lo:b-lo]
		}
	default:
		a, b := min(max(lo, 0), in-1), min(max(hi-1, 0), in-1)
		start = a
		out = make([]float64, b-a+1)
		for k, w := range ws {
			j := min(max(lo+k, 0), in-1)
			out[j-a] += w
		}
	}
	for len(out) > 0 && out[0] == 0 {
		out = out[1:]
		start++
	}
	for len(out) > 0 && out[len(out)-1] == 0 {
		out = out[:len(out)-1]
	}
	if len(out) == 0 {
		t.Start[i] = 0
		t.W = append(t.W, 0)
	} else {
		t.Start[i] = int32(start)
		for _, w := range out {
			t.W = append(t.W, float32(w))
		}
	}
	t.Off = append(t.Off, int32(len(t.W)))
	t.setFixed(i)
}
