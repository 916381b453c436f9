package cpuref

import (
	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels/rows"
)

// PlateCodes is the new background converted once into the output's
// format, for GainCompositeLookFrame to copy where the output is the
// background exactly (zero matte, no shadow) instead of converting it
// again (kernels.PlateCodes is this type).
//
// Frame is the Download of bg into a frame of the output's format, size,
// colour space and range. When the plate is moved by a whole number of
// pixels (CompositeLook.PlateX, PlateY integers), the moved background's
// luma codes are Frame's at the moved position; its chroma, made from
// 2x2 blocks, is Frame's for an even offset and otherwise that of bg's
// blocks starting at an odd column, an odd row or both: the CPU backend
// makes those three chroma planes from bg on the first frame that needs
// them (3/4 of a byte a pixel in all) and keeps them here, so one
// PlateCodes serves one bg: make a new one when bg changes. A fractional
// offset converts every pixel, as without codes.
type PlateCodes struct {
	Frame *frame.HostFrame

	odd    [3][2][]byte // [parity-1][U, V], (w+1)/2 x (h+1)/2 each
	oddSrc *cpuImage    // the bg they were made from
}

// oddChroma returns the chroma planes (U, V and their stride) of bg's 2x2
// blocks starting at column parity px and row parity py, the pixels past
// the last column or row clamped as Shift clamps them: the chroma of the
// Download of Shift(bg, px, py). Parity (0, 0) is pc.Frame's own.
func (d *CPU) oddChroma(pc *PlateCodes, bg *cpuImage, px, py int) (u, v []byte, stride int) {
	if px == 0 && py == 0 {
		return pc.Frame.Planes[1], pc.Frame.Planes[2], pc.Frame.Strides[1]
	}
	w, h := bg.w, bg.h
	cw, ch := (w+1)/2, (h+1)/2
	if pc.oddSrc != bg {
		pc.odd, pc.oddSrc = [3][2][]byte{}, bg
	}
	p := px + 2*py - 1
	if pc.odd[p][0] == nil {
		uo, vo := make([]byte, cw*ch), make([]byte, cw*ch)
		csi, fri := rows.FullRangeIdx(pc.Frame)
		k := &d.lut.YUVOut[csi][fri]
		ob := &d.lut.OETFU
		d.parallel(ch, BandRows(w), func(_, j0, j1 int) {
			buf := make([]float32, 6*w)
			yScratch := make([]byte, 2*w)
			var q [2][3][]float32
			for j := j0; j < j1; j++ {
				for r := range 2 {
					y := min(2*j+py+r, h-1)
					for c := range 3 {
						row := bg.plane(c)[y*w:][:w]
						dst := buf[(r*3+c)*w:][:w]
						copy(dst, row[min(px, w-1):])
						for x := w - px; x < w; x++ {
							dst[x] = row[w-1]
						}
						q[r][c] = dst
					}
				}
				rows.YUVOutRows(k, ob, yScratch[:w], yScratch[w:], uo[j*cw:][:cw], vo[j*cw:][:cw],
					q[0][0], q[0][1], q[0][2], q[1][0], q[1][1], q[1][2])
			}
		})
		pc.odd[p] = [2][]byte{uo, vo}
	}
	return pc.odd[p][0], pc.odd[p][1], cw
}

// edgeZero reports whether a row of the Gray8 matte a starts or ends
// with a zero code: only such a row can have background to copy (the
// composite converts each row's nonzero span).
func edgeZero(a *frame.HostFrame) bool {
	p, s, w := a.Planes[0], a.Strides[0], a.Width
	for y := range a.Height {
		if p[y*s] == 0 || p[y*s+w-1] == 0 {
			return true
		}
	}
	return false
}
