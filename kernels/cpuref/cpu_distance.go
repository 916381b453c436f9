package cpuref

import (
	"math"
	"sync/atomic"

	"github.com/vfxrender/vfx/kernels/rows"
)

// DistanceTransform writes the exact Euclidean distance from each pixel
// with mask >= threshold to the nearest pixel with mask < threshold (see
// Ops.DistanceTransform). Pass 1 computes, per column, the distance to the
// nearest background pixel in that column by two linear scans (parallel
// over column blocks, row-major memory order); pass 2 is the
// Felzenszwalb-Huttenlocher lower envelope of parabolas along each row
// (parallel over row bands). All arithmetic on squared distances is exact.
// dst may equal mask.
func (d *CPU) DistanceTransform(dst, mask Image, threshold float32) error {
	const op = "DistanceTransform"
	o, s, err := pair(op, dst, mask)
	if err != nil {
		return err
	}
	if err := wantChannels(op, "mask", s, 1); err != nil {
		return err
	}
	if err := wantChannels(op, "dst", o, 1); err != nil {
		return err
	}
	w, h := o.w, o.h
	M, D := s.plane(0), o.plane(0)
	inf := float32(math.Inf(1))
	var anyBg atomic.Bool
	const colBlock = 256
	d.parallel(w, colBlock, func(_, x0, x1 int) {
		bg := false
		// Downward scan: distance to the nearest background at or above.
		for y := range h {
			mr := M[y*w:][x0:x1]
			dr := D[y*w:][x0:x1][:len(mr)]
			if y == 0 {
				for i, v := range mr {
					if v >= threshold {
						dr[i] = inf
					} else {
						dr[i] = 0
						bg = true
					}
				}
				continue
			}
			pr := D[(y-1)*w:][x0:x1][:len(mr)]
			for i, v := range mr {
				if v >= threshold {
					dr[i] = pr[i] + 1
				} else {
					dr[i] = 0
					bg = true
				}
			}
		}
		// Upward scan, then square.
		for y := h - 2; y >= 0; y-- {
			dr := D[y*w:][x0:x1]
			nr := D[(y+1)*w:][x0:x1][:len(dr)]
			for i := range dr {
				dr[i] = min(dr[i], nr[i]+1)
			}
		}
		for y := range h {
			dr := D[y*w:][x0:x1]
			for i, v := range dr {
				dr[i] = v * v
			}
		}
		if bg {
			anyBg.Store(true)
		}
	})
	if !anyBg.Load() {
		v := float32(w + h)
		for i := range D {
			D[i] = v
		}
		return nil
	}
	type scratch struct {
		f, z []float64
		v    []int32
	}
	scr := make([]*scratch, d.workers)
	d.parallel(h, BandRows(w), func(wk, y0, y1 int) {
		sc := scr[wk]
		if sc == nil {
			sc = &scratch{f: make([]float64, w), z: make([]float64, w+1), v: make([]int32, w)}
			scr[wk] = sc
		}
		for y := y0; y < y1; y++ {
			row := D[y*w:][:w]
			if rows.AllZero(row) {
				continue // background only: every distance is 0 already
			}
			rows.EDTRow(row, sc.f, sc.z, sc.v)
		}
	})
	return nil
}

// NormalsFromMatte writes unit normals of the inflated surface
// h = radius*sqrt(1-(1-min(dist/radius,1))^2) + detailStrength*detail by
// clamped central differences, n ~ (-dh/dx, +dh/dy, 1) with y the row
// index (see Ops.NormalsFromMatte); pixels with dist <= 0 get (0, 0, 1).
// radius <= 0 drops the inflation term. dst is 3 channels; dist and
// detail are 1 channel.
func (d *CPU) NormalsFromMatte(dst, dist, detail Image, radius, detailStrength float32) error {
	const op = "NormalsFromMatte"
	o, ds, err := pair(op, dst, dist)
	if err != nil {
		return err
	}
	dt, err := optImg(op, "detail", detail)
	if err != nil {
		return err
	}
	if err := wantChannels(op, "dist", ds, 1); err != nil {
		return err
	}
	if err := wantChannels(op, "dst", o, 3); err != nil {
		return err
	}
	if err := wantChannels(op, "detail", dt, 1); err != nil {
		return err
	}
	if err := sameSize(op, o, []string{"detail"}, dt); err != nil {
		return err
	}
	w, h := o.w, o.h
	n := w * h
	H := d.scratch(n)
	defer d.release(H)
	DS := ds.plane(0)
	var DT []float32
	if dt != nil {
		DT = dt.plane(0)
	}
	band := BandRows(w)
	d.parallel(h, band, func(_, y0, y1 int) {
		var dtb []float32
		if DT != nil {
			dtb = DT[y0*w : y1*w]
		}
		v := y0*w + rows.HeightRowSIMD(H[y0*w:y1*w], DS[y0*w:y1*w], dtb, radius, detailStrength)
		for i := v; i < y1*w; i++ {
			var hv float32
			if radius > 0 {
				t := min(DS[i]/radius, 1)
				u := 1 - t
				hv = radius * float32(math.Sqrt(float64(max(1-u*u, 0))))
			}
			if DT != nil {
				hv += detailStrength * DT[i]
			}
			H[i] = hv
		}
	})
	NX, NY, NZ := o.plane(0), o.plane(1), o.plane(2)
	d.parallel(h, band, func(_, y0, y1 int) {
		for y := y0; y < y1; y++ {
			hr := H[y*w:][:w]
			up := H[max(y-1, 0)*w:][:w]
			dn := H[min(y+1, h-1)*w:][:w]
			dr := DS[y*w:][:w]
			nx, ny, nz := NX[y*w:][:w], NY[y*w:][:w], NZ[y*w:][:w]
			// The interior in vectors, then the rest (every column without
			// AVX2).
			xe := rows.NormalRowSIMD(nx, ny, nz, hr, up, dn, dr)
			for x := range hr {
				if x >= 1 && x < xe {
					continue
				}
				if !(dr[x] > 0) {
					nx[x], ny[x], nz[x] = 0, 0, 1
					continue
				}
				gx := (hr[min(x+1, w-1)] - hr[max(x-1, 0)]) * 0.5
				gy := (dn[x] - up[x]) * 0.5
				inv := 1 / float32(math.Sqrt(float64(gx*gx+gy*gy+1)))
				nx[x], ny[x], nz[x] = -gx*inv, gy*inv, inv
			}
		}
	})
	return nil
}
