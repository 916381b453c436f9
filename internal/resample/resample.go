// Package resample resamples planes of float32 values on the host, written
// once for the packages that cannot share one another's code: infer (the
// network's input and output) and matte (the network's map of a still at
// the output size) must not import each other.
package resample

// Bilinear resamples one plane src (sw x sh) into dst (dw x dh) with
// pixel-centre aligned bilinear interpolation; when shrinking by more than
// 2x it first averages boxes so that no source pixel is skipped.
func Bilinear(dst []float32, dw, dh int, src []float32, sw, sh int) {
	for sw >= 2*dw && sh >= 2*dh && sw >= 2 && sh >= 2 {
		hw, hh := sw/2, sh/2
		half := make([]float32, hw*hh)
		for y := 0; y < hh; y++ {
			for x := 0; x < hw; x++ {
				i := 2*y*sw + 2*x
				half[y*hw+x] = (src[i] + src[i+1] + src[i+sw] + src[i+sw+1]) / 4
			}
		}
		src, sw, sh = half, hw, hh
	}
	fx := float32(sw) / float32(dw)
	fy := float32(sh) / float32(dh)
	for y := 0; y < dh; y++ {
		sy := (float32(y)+0.5)*fy - 0.5
		y0 := int(sy)
		if sy < 0 {
			y0, sy = 0, 0
		}
		y1 := min(y0+1, sh-1)
		ty := sy - float32(y0)
		r0, r1 := src[y0*sw:(y0+1)*sw], src[y1*sw:(y1+1)*sw]
		row := dst[y*dw : (y+1)*dw]
		for x := range row {
			sx := (float32(x)+0.5)*fx - 0.5
			x0 := int(sx)
			if sx < 0 {
				x0, sx = 0, 0
			}
			x1 := min(x0+1, sw-1)
			tx := sx - float32(x0)
			a := r0[x0] + (r0[x1]-r0[x0])*tx
			b := r1[x0] + (r1[x1]-r1[x0])*tx
			row[x] = a + (b-a)*ty
		}
	}
}
