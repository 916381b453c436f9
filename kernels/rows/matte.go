package rows

import "math"

// Bilinear samples plane p (w x h) at (px, py), clamped to the image.
func Bilinear(p []float32, w, h int, px, py float32) float32 {
	px = min(max(px, 0), float32(w-1))
	py = min(max(py, 0), float32(h-1))
	x0, y0 := int(px), int(py)
	fx, fy := px-float32(x0), py-float32(y0)
	x1, y1 := min(x0+1, w-1), min(y0+1, h-1)
	a, b := p[y0*w+x0], p[y0*w+x1]
	c, e := p[y1*w+x0], p[y1*w+x1]
	return (1-fy)*((1-fx)*a+fx*b) + fy*((1-fx)*c+fx*e)
}

// ShiftPix is Shift's (and Warp's) bilinear formula for one pixel: the
// Taps i0, i1 (weight tx on i1) of the rows r0 and r1 (weight ty on r1).
func ShiftPix(r0, r1 []float32, i0, i1 int, tx, ty float32) float32 {
	a, b := r0[i0], r0[i1]
	c, e := r1[i0], r1[i1]
	return (1-ty)*((1-tx)*a+tx*b) + ty*((1-tx)*c+tx*e)
}

// ShiftBlock* mark ShiftBlocks' blocks that are not 8 consecutive
// columns: one column (ShiftBlockOne: the same taps and weight 8 times,
// past a border) or mixed (ShiftBlockMixed: a border or a rounding step
// inside the block).
const (
	ShiftBlockMixed int32 = -1
	ShiftBlockOne   int32 = -2
)

// ShiftBlocks returns, for each whole block of 8 columns, the first
// source column of its taps when they are 8 consecutive columns each
// with its right neighbour (x0[x+j] = x0[x]+j, x1 = x0+1: no clamp at a
// border and no step of 0 or 2 where float32 rounds the positions),
// ShiftBlockOne when its 8 taps and weights fx are one column's (clamped
// past a border), else ShiftBlockMixed: how Shift's vector loop does
// each block.
func ShiftBlocks(x0, x1 []int, fx []float32) []int32 {
	const n = 8
	b := make([]int32, len(x0)/n)
	for k := range b {
		x := k * n
		b[k] = int32(x0[x])
		for j := range n {
			if x0[x+j] != x0[x]+j || x1[x+j] != x0[x+j]+1 {
				b[k] = ShiftBlockMixed
				break
			}
		}
		if b[k] == ShiftBlockMixed {
			b[k] = ShiftBlockOne
			for j := range n {
				if x0[x+j] != x0[x] || x1[x+j] != x1[x] || math.Float32bits(fx[x+j]) != math.Float32bits(fx[x]) {
					b[k] = ShiftBlockMixed
					break
				}
			}
		}
	}
	return b
}

// Shift is the sampling plan of Shift (dx, dy) over a w x h image:
// each axis's taps and weights and the vector blocks of the columns.
type Shift struct {
	X0, X1, Y0, Y1 []int
	FX, FY         []float32
	Blocks         []int32
	// Whole is set when dx and dy are whole numbers: every weight is 0,
	// so each value is r0[X0[x]] of row Y0[y] exactly (ShiftPix with
	// tx = ty = 0) and Row copies them; DX, DY are dx, dy.
	Whole  bool
	DX, DY int
}

// NewShift returns Shift's plan for a w x h image moved by (dx, dy).
func NewShift(w, h int, dx, dy float32) *Shift {
	s := &Shift{}
	s.X0, s.X1, s.FX = ShiftTaps(w, dx)
	s.Y0, s.Y1, s.FY = ShiftTaps(h, dy)
	s.Blocks = ShiftBlocks(s.X0, s.X1, s.FX)
	if dx == float32(math.Trunc(float64(dx))) && dy == float32(math.Trunc(float64(dy))) &&
		math.Abs(float64(dx)) < 1<<24 && math.Abs(float64(dy)) < 1<<24 {
		s.Whole, s.DX, s.DY = true, int(dx), int(dy)
	}
	return s
}

// Row writes the columns [xl, xr) of row y of one plane p (width
// len(row)) shifted: each value bit for bit Shift's (ShiftPix, or
// ShiftRowSIMD over the whole blocks of 8 inside [xl, xr)).
func (s *Shift) Row(row, p []float32, y, xl, xr int) {
	w := len(row)
	r0, r1, ty := p[s.Y0[y]*w:][:w], p[s.Y1[y]*w:][:w], s.FY[y]
	if s.Whole {
		// The columns whose source x+DX is inside the row are one copy;
		// the clamped ones repeat the edge's value.
		a := min(max(xl, -s.DX), xr)
		b := max(min(xr, w-s.DX), a)
		for x := xl; x < a; x++ {
			row[x] = r0[s.X0[x]]
		}
		if a < b {
			copy(row[a:b], r0[a+s.DX:b+s.DX])
		}
		for x := b; x < xr; x++ {
			row[x] = r0[s.X0[x]]
		}
		return
	}
	x := xl
	if kb, ke := (xl+7)/8, xr/8; kb < ke {
		for ; x < kb*8; x++ {
			row[x] = ShiftPix(r0, r1, s.X0[x], s.X1[x], s.FX[x], ty)
		}
		x += ShiftRowSIMD(row[x:], r0, r1, s.FX[x:], s.Blocks[kb:ke], s.X0[x:], s.X1[x:], ty)
	}
	for ; x < xr; x++ {
		row[x] = ShiftPix(r0, r1, s.X0[x], s.X1[x], s.FX[x], ty)
	}
}

// ShiftTaps are bilinear's taps along one axis of n samples for the
// positions i + off (float32, clamped to [0, n-1]).
func ShiftTaps(n int, off float32) (i0, i1 []int, f []float32) {
	i0, i1, f = make([]int, n), make([]int, n), make([]float32, n)
	for i := range n {
		p := min(max(float32(i)+off, 0), float32(n-1))
		k := int(p)
		i0[i], i1[i], f[i] = k, min(k+1, n-1), p-float32(k)
	}
	return i0, i1, f
}

// ColourCell is the histogram cell of an RGB value (see
// MatteOps.ColourHistogram): each channel, clamped to [0,1], in bins
// equal steps.
func ColourCell(r, g, b float32, bins int) int {
	fb := float32(bins)
	q := func(v float32) int {
		v = min(max(v, 0), 1)
		return min(bins-1, int(v*fb))
	}
	return (q(r)*bins+q(g))*bins + q(b)
}

// Logit is log(p / (1-p)) with p clamped to [1e-3, 1-1e-3].
func Logit(p float64) float64 {
	p = min(max(p, 1e-3), 1-1e-3)
	return math.Log(p / (1 - p))
}
