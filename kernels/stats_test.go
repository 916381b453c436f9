package kernels

import (
	"fmt"
	"math"
	"testing"
)

func TestSumMaskedStats(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(40)
	for _, sz := range append(testSizes, [2]int{300, 200}) {
		t.Run(sizeName(sz), func(t *testing.T) {
			w, h := sz[0], sz[1]
			n := w * h
			src := randVals(rng, 3*n, -1, 2)
			mk := randAlpha(rng, n)
			S, M := img(t, d, w, h, 3, src), img(t, d, w, h, 1, mk)
			sum, err := d.Sum(S)
			if err != nil {
				t.Fatal(err)
			}
			for _, masked := range []bool{false, true} {
				var mask Image
				if masked {
					mask = M
				}
				st, err := d.MaskedStats(S, mask)
				if err != nil {
					t.Fatal(err)
				}
				var sw float64
				for i := range n {
					if masked {
						sw += float64(mk[i])
					} else {
						sw++
					}
				}
				if !near(st.Weight, sw, 1e-9*sw) {
					t.Errorf("weight %v, want %v", st.Weight, sw)
				}
				for c := range 3 {
					var s, m1 float64
					for i := range n {
						wt := 1.0
						if masked {
							wt = float64(mk[i])
						}
						s += float64(src[c*n+i])
						m1 += wt * float64(src[c*n+i])
					}
					if !masked && !near(sum[c], s, 1e-9*float64(n)) {
						t.Errorf("sum[%d] = %v, want %v", c, sum[c], s)
					}
					mean, v := 0.0, 0.0
					if sw > 0 {
						mean = m1 / sw
						for i := range n {
							wt := 1.0
							if masked {
								wt = float64(mk[i])
							}
							dv := float64(src[c*n+i]) - mean
							v += wt * dv * dv
						}
						v /= sw
					}
					if !near(st.Mean[c], mean, 1e-9) || !near(st.Std[c], math.Sqrt(v), 1e-7) {
						t.Errorf("masked=%v channel %d: mean %v std %v, want %v %v", masked, c, st.Mean[c], st.Std[c], mean, math.Sqrt(v))
					}
				}
			}
		})
	}
	t.Run("zero weight", func(t *testing.T) {
		st, err := d.MaskedStats(img(t, d, 3, 3, 2, randVals(rng, 18, 0, 1)), img(t, d, 3, 3, 1, nil))
		if err != nil {
			t.Fatal(err)
		}
		if st.Weight != 0 || st.Mean[0] != 0 || st.Std[1] != 0 || len(st.Mean) != 2 {
			t.Errorf("zero weight: %+v", st)
		}
	})
}

// refEnvDir is the documented pixel -> direction mapping.
func refEnvDir(x, y, w, h int) (dx, dy, dz, domega float64) {
	theta := ((float64(x)+0.5)/float64(w) - 0.5) * math.Pi
	phi := (0.5 - (float64(y)+0.5)/float64(h)) * math.Pi
	return math.Sin(theta) * math.Cos(phi), math.Sin(phi), -math.Cos(theta) * math.Cos(phi),
		math.Cos(phi) * (math.Pi / float64(w)) * (math.Pi / float64(h))
}

func TestSHProjectEnv(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(41)
	for _, sz := range [][2]int{{1, 1}, {7, 5}, {13, 1}, {32, 16}} {
		for _, front := range []float64{0, 0.5, 1} {
			t.Run(fmt.Sprintf("%s/front%g", sizeName(sz), front), func(t *testing.T) {
				w, h := sz[0], sz[1]
				src := randVals(rng, 3*w*h, 0, 2)
				got, err := d.SHProjectEnv(img(t, d, w, h, 3, src), float32(front))
				if err != nil {
					t.Fatal(err)
				}
				var want [3][9]float64
				for y := range h {
					for x := range w {
						dx, dy, dz, dom := refEnvDir(x, y, w, h)
						back, fr := refSH(dx, dy, dz), refSH(dx, dy, -dz)
						for c := range 3 {
							l := at(src, w, h, x, y, c)
							for k := range 9 {
								want[c][k] += l*back[k]*dom + front*l*fr[k]*dom
							}
						}
					}
				}
				for c := range 3 {
					for k := range 9 {
						if !near(float64(got[c][k]), want[c][k], 1e-5+1e-5*math.Abs(want[c][k])) {
							t.Errorf("L[%d][%d] = %v, want %v", c, k, got[c][k], want[c][k])
						}
					}
				}
			})
		}
	}
	t.Run("constant over the sphere", func(t *testing.T) {
		const L = 0.8
		w, h := 128, 64
		src := img(t, d, w, h, 3, nil)
		d.Fill(src, []float32{L, L, L})
		got, err := d.SHProjectEnv(src, 1)
		if err != nil {
			t.Fatal(err)
		}
		// L00 = L * Y00 * 4 pi = L * sqrt(4 pi); the others vanish.
		want := L * math.Sqrt(4*math.Pi)
		if !near(float64(got[0][0]), want, 1e-3*want) {
			t.Errorf("L00 = %v, want %v", got[0][0], want)
		}
		for k := 1; k < 9; k++ {
			if math.Abs(float64(got[1][k])) > 2e-3 {
				t.Errorf("L[%d] = %v, want 0", k, got[1][k])
			}
		}
	})
}

func TestSHEval(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(42)
	for _, sz := range testSizes {
		for _, ch := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/%dch", sizeName(sz), ch), func(t *testing.T) {
				w, h := sz[0], sz[1]
				n := w * h
				nrm := randNormals(rng, n, false)
				coeffs := make([]SH9, ch)
				for c := range coeffs {
					for k := range 9 {
						coeffs[c][k] = float32(rng.Float64()*2 - 1)
					}
				}
				out := img(t, d, w, h, ch, nil)
				if err := d.SHEval(out, img(t, d, w, h, 3, nrm), coeffs); err != nil {
					t.Fatal(err)
				}
				want := make([]float64, ch*n)
				for i := range n {
					b := refSH(float64(nrm[i]), float64(nrm[n+i]), float64(nrm[2*n+i]))
					for c := range ch {
						for k := range 9 {
							want[c*n+i] += float64(coeffs[c][k]) * b[k]
						}
					}
				}
				closeAll(t, "sheval", pixels(t, d, out), want, 1e-5, 1e-5)
			})
		}
	}
	t.Run("wrong coefficient count", func(t *testing.T) {
		if err := d.SHEval(img(t, d, 2, 2, 3, nil), img(t, d, 2, 2, 3, nil), make([]SH9, 1)); err == nil {
			t.Fatal("no error")
		}
	})
}

// solve9 solves the 9x9 system a x = b by Gaussian elimination with
// partial pivoting.
func solve9(a [81]float64, b [9]float64) [9]float64 {
	for col := range 9 {
		p := col
		for r := col + 1; r < 9; r++ {
			if math.Abs(a[r*9+col]) > math.Abs(a[p*9+col]) {
				p = r
			}
		}
		for k := range 9 {
			a[col*9+k], a[p*9+k] = a[p*9+k], a[col*9+k]
		}
		b[col], b[p] = b[p], b[col]
		for r := col + 1; r < 9; r++ {
			f := a[r*9+col] / a[col*9+col]
			for k := col; k < 9; k++ {
				a[r*9+k] -= f * a[col*9+k]
			}
			b[r] -= f * b[col]
		}
	}
	var x [9]float64
	for r := 8; r >= 0; r-- {
		s := b[r]
		for k := r + 1; k < 9; k++ {
			s -= a[r*9+k] * x[k]
		}
		x[r] = s / a[r*9+r]
	}
	return x
}

func TestSHNormalEquationsAndFit(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(43)
	for _, sz := range [][2]int{{1, 1}, {7, 5}, {13, 1}, {40, 30}} {
		for _, masked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/masked=%v", sizeName(sz), masked), func(t *testing.T) {
				w, h := sz[0], sz[1]
				n := w * h
				nrm := randNormals(rng, n, false)
				var truth [9]float64
				for k := range truth {
					truth[k] = rng.Float64()*2 - 1
				}
				sig := make([]float32, n)
				for i := range n {
					b := refSH(float64(nrm[i]), float64(nrm[n+i]), float64(nrm[2*n+i]))
					for k := range 9 {
						sig[i] += float32(truth[k] * b[k])
					}
				}
				mk := randAlpha(rng, n)
				var mask Image
				if masked {
					mask = img(t, d, w, h, 1, mk)
				}
				ata, atb, err := d.SHNormalEquations(img(t, d, w, h, 1, sig), img(t, d, w, h, 3, nrm), mask)
				if err != nil {
					t.Fatal(err)
				}
				var wa [81]float64
				var wb [9]float64
				for i := range n {
					wt := 1.0
					if masked {
						wt = float64(mk[i])
					}
					b := refSH(float64(nrm[i]), float64(nrm[n+i]), float64(nrm[2*n+i]))
					for r := range 9 {
						for c := range 9 {
							wa[r*9+c] += wt * b[r] * b[c]
						}
						wb[r] += wt * b[r] * float64(sig[i])
					}
				}
				for k := range 81 {
					if !near(ata[k], wa[k], 1e-9*(1+math.Abs(wa[k]))) {
						t.Fatalf("ata[%d] = %v, want %v", k, ata[k], wa[k])
					}
				}
				for k := range 9 {
					if !near(atb[k], wb[k], 1e-9*(1+math.Abs(wb[k]))) {
						t.Fatalf("atb[%d] = %v, want %v", k, atb[k], wb[k])
					}
				}
				if n < 100 {
					return // too few samples for a well-posed fit
				}
				x := solve9(ata, atb)
				for k := range 9 {
					if !near(x[k], truth[k], 1e-4) {
						t.Errorf("fitted c[%d] = %v, want %v", k, x[k], truth[k])
					}
				}
			})
		}
	}
}

// refLab converts linear RGB to lαβ literally (float64).
func refLab(r, g, b float64) [3]float64 {
	l := math.Log(math.Max(0.3811*r+0.5783*g+0.0402*b, 1e-4))
	m := math.Log(math.Max(0.1967*r+0.7244*g+0.0782*b, 1e-4))
	s := math.Log(math.Max(0.0241*r+0.1288*g+0.8444*b, 1e-4))
	return [3]float64{
		(l + m + s) / math.Sqrt(3),
		(l + m - 2*s) / math.Sqrt(6),
		(l - m) / math.Sqrt(2),
	}
}

// refLabInv converts lαβ back to linear RGB literally.
func refLabInv(v [3]float64) [3]float64 {
	a, b, c := v[0]/math.Sqrt(3), v[1]/math.Sqrt(6), v[2]/math.Sqrt(2)
	L, M, S := math.Exp(a+b+c), math.Exp(a+b-c), math.Exp(a-2*b)
	inv := refInv3([9]float64{0.3811, 0.5783, 0.0402, 0.1967, 0.7244, 0.0782, 0.0241, 0.1288, 0.8444})
	return [3]float64{
		inv[0]*L + inv[1]*M + inv[2]*S,
		inv[3]*L + inv[4]*M + inv[5]*S,
		inv[6]*L + inv[7]*M + inv[8]*S,
	}
}

func refLabStats(src, mk []float32, n int) LabStats {
	var st LabStats
	var s1 [3]float64
	for i := range n {
		wt := 1.0
		if mk != nil {
			wt = float64(mk[i])
		}
		v := refLab(float64(src[i]), float64(src[n+i]), float64(src[2*n+i]))
		st.Weight += wt
		for c := range 3 {
			s1[c] += wt * v[c]
		}
	}
	for c := range 3 {
		st.Mean[c] = s1[c] / st.Weight
	}
	for i := range n {
		wt := 1.0
		if mk != nil {
			wt = float64(mk[i])
		}
		v := refLab(float64(src[i]), float64(src[n+i]), float64(src[2*n+i]))
		for c := range 3 {
			st.Std[c] += wt * (v[c] - st.Mean[c]) * (v[c] - st.Mean[c])
		}
	}
	for c := range 3 {
		st.Std[c] = math.Sqrt(st.Std[c] / st.Weight)
	}
	return st
}

func labNear(t *testing.T, got, want LabStats, tol float64) {
	t.Helper()
	for c := range 3 {
		if !near(got.Mean[c], want.Mean[c], tol) || !near(got.Std[c], want.Std[c], tol) {
			t.Errorf("channel %d: mean %v std %v, want %v %v", c, got.Mean[c], got.Std[c], want.Mean[c], want.Std[c])
		}
	}
	if !near(got.Weight, want.Weight, 1e-9*want.Weight) {
		t.Errorf("weight %v, want %v", got.Weight, want.Weight)
	}
}

func TestLabStats(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(44)
	for _, sz := range testSizes {
		for _, masked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/masked=%v", sizeName(sz), masked), func(t *testing.T) {
				w, h := sz[0], sz[1]
				n := w * h
				src := randVals(rng, 3*n, -0.01, 1.2) // includes values below the floor
				var mk []float32
				var mask Image
				if masked {
					mk = randAlpha(rng, n)
					mk[0] = 0.5
					mask = img(t, d, w, h, 1, mk)
				}
				got, err := d.LabStats(img(t, d, w, h, 3, src), mask)
				if err != nil {
					t.Fatal(err)
				}
				labNear(t, got, refLabStats(src, mk, n), 1e-7)
			})
		}
	}
}

func TestLabTransfer(t *testing.T) {
	d := NewCPU(2)
	rng := newRNG(45)
	to := LabStats{Mean: [3]float64{-1.2, 0.05, -0.03}, Std: [3]float64{0.4, 0.08, 0.02}, Weight: 1}
	for _, sz := range testSizes {
		for _, masked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/masked=%v", sizeName(sz), masked), func(t *testing.T) {
				w, h := sz[0], sz[1]
				n := w * h
				src := randVals(rng, 3*n, 0.02, 1)
				from := refLabStats(src, nil, n)
				if n == 1 {
					from.Std = [3]float64{0, 0.1, 0} // zero std keeps the scale
				}
				var mk []float32
				var mask Image
				if masked {
					mk = randAlpha(rng, n)
					mask = img(t, d, w, h, 1, mk)
				}
				const strength = 0.8
				out := img(t, d, w, h, 3, nil)
				if err := d.LabTransfer(out, img(t, d, w, h, 3, src), mask, from, to, strength); err != nil {
					t.Fatal(err)
				}
				want := make([]float64, 3*n)
				for i := range n {
					k := strength
					if masked {
						k *= float64(mk[i])
					}
					v := refLab(float64(src[i]), float64(src[n+i]), float64(src[2*n+i]))
					var o [3]float64
					for c := range 3 {
						s := 1.0
						if from.Std[c] != 0 {
							s = to.Std[c] / from.Std[c]
						}
						moved := (v[c]-from.Mean[c])*s + to.Mean[c]
						o[c] = v[c] + k*(moved-v[c])
					}
					rgb := refLabInv(o)
					for c := range 3 {
						want[c*n+i] = rgb[c]
					}
				}
				closeAll(t, "labtransfer", pixels(t, d, out), want, 2e-6, 1e-5)
			})
		}
	}
	t.Run("from == to is the identity", func(t *testing.T) {
		w, h := 17, 9
		src := randVals(rng, 3*w*h, 0, 1)
		src[0], src[w*h], src[2*w*h] = 0, 0, 0 // black: below the floor
		S := img(t, d, w, h, 3, src)
		st, err := d.LabStats(S, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := img(t, d, w, h, 3, nil)
		if err := d.LabTransfer(out, S, nil, st, st, 1); err != nil {
			t.Fatal(err)
		}
		closeAll(t, "identity", pixels(t, d, out), to64(src), 1e-6, 1e-6)
	})
	t.Run("result has the target statistics", func(t *testing.T) {
		w, h := 40, 30
		n := w * h
		src := randVals(rng, 3*n, 0.05, 1)
		S := img(t, d, w, h, 3, src)
		from, err := d.LabStats(S, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := img(t, d, w, h, 3, nil)
		if err := d.LabTransfer(out, S, nil, from, to, 1); err != nil {
			t.Fatal(err)
		}
		got, err := d.LabStats(out, nil)
		if err != nil {
			t.Fatal(err)
		}
		labNear(t, got, LabStats{Mean: to.Mean, Std: to.Std, Weight: float64(n)}, 1e-4)
	})
}

// refInv3 inverts a row-major 3x3 matrix by cofactors.
func refInv3(m [9]float64) [9]float64 {
	a, b, c := m[0], m[1], m[2]
	d, e, f := m[3], m[4], m[5]
	g, h, i := m[6], m[7], m[8]
	A := e*i - f*h
	B := -(d*i - f*g)
	C := d*h - e*g
	det := a*A + b*B + c*C
	return [9]float64{
		A / det, -(b*i - c*h) / det, (b*f - c*e) / det,
		B / det, (a*i - c*g) / det, -(a*f - c*d) / det,
		C / det, -(a*h - b*g) / det, (a*e - b*d) / det,
	}
}
