package cpuref

import "github.com/vfxrender/vfx/kernels/rows"
import "math"

// LabStats returns mask-weighted lαβ mean and std of a 3-channel linear
// RGB image (see Ops.LabStats); nil mask = weight 1, pixels of weight 0
// are skipped. Zero total weight gives zero statistics.
func (d *CPU) LabStats(src, mask Image) (LabStats, error) {
	const op = "LabStats"
	var st LabStats
	s, err := cpuImg(op, "src", src)
	if err != nil {
		return st, err
	}
	m, err := optImg(op, "mask", mask)
	if err != nil {
		return st, err
	}
	if err := wantChannels(op, "src", s, 3); err != nil {
		return st, err
	}
	if err := wantChannels(op, "mask", m, 1); err != nil {
		return st, err
	}
	if err := sameSize(op, s, []string{"mask"}, m); err != nil {
		return st, err
	}
	w := s.w
	R, G, B := s.plane(0), s.plane(1), s.plane(2)
	A := rows.LabA
	sums := d.reduce(w, s.h, 7, func(part []float64, y0, y1 int) {
		var acc [7]float64
		// Row by row: the pixels of nonzero weight, then their
		// logarithms in one loop (see fastLogs), then the sums in pixel
		// order.
		t := rows.NewLMSRows(w)
		wts := make([]float64, w)
		for y := y0; y < y1; y++ {
			n := 0
			for i := y * w; i < (y+1)*w; i++ {
				wt := 1.0
				if m != nil {
					wt = float64(m.pix[i])
					if wt == 0 {
						continue
					}
				}
				wts[n] = wt
				t.SetLMS(n, float64(R[i]), float64(G[i]), float64(B[i]))
				n++
			}
			t.Logs(n)
			L0, L1, L2 := t.L[0][:n], t.L[1][:n], t.L[2][:n]
			for j, wt := range wts[:n] {
				l0, l1, l2 := L0[j], L1[j], L2[j]
				a0 := A[0]*l0 + A[1]*l1 + A[2]*l2
				a1 := A[3]*l0 + A[4]*l1 + A[5]*l2
				a2 := A[6]*l0 + A[7]*l1 + A[8]*l2
				acc[0] += wt
				acc[1] += wt * a0
				acc[2] += wt * a1
				acc[3] += wt * a2
				acc[4] += wt * a0 * a0
				acc[5] += wt * a1 * a1
				acc[6] += wt * a2 * a2
			}
		}
		copy(part, acc[:])
	})
	st.Weight = sums[0]
	if sums[0] <= 0 {
		return st, nil
	}
	for c := range 3 {
		mean := sums[1+c] / sums[0]
		st.Mean[c] = mean
		st.Std[c] = math.Sqrt(max(sums[4+c]/sums[0]-mean*mean, 0))
	}
	return st, nil
}

// LabTransfer is Reinhard's colour transfer (see Ops.LabTransfer). With
// k = strength*mask, the blended lαβ is lab + k*((s-1)*lab + to.Mean -
// s*from.Mean) (s = to.Std/from.Std), which in log-LMS is
// L' = L + k*(P*L + q) with P = A^-1 diag(s-1) A and q = A^-1 o, composed
// once per call. The result is applied as a change of LMS:
// rgb' = rgb + M^-1 (exp(L') - max(M*rgb, 1e-4)), which equals
// M^-1 exp(L') wherever M*rgb is above the floor, and leaves a pixel
// exactly unchanged where k = 0 (so a zero mask or strength is an exact
// copy, and from == to is the identity even for black pixels).
// dst may equal src.
func (d *CPU) LabTransfer(dst, src, mask Image, from, to LabStats, strength float32) error {
	const op = "LabTransfer"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	m, err := optImg(op, "mask", mask)
	if err != nil {
		return err
	}
	if err := wantChannels(op, "src", s, 3); err != nil {
		return err
	}
	if err := wantChannels(op, "dst", o, 3); err != nil {
		return err
	}
	if err := wantChannels(op, "mask", m, 1); err != nil {
		return err
	}
	if err := sameSize(op, o, []string{"mask"}, m); err != nil {
		return err
	}
	var D [9]float64
	var off [3]float64
	for c := range 3 {
		sc := 1.0
		if from.Std[c] != 0 {
			sc = to.Std[c] / from.Std[c]
		}
		D[c*4] = sc - 1
		off[c] = to.Mean[c] - sc*from.Mean[c]
	}
	Ainv := rows.Inv3(rows.LabA)
	P := rows.Mul3(Ainv, rows.Mul3(D, rows.LabA))
	var q [3]float64
	for r := range 3 {
		q[r] = Ainv[r*3]*off[0] + Ainv[r*3+1]*off[1] + Ainv[r*3+2]*off[2]
	}
	Mi := rows.Inv3(rows.LabM)
	str := float64(strength)
	w := o.w
	R, G, B := s.plane(0), s.plane(1), s.plane(2)
	OR, OG, OB := o.plane(0), o.plane(1), o.plane(2)
	d.parallel(o.h, BandRows(w), func(_, y0, y1 int) {
		// Row by row: the logarithms, then the exponents, each in one
		// loop (see fastLogs); the same arithmetic per pixel.
		t := rows.NewLMSRows(w)
		for y := y0; y < y1; y++ {
			row := y * w
			for x := range w {
				t.SetLMS(x, float64(R[row+x]), float64(G[row+x]), float64(B[row+x]))
			}
			t.Logs(w)
			L0, L1, L2 := t.L[0][:w], t.L[1][:w], t.L[2][:w]
			E0, E1, E2 := t.E[0][:w], t.E[1][:w], t.E[2][:w]
			for x := range w {
				k := str
				if m != nil {
					k *= float64(m.pix[row+x])
				}
				l0, l1, l2 := L0[x], L1[x], L2[x]
				E0[x] = l0 + k*(P[0]*l0+P[1]*l1+P[2]*l2+q[0])
				E1[x] = l1 + k*(P[3]*l0+P[4]*l1+P[5]*l2+q[1])
				E2[x] = l2 + k*(P[6]*l0+P[7]*l1+P[8]*l2+q[2])
			}
			rows.FastExps(E0)
			rows.FastExps(E1)
			rows.FastExps(E2)
			M0, M1, M2 := t.M[0][:w], t.M[1][:w], t.M[2][:w]
			for x := range w {
				i := row + x
				k := str
				if m != nil {
					k *= float64(m.pix[i])
				}
				if k == 0 {
					OR[i], OG[i], OB[i] = R[i], G[i], B[i]
					continue
				}
				r, g, b := float64(R[i]), float64(G[i]), float64(B[i])
				e0, e1, e2 := E0[x]-M0[x], E1[x]-M1[x], E2[x]-M2[x]
				OR[i] = float32(r + Mi[0]*e0 + Mi[1]*e1 + Mi[2]*e2)
				OG[i] = float32(g + Mi[3]*e0 + Mi[4]*e1 + Mi[5]*e2)
				OB[i] = float32(b + Mi[6]*e0 + Mi[7]*e1 + Mi[8]*e2)
			}
		}
	})
	return nil
}
