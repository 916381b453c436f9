package cpuref

import "github.com/vfxrender/vfx/kernels/rows"
import "math"

// reduce runs fn over the fixed row bands of an image of width w and
// height h; fn adds its band's nvals float64 partials into part (zeroed).
// The partials are combined in band order, so the result is the same for
// any worker count.
func (d *CPU) reduce(w, h, nvals int, fn func(part []float64, y0, y1 int)) []float64 {
	band := BandRows(w)
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

// Sum returns the float64 sum of each channel of src.
func (d *CPU) Sum(src Image) ([]float64, error) {
	s, err := cpuImg("Sum", "src", src)
	if err != nil {
		return nil, err
	}
	w := s.w
	return d.reduce(w, s.h, s.c, func(part []float64, y0, y1 int) {
		for c := range s.c {
			part[c], _ = rows.Sums64(s.plane(c)[y0*w : y1*w])
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
				part[1+2*c], part[2+2*c] = rows.Sums64(s.plane(c)[lo:hi])
			}
			return
		}
		mk := m.plane(0)[lo:hi]
		part[0], _ = rows.Sums64(mk)
		for c := range nc {
			part[1+2*c], part[2+2*c] = rows.Wsums64(s.plane(c)[lo:hi], mk)
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
				rows.SHBasis(&b, sinT[x]*cp, sp, -cosT[x]*cp)
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
		if !rows.SHNormalSIMD(&acc, S[i0:i1], NX[i0:i1], NY[i0:i1], NZ[i0:i1], mb) {
			rows.SHNormalRows(&acc, S[i0:i1], NX[i0:i1], NY[i0:i1], NZ[i0:i1], mb)
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
	cf := make([][9]float32, len(coeffs))
	for c, k := range coeffs {
		cf[c] = k
	}
	if len(cf) == 1 || len(cf) == 3 {
		d.parallel(o.h, BandRows(w), func(_, y0, y1 int) {
			lo, hi := y0*w, y1*w
			var outs [3][]float32
			for c := range cf {
				outs[c] = o.plane(c)[lo:hi]
			}
			rows.SHEvalRows(outs[:len(cf)], NX[lo:hi], NY[lo:hi], NZ[lo:hi], cf)
		})
		return nil
	}
	d.parallel(o.h, BandRows(w), func(_, y0, y1 int) {
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
