//go:build !(goexperiment.simd && amd64)

package rows

// Without GOEXPERIMENT=simd (or off amd64) the vector loops of
// simd_amd64.go do nothing and the scalar loops do all the work.

func ratioRowSIMD(q, s, en, eo, al []float32, eps, maxG float32) int         { return 0 }
func shEvalSIMD(outs [][]float32, nx, ny, nz []float32, cf [][9]float32) int { return 0 }
func scaleRowSIMD(o, c []float32, k float32) int                             { return 0 }
func sumTapsSIMD(o []float32, src [][]float32, k []float32) int              { return 0 }
func gray8RowSIMD(o []float32, s []byte) int                                 { return 0 }
func areaYUV4RowSIMD(ro, gr, br []float32, yr *[4][]byte, ur0, vr0, ur1, vr1 []byte, t *yuvTab) int {
	return 0
}
func yuvRowSIMD(ro, gr, br []float32, yr, ur, vr []byte, t *yuvTab) int { return 0 }
func yuvOutRowsSIMD(k *YUVOut, ya, yb, uo, vo []byte, ra, ga, ba, rb, gb, bb []float32) int {
	return 0
}
func areaGray4RowSIMD(o []float32, r0, r1, r2, r3 []byte) int              { return 0 }
func pairRowSIMD(o, a, b []float32, ki float32) int                        { return 0 }
func pair2RowSIMD(o, a, b, c, e []float32, ki, kj float32) int             { return 0 }
func lerpRowSIMD(o, a, b []float32, w0, w1 float32) int                    { return 0 }
func taps4RowSIMD(t, r0, r1, r2, r3 []float32, w0, w1, w2, w3 float32) int { return 0 }

func gainRowsSIMD(kind int, q, s, g0, g1 []float32, w0, w1, maxV float32, al, b, wf, bb []float32) int {
	return 0
}
func lookRowSIMD(q, s, g0, g1 []float32, w0, w1, maxV float32, al, b, fm0, fm1, bm0, bm1, sh, wf, bb []float32, k float32) int {
	return 0
}
func grainRowSIMD(q0, q1, q2, al, nv []float32, amt, maxV float32) int     { return 0 }
func hlerpSIMD(o, r []float32, i0, i1 []int32, w0, w1 []float32) int       { return 0 }
func EqPrefixSIMD(s []float32, v float32, want bool) int                   { return 0 }
func shadeRowSIMD(q, b, d []float32) int                                   { return 0 }
func wrapFactorSIMD(wf, al, ab []float32, wrap float32) int                { return 0 }
func HeightRowSIMD(H, D, DT []float32, radius, detailStrength float32) int { return 0 }
func NormalRowSIMD(nx, ny, nz, hr, up, dn, dr []float32) int               { return 1 }
func SHNormalSIMD(acc *[54]float64, s, nx, ny, nz, m []float32) bool       { return false }
func ShiftRowSIMD(row, r0, r1, fx []float32, blocks []int32, x0, x1 []int, ty float32) int {
	return 0
}

func dotsSIMD(out, q, keys []float32) bool                                 { return false }
func dotsBlockSIMD(out []float32, ldo int, qs, keys []float32, c int) bool { return false }
func expScaledSIMD(out []float64, s []float32, m, tau, cut float32) int    { return 0 }
