package rows

import "math"

// AllZero reports whether every value of row is +0 (a row of background
// in the column pass: edtRow would leave it as it is).
func AllZero(row []float32) bool {
	for _, v := range row {
		if math.Float32bits(v) != 0 {
			return false
		}
	}
	return true
}

// EDTRow replaces the squared column distances in row (+Inf where a
// column has no background) with the exact Euclidean distance: the lower
// envelope of parabolas (q - p)^2 + f(p) over the finite f(p).
func EDTRow(row []float32, f, z []float64, v []int32) {
	n := len(row)
	f = f[:n]
	for i, x := range row {
		f[i] = float64(x)
	}
	k := -1
	for q := range n {
		fq := f[q]
		if math.IsInf(fq, 1) {
			continue
		}
		if k < 0 {
			k = 0
			v[0] = int32(q)
			z[0] = math.Inf(-1)
			z[1] = math.Inf(1)
			continue
		}
		qq := float64(q)
		var sx float64
		for {
			p := float64(v[k])
			sx = ((fq + qq*qq) - (f[v[k]] + p*p)) / (2*qq - 2*p)
			if sx > z[k] {
				break
			}
			k--
		}
		k++
		v[k] = int32(q)
		z[k] = sx
		z[k+1] = math.Inf(1)
	}
	if k < 0 {
		return // no finite value in this row: cannot happen when any background exists
	}
	k = 0
	for q := range n {
		qq := float64(q)
		for z[k+1] < qq {
			k++
		}
		p := float64(v[k])
		row[q] = float32(math.Sqrt((qq-p)*(qq-p) + f[v[k]]))
	}
}
