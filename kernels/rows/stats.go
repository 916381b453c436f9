package rows

// Sums64 returns sum(v) and sum(v^2) in float64, with four interleaved
// accumulators (a fixed order, so deterministic) to break the add latency
// chain.
func Sums64(s []float32) (sum, sq float64) {
	var a0, a1, a2, a3, q0, q1, q2, q3 float64
	i := 0
	for ; i+4 <= len(s); i += 4 {
		v := s[i : i+4 : i+4]
		f0, f1, f2, f3 := float64(v[0]), float64(v[1]), float64(v[2]), float64(v[3])
		a0 += f0
		a1 += f1
		a2 += f2
		a3 += f3
		q0 += f0 * f0
		q1 += f1 * f1
		q2 += f2 * f2
		q3 += f3 * f3
	}
	for ; i < len(s); i++ {
		f := float64(s[i])
		a0 += f
		q0 += f * f
	}
	return (a0 + a1) + (a2 + a3), (q0 + q1) + (q2 + q3)
}

// Wsums64 returns sum(w*v) and sum(w*v^2) in float64 like sums64; pixels
// of weight 0 are skipped (so NaN or Inf outside the mask cannot leak in).
func Wsums64(s, w []float32) (sum, sq float64) {
	s = s[:len(w)]
	var a0, a1, q0, q1 float64
	i := 0
	for ; i+2 <= len(w); i += 2 {
		v := s[i : i+2 : i+2]
		ww := w[i : i+2 : i+2]
		if ww[0] != 0 {
			f := float64(v[0])
			g := float64(ww[0]) * f
			a0 += g
			q0 += g * f
		}
		if ww[1] != 0 {
			f := float64(v[1])
			g := float64(ww[1]) * f
			a1 += g
			q1 += g * f
		}
	}
	for ; i < len(w); i++ {
		if w[i] != 0 {
			f := float64(s[i])
			g := float64(w[i]) * f
			a0 += g
			q0 += g * f
		}
	}
	return a0 + a1, q0 + q1
}

// SHBasis writes the 9 real SH basis values of direction (x, y, z) in the
// SH9 order.
func SHBasis(b *[9]float64, x, y, z float64) {
	b[0] = 0.282095
	b[1] = 0.488603 * y
	b[2] = 0.488603 * z
	b[3] = 0.488603 * x
	b[4] = 1.092548 * x * y
	b[5] = 1.092548 * y * z
	b[6] = 0.315392 * (3*z*z - 1)
	b[7] = 1.092548 * x * z
	b[8] = 0.546274 * (x*x - y*y)
}

// SHNormalRows adds the terms of SHNormalEquations of the pixels of s
// (normals nx, ny, nz; weights m, nil = 1) into acc: the 45 products of
// the upper triangle of ata row by row, then the 9 of atb. Pixels of
// weight 0 are skipped.
func SHNormalRows(acc *[54]float64, s, nx, ny, nz, m []float32) {
	var b [9]float64
	for i := range s {
		wt := 1.0
		if m != nil {
			wt = float64(m[i])
			if wt == 0 {
				continue
			}
		}
		SHBasis(&b, float64(nx[i]), float64(ny[i]), float64(nz[i]))
		ws := wt * float64(s[i])
		k := 0
		for r := range 9 {
			wr := wt * b[r]
			for c := r; c < 9; c++ {
				acc[k] += wr * b[c]
				k++
			}
			acc[45+r] += ws * b[r]
		}
	}
}

// The real SH basis constants of SHEvalRows.
const (
	shK0 = float32(0.282095)
	shK1 = float32(0.488603)
	shK2 = float32(1.092548)
	shK3 = float32(0.315392)
	shK4 = float32(0.546274)
)

// SHEvalRows is SHEval's loop for one or three channels (len(outs) ==
// len(cf)), with the basis and every sum in the general loop's order (so
// bit-identical to it) and no bounds checks inside.
func SHEvalRows(outs [][]float32, nx, ny, nz []float32, cf [][9]float32) {
	n := len(nx)
	ny, nz = ny[:n], nz[:n]
	const c0, c1, c2, c3, c4 = shK0, shK1, shK2, shK3, shK4
	var tail [3][]float32
	if v := shEvalSIMD(outs, nx, ny, nz, cf); v > 0 {
		for c := range cf {
			tail[c] = outs[c][v:n]
		}
		outs, nx, ny, nz, n = tail[:len(cf)], nx[v:], ny[v:n], nz[v:n], n-v
	}
	k := cf[0]
	o0 := outs[0][:n]
	if len(cf) == 1 {
		for i := range o0 {
			x, y, z := nx[i], ny[i], nz[i]
			o0[i] = k[0]*c0 + k[1]*(c1*y) + k[2]*(c1*z) + k[3]*(c1*x) + k[4]*(c2*x*y) +
				k[5]*(c2*y*z) + k[6]*(c3*(3*z*z-1)) + k[7]*(c2*x*z) + k[8]*(c4*(x*x-y*y))
		}
		return
	}
	g, b := cf[1], cf[2]
	o1, o2 := outs[1][:n], outs[2][:n]
	for i := range o0 {
		x, y, z := nx[i], ny[i], nz[i]
		b1, b2, b3 := c1*y, c1*z, c1*x
		b4, b5, b6 := c2*x*y, c2*y*z, c3*(3*z*z-1)
		b7, b8 := c2*x*z, c4*(x*x-y*y)
		o0[i] = k[0]*c0 + k[1]*b1 + k[2]*b2 + k[3]*b3 + k[4]*b4 + k[5]*b5 + k[6]*b6 + k[7]*b7 + k[8]*b8
		o1[i] = g[0]*c0 + g[1]*b1 + g[2]*b2 + g[3]*b3 + g[4]*b4 + g[5]*b5 + g[6]*b6 + g[7]*b7 + g[8]*b8
		o2[i] = b[0]*c0 + b[1]*b1 + b[2]*b2 + b[3]*b3 + b[4]*b4 + b[5]*b5 + b[6]*b6 + b[7]*b7 + b[8]*b8
	}
}
