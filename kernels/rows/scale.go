package rows

import "math"

// NearPairs returns, for each of out outputs resampled from in inputs, the
// clamped indices floor(c) and floor(c)+1 of its position
// c = (i+0.5)*in/out - 0.5.
func NearPairs(out, in int) (a, b []int32) {
	a, b = make([]int32, out), make([]int32, out)
	inv := float64(in) / float64(out)
	for i := range out {
		f := int(math.Floor((float64(i)+0.5)*inv - 0.5))
		a[i] = int32(min(max(f, 0), in-1))
		b[i] = int32(min(max(f+1, 0), in-1))
	}
	return a, b
}

// ClampRange moves l toward [min(a,b), max(a,b)] by edge.
func ClampRange(l, a, b, edge float32) float32 {
	lo, hi := min(a, b), max(a, b)
	return l + edge*(min(max(l, lo), hi)-l)
}

// SharpenRow writes row y of channel plane sp (w x h) sharpened into o,
// using the three rows of h3 (3*w) as scratch.
func SharpenRow(o, sp []float32, w, h, y int, amount float32, h3 []float32) {
	for k := range 3 {
		yy := min(max(y+k-1, 0), h-1)
		hblur(h3[k*w:][:w], sp[yy*w:][:w])
	}
	up, mid, dn := h3[:w], h3[w:2*w], h3[2*w:3*w]
	s := sp[y*w:][:w]
	o = o[:w]
	for x := range o {
		b := (0.25*up[x] + 0.5*mid[x]) + 0.25*dn[x]
		o[x] = s[x] + amount*(s[x]-b)
	}
}

// hblur is the [1 2 1]/4 row blur with clamped borders.
func hblur(o, s []float32) {
	w := len(s)
	o = o[:w]
	if w == 1 {
		o[0] = (0.25*s[0] + 0.5*s[0]) + 0.25*s[0]
		return
	}
	o[0] = (0.25*s[0] + 0.5*s[0]) + 0.25*s[1]
	for x := 1; x < w-1; x++ {
		o[x] = (0.25*s[x-1] + 0.5*s[x]) + 0.25*s[x+1]
	}
	o[w-1] = (0.25*s[w-2] + 0.5*s[w-1]) + 0.25*s[w-1]
}
