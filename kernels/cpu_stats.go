package kernels

import "math"

// reduce runs fn over the fixed row bands of an image of width w and
// height h; fn adds its band's nvals float64 partials into part (zeroed).
// The partials are combined in band order, so the result is the same for
// any worker count.
func (d *CPU) reduce(w, h, nvals int, fn func(part []float64, y0, y1 int)) []float64 {
	band := bandRows(w)
	nb := (h + band - 1) / band
	parts := make([]float64, nb*nvals)
	d.parallel(h, band, func(_, y0, y1 int) {
		b := y0 / band
		fn(parts[b*nvals:(b+1)*nvals], y0, y1)
	})
	out := make([]float64, nvals)
	for b := range nb {
		p := parts[b*nvals : (b+1)*nvals]
		for k, v := range p {
			out[k] += v
		}
	}
	return out
}

// sums64 returns sum(v) and sum(v^2) in float64, with four interleaved
// accumulators (a fixed order, so deterministic) to break the add latency
// chain.
func sums64(s []float32) (sum, sq float64) {
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

// wsums64 returns sum(w*v) and sum(w*v^2) in float64 like sums64; pixels
// of weight 0 are skipped (so NaN or Inf outside the mask cannot leak in).
func wsums64(s, w []float32) (sum, sq float64) {
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

// Sum returns the float64 sum of each channel of src.
func (d *CPU) Sum(src Image) ([]float64, error) {
	s, err := cpuImg("Sum", "src", src)
	if err != nil {
		return nil, err
	}
	w := s.w
	return d.reduce(w, s.h, s.c, func(part []float64, y0, y1 int) {
		for c := range s.c {
			part[c], _ = sums64(s.plane(c)[y0*w : y1*w])
		}
	}), nil
}

// MaskedStats returns per-channel mean and (population) standard
// deviation weighted by the 1-channel mask (nil = weight 1), see
// Ops.MaskedStats. Sums are float64 (one pass, E[v^2]-mean^2 floored at
// 0). A total weight <= 0 gives zero means and stds.
func (d *CPU) MaskedStats(src, mask Image) (Stats, error) {
	const op = "MaskedStats"
	s, err := cpuImg(op, "src", src)
	if err != nil {
		return Stats{}, err
	}
	m, err := optImg(op, "mask", mask)
	if err != nil {
		return Stats{}, err
	}
	if err := wantChannels(op, "mask", m, 1); err != nil {
		return Stats{}, err
	}
	if err := sameSize(op, s, []string{"mask"}, m); err != nil {
		return Stats{}, err
	}
	w, nc := s.w, s.c
	sums := d.reduce(w, s.h, 1+2*nc, func(part []float64, y0, y1 int) {
		lo, hi := y0*w, y1*w
		if m == nil {
			part[0] = float64(hi - lo)
			for c := range nc {
				part[1+2*c], part[2+2*c] = sums64(s.plane(c)[lo:hi])
			}
			return
		}
		mk := m.plane(0)[lo:hi]
		part[0], _ = sums64(mk)
		for c := range nc {
			part[1+2*c], part[2+2*c] = wsums64(s.plane(c)[lo:hi], mk)
		}
	})
	st := Stats{Mean: make([]float64, nc), Std: make([]float64, nc), Weight: sums[0]}
	if sums[0] <= 0 {
		return st, nil
	}
	for c := range nc {
		mean := sums[1+2*c] / sums[0]
		st.Mean[c] = mean
		st.Std[c] = math.Sqrt(max(sums[2+2*c]/sums[0]-mean*mean, 0))
	}
	return st, nil
}

// shBasis writes the 9 real SH basis values of direction (x, y, z) in the
// SH9 order.
func shBasis(b *[9]float64, x, y, z float64) {
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

// SHProjectEnv projects the 3-channel radiance image src onto SH9 per
// channel with the equirectangular back-hemisphere mapping and mirrored
// front of Ops.SHProjectEnv. The front hemisphere is folded in
// analytically: mirroring z flips the sign of Y10, Y2-1 and Y21 only, so
// L_k = (1 + front*sign_k) * sum L*Y_k(d)*dOmega.
func (d *CPU) SHProjectEnv(src Image, front float32) ([3]SH9, error) {
	const op = "SHProjectEnv"
	var out [3]SH9
	s, err := cpuImg(op, "src", src)
	if err != nil {
		return out, err
	}
	if err := wantChannels(op, "src", s, 3); err != nil {
		return out, err
	}
	w, h := s.w, s.h
	sinT, cosT := make([]float64, w), make([]float64, w)
	for x := range w {
		t := ((float64(x)+0.5)/float64(w) - 0.5) * math.Pi
		sinT[x], cosT[x] = math.Sin(t), math.Cos(t)
	}
	pix := (math.Pi / float64(w)) * (math.Pi / float64(h))
	R, G, B := s.plane(0), s.plane(1), s.plane(2)
	sums := d.reduce(w, h, 27, func(part []float64, y0, y1 int) {
		var acc [27]float64
		var b [9]float64
		for y := y0; y < y1; y++ {
			phi := (0.5 - (float64(y)+0.5)/float64(h)) * math.Pi
			sp, cp := math.Sin(phi), math.Cos(phi)
			dw := cp * pix
			rr, gr, br := R[y*w:][:w], G[y*w:][:w], B[y*w:][:w]
			for x := range rr {
				shBasis(&b, sinT[x]*cp, sp, -cosT[x]*cp)
				lr, lg, lb := float64(rr[x])*dw, float64(gr[x])*dw, float64(br[x])*dw
				for k, v := range b {
					acc[k] += lr * v
					acc[9+k] += lg * v
					acc[18+k] += lb * v
				}
			}
		}
		copy(part, acc[:])
	})
	f := float64(front)
	for c := range 3 {
		for k := range 9 {
			sign := 1.0
			if k == 2 || k == 5 || k == 7 {
				sign = -1
			}
			out[c][k] = float32(sums[9*c+k] * (1 + f*sign))
		}
	}
	return out, nil
}

// SHNormalEquations accumulates ata = sum w*Y(n)Y(n)^T and
// atb = sum w*Y(n)*s in float64 (see Ops.SHNormalEquations). Normals are
// used as given (not renormalised); pixels of weight 0 are skipped.
func (d *CPU) SHNormalEquations(signal, normals, mask Image) (ata [81]float64, atb [9]float64, err error) {
	const op = "SHNormalEquations"
	s, err := cpuImg(op, "signal", signal)
	if err != nil {
		return ata, atb, err
	}
	n, err := cpuImg(op, "normals", normals)
	if err != nil {
		return ata, atb, err
	}
	m, err := optImg(op, "mask", mask)
	if err != nil {
		return ata, atb, err
	}
	if err := wantChannels(op, "signal", s, 1); err != nil {
		return ata, atb, err
	}
	if err := wantChannels(op, "normals", n, 3); err != nil {
		return ata, atb, err
	}
	if err := wantChannels(op, "mask", m, 1); err != nil {
		return ata, atb, err
	}
	if err := sameSize(op, s, []string{"normals", "mask"}, n, m); err != nil {
		return ata, atb, err
	}
	w := s.w
	NX, NY, NZ := n.plane(0), n.plane(1), n.plane(2)
	S := s.plane(0)
	var M []float32
	if m != nil {
		M = m.pix
	}
	sums := d.reduce(w, s.h, 54, func(part []float64, y0, y1 int) {
		i0, i1 := y0*w, y1*w
		var mb []float32
		if M != nil {
			mb = M[i0:i1]
		}
		var acc [54]float64
		if !shNormalSIMD(&acc, S[i0:i1], NX[i0:i1], NY[i0:i1], NZ[i0:i1], mb) {
			shNormalRows(&acc, S[i0:i1], NX[i0:i1], NY[i0:i1], NZ[i0:i1], mb)
		}
		copy(part, acc[:])
	})
	k := 0
	for r := range 9 {
		for c := r; c < 9; c++ {
			ata[r*9+c] = sums[k]
			ata[c*9+r] = sums[k]
			k++
		}
		atb[r] = sums[45+r]
	}
	return ata, atb, nil
}

// shNormalRows adds the terms of SHNormalEquations of the pixels of s
// (normals nx, ny, nz; weights m, nil = 1) into acc: the 45 products of
// the upper triangle of ata row by row, then the 9 of atb. Pixels of
// weight 0 are skipped.
func shNormalRows(acc *[54]float64, s, nx, ny, nz, m []float32) {
	var b [9]float64
	for i := range s {
		wt := 1.0
		if m != nil {
			wt = float64(m[i])
			if wt == 0 {
				continue
			}
		}
		shBasis(&b, float64(nx[i]), float64(ny[i]), float64(nz[i]))
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

// SHEval writes sum_k coeffs[c][k]*Y_k(n) into each channel c of dst (see
// Ops.SHEval); the basis is evaluated in float32.
func (d *CPU) SHEval(dst, normals Image, coeffs []SH9) error {
	const op = "SHEval"
	o, err := cpuImg(op, "dst", dst)
	if err != nil {
		return err
	}
	n, err := cpuImg(op, "normals", normals)
	if err != nil {
		return err
	}
	if err := wantChannels(op, "normals", n, 3); err != nil {
		return err
	}
	if len(coeffs) != o.c {
		return shapeErr(op, "%d coefficient sets for %d channels", len(coeffs), o.c)
	}
	if err := sameSize(op, o, []string{"normals"}, n); err != nil {
		return err
	}
	w := o.w
	NX, NY, NZ := n.plane(0), n.plane(1), n.plane(2)
	cf := make([]SH9, len(coeffs))
	copy(cf, coeffs)
	if len(cf) == 1 || len(cf) == 3 {
		d.parallel(o.h, bandRows(w), func(_, y0, y1 int) {
			lo, hi := y0*w, y1*w
			var outs [3][]float32
			for c := range cf {
				outs[c] = o.plane(c)[lo:hi]
			}
			shEvalRows(outs[:len(cf)], NX[lo:hi], NY[lo:hi], NZ[lo:hi], cf)
		})
		return nil
	}
	d.parallel(o.h, bandRows(w), func(_, y0, y1 int) {
		for i := y0 * w; i < y1*w; i++ {
			x, y, z := NX[i], NY[i], NZ[i]
			b := [9]float32{
				0.282095,
				0.488603 * y,
				0.488603 * z,
				0.488603 * x,
				1.092548 * x * y,
				1.092548 * y * z,
				0.315392 * (3*z*z - 1),
				1.092548 * x * z,
				0.546274 * (x*x - y*y),
			}
			for c := range cf {
				k := &cf[c]
				o.pix[c*w*o.h+i] = k[0]*b[0] + k[1]*b[1] + k[2]*b[2] + k[3]*b[3] + k[4]*b[4] +
					k[5]*b[5] + k[6]*b[6] + k[7]*b[7] + k[8]*b[8]
			}
		}
	})
	return nil
}

// shEvalRows is SHEval's loop for one or three channels (len(outs) ==
// len(cf)), with the basis and every sum in the general loop's order (so
// bit-identical to it) and no bounds checks inside.
// The real SH basis constants of shEvalRows.
const (
	shK0 = float32(0.282095)
	shK1 = float32(0.488603)
	shK2 = float32(1.092548)
	shK3 = float32(0.315392)
	shK4 = float32(0.546274)
)

func shEvalRows(outs [][]float32, nx, ny, nz []float32, cf []SH9) {
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
