package cpuref

import (
	"fmt"
	"math"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels/rows"
)

// Per-pixel operations of the CPU device. They are pointwise, so they also
// work in place (dst equal to an input), although the contract does not
// promise it.

// Fill sets every pixel of channel c to v[c]; len(v) must equal dst's
// channel count (else ErrShape).
func (d *CPU) Fill(dst Image, v []float32) error {
	const op = "Fill"
	m, err := cpuImg(op, "dst", dst)
	if err != nil {
		return err
	}
	if len(v) != m.c {
		return shapeErr(op, "%d values for %d channels", len(v), m.c)
	}
	w := m.w
	d.parallel(m.h, BandRows(w), func(_, y0, y1 int) {
		for c := range m.c {
			s := m.plane(c)[y0*w : y1*w]
			val := v[c]
			for i := range s {
				s[i] = val
			}
		}
	})
	return nil
}

// Copy copies src into dst; shapes must be equal (else ErrShape).
func (d *CPU) Copy(dst, src Image) error {
	const op = "Copy"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return shapeErr(op, "src %s, dst %s", dims(s), dims(o))
	}
	d.copyPix(o.pix, s.pix)
	return nil
}

// copyPix copies equal-length buffers in parallel.
func (d *CPU) copyPix(dst, src []float32) {
	const chunk = 1 << 17
	if len(dst) <= chunk {
		copy(dst, src)
		return
	}
	d.parallel(len(dst), chunk, func(_, lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
}

// pair resolves dst and src and checks that their sizes are equal.
func pair(op string, dst, src Image) (*cpuImage, *cpuImage, error) {
	o, err := cpuImg(op, "dst", dst)
	if err != nil {
		return nil, nil, err
	}
	s, err := cpuImg(op, "src", src)
	if err != nil {
		return nil, nil, err
	}
	if s.w != o.w || s.h != o.h {
		return nil, nil, shapeErr(op, "src %s, dst %s", dims(s), dims(o))
	}
	return o, s, nil
}

// Luma writes 0.2126 R + 0.7152 G + 0.0722 B of the 3-channel src into the
// 1-channel dst.
func (d *CPU) Luma(dst, src Image) error {
	const op = "Luma"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	if err := wantChannels(op, "src", s, 3); err != nil {
		return err
	}
	if err := wantChannels(op, "dst", o, 1); err != nil {
		return err
	}
	w := o.w
	R, G, B := s.plane(0), s.plane(1), s.plane(2)
	out := o.plane(0)
	d.parallel(o.h, BandRows(w), func(_, y0, y1 int) {
		lo, hi := y0*w, y1*w
		r, g, b, q := R[lo:hi], G[lo:hi], B[lo:hi], out[lo:hi]
		g, b = g[:len(r)], b[:len(r)]
		q = q[:len(r)]
		for i := range r {
			q[i] = 0.2126*r[i] + 0.7152*g[i] + 0.0722*b[i]
		}
	})
	return nil
}

// Composite writes dst = a*fg + (1-a)*bg (see Ops.Composite). fg, bg and
// dst have equal shapes; alpha is 1 channel (nil = 1, then bg may be nil
// too).
func (d *CPU) Composite(dst, fg, bg, alpha Image) error {
	const op = "Composite"
	o, f, err := pair(op, dst, fg)
	if err != nil {
		return err
	}
	if f.c != o.c {
		return shapeErr(op, "fg %s, dst %s", dims(f), dims(o))
	}
	a, err := optImg(op, "alpha", alpha)
	if err != nil {
		return err
	}
	if a == nil {
		if b, err := optImg(op, "bg", bg); err != nil {
			return err
		} else if b != nil && (b.w != o.w || b.h != o.h || b.c != o.c) {
			return shapeErr(op, "bg %s, dst %s", dims(b), dims(o))
		}
		if f != o {
			d.copyPix(o.pix, f.pix)
		}
		return nil
	}
	b, err := cpuImg(op, "bg", bg)
	if err != nil {
		return err
	}
	if b.c != o.c {
		return shapeErr(op, "bg %s, dst %s", dims(b), dims(o))
	}
	if err := wantChannels(op, "alpha", a, 1); err != nil {
		return err
	}
	if err := sameSize(op, o, []string{"bg", "alpha"}, b, a); err != nil {
		return err
	}
	w := o.w
	A := a.plane(0)
	d.parallel(o.h, BandRows(w), func(_, y0, y1 int) {
		lo, hi := y0*w, y1*w
		al := A[lo:hi]
		for c := range o.c {
			fs := f.plane(c)[lo:hi][:len(al)]
			bs := b.plane(c)[lo:hi][:len(al)]
			q := o.plane(c)[lo:hi][:len(al)]
			for i, av := range al {
				q[i] = av*fs[i] + (1-av)*bs[i]
			}
		}
	})
	return nil
}

// LightWrap writes dst = comp + strength*a*(1-aBlur)*bgBlur (see
// Ops.LightWrap). comp, bgBlur and dst have equal shapes; alpha and
// alphaBlur are 1 channel.
func (d *CPU) LightWrap(dst, comp, bgBlur, alpha, alphaBlur Image, strength float32) error {
	const op = "LightWrap"
	o, s, err := pair(op, dst, comp)
	if err != nil {
		return err
	}
	bb, err := cpuImg(op, "bgBlur", bgBlur)
	if err != nil {
		return err
	}
	a, err := cpuImg(op, "alpha", alpha)
	if err != nil {
		return err
	}
	ab, err := cpuImg(op, "alphaBlur", alphaBlur)
	if err != nil {
		return err
	}
	if s.c != o.c || bb.c != o.c {
		return shapeErr(op, "comp %s, bgBlur %s, dst %s", dims(s), dims(bb), dims(o))
	}
	if err := wantChannels(op, "alpha", a, 1); err != nil {
		return err
	}
	if err := wantChannels(op, "alphaBlur", ab, 1); err != nil {
		return err
	}
	if err := sameSize(op, o, []string{"bgBlur", "alpha", "alphaBlur"}, bb, a, ab); err != nil {
		return err
	}
	w := o.w
	A, AB := a.plane(0), ab.plane(0)
	d.parallel(o.h, BandRows(w), func(wk, y0, y1 int) {
		lo, hi := y0*w, y1*w
		al := A[lo:hi]
		abl := AB[lo:hi][:len(al)]
		for c := range o.c {
			cs := s.plane(c)[lo:hi][:len(al)]
			bs := bb.plane(c)[lo:hi][:len(al)]
			q := o.plane(c)[lo:hi][:len(al)]
			for i, av := range al {
				q[i] = cs[i] + strength*av*(1-abl[i])*bs[i]
			}
		}
	})
	return nil
}

// RatioRelight writes dst = src*(1 + a*(g-1)) with
// g = clamp(eNew/max(eOld, eps), 0, maxGain) (see Ops.RatioRelight). A NaN
// ratio counts as 0.
func (d *CPU) RatioRelight(dst, src, eNew, eOld, alpha Image, eps, maxGain float32) error {
	const op = "RatioRelight"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	en, err := cpuImg(op, "eNew", eNew)
	if err != nil {
		return err
	}
	eo, err := cpuImg(op, "eOld", eOld)
	if err != nil {
		return err
	}
	a, err := optImg(op, "alpha", alpha)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return shapeErr(op, "src %s, dst %s", dims(s), dims(o))
	}
	if en.c != 1 && en.c != s.c {
		return shapeErr(op, "eNew has %d channels, src %d", en.c, s.c)
	}
	if eo.c != 1 && eo.c != en.c {
		return shapeErr(op, "eOld has %d channels, eNew %d", eo.c, en.c)
	}
	if err := wantChannels(op, "alpha", a, 1); err != nil {
		return err
	}
	if err := sameSize(op, o, []string{"eNew", "eOld", "alpha"}, en, eo, a); err != nil {
		return err
	}
	w := o.w
	d.parallel(o.h, BandRows(w), func(_, y0, y1 int) {
		lo, hi := y0*w, y1*w
		n := hi - lo
		var al []float32
		if a != nil {
			al = a.plane(0)[lo:hi][:n]
		}
		for c := range o.c {
			rows.RatioRow(o.plane(c)[lo:hi][:n], s.plane(c)[lo:hi][:n],
				en.plane(min(c, en.c-1))[lo:hi][:n], eo.plane(min(c, eo.c-1))[lo:hi][:n], al, eps, maxGain)
		}
	})
	return nil
}

// ResizeBilinear resamples src to dst's size with bilinear interpolation,
// pixel centres aligned, edges clamped (see Ops.ResizeBilinear): each
// source row is interpolated horizontally, then rows are blended.
func (d *CPU) ResizeBilinear(dst, src Image) error {
	const op = "ResizeBilinear"
	o, err := cpuImg(op, "dst", dst)
	if err != nil {
		return err
	}
	s, err := cpuImg(op, "src", src)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return shapeErr(op, "src %s, dst %s", dims(s), dims(o))
	}
	if o == s {
		return nil
	}
	if s.w == o.w && s.h == o.h {
		d.copyPix(o.pix, s.pix)
		return nil
	}
	xt, yt := d.bilinTab(o.w, s.w), d.bilinTab(o.h, s.h)
	sw, dw := s.w, o.w
	caches := make([]*rows.Hrows, d.workers)
	d.parallel(o.h, BandRows(dw), func(wk, y0, y1 int) {
		if caches[wk] == nil {
			caches[wk] = rows.NewHrows(dw)
		}
		rc := caches[wk]
		for c := range o.c {
			rc.Reset()
			sp := s.plane(c)
			dp := o.plane(c)
			for y := y0; y < y1; y++ {
				r0, r1 := rc.Pair(sp, sw, int(yt.I0[y]), int(yt.I1[y]), &xt)
				rows.Vlerp(dp[y*dw:][:dw], r0, r1, yt.W0[y], yt.W1[y])
			}
		}
	})
	return nil
}

// GainComposite is the fused finishing pass (see Ops.GainComposite). The
// gain and alphaBlur samples are bit-identical to ResizeBilinear's, and
// the arithmetic follows the separate clamp, Composite and LightWrap
// order. With alpha nil the light-wrap term is added (with a = 1) only
// when bgBlur and alphaBlurLow are both given; with alpha set, bg is
// required and the wrap term is skipped when bgBlur or alphaBlurLow is
// nil.
//
// With alpha set, pixels are processed in runs along each row: where
// a == 0 dst is a copy of bg (src, the gain, bgBlur and the wrap matte
// are not read), where a == 1 bg is not read. For finite inputs this is
// bit-identical to evaluating the formula everywhere.
func (d *CPU) GainComposite(dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, wrap, maxValue float32) error {
	return d.gainComposite("GainComposite", dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, CompositeLook{}, wrap, maxValue)
}

// GainCompositeLook is GainComposite with foreground estimation in the
// soft band and a shadow on the background (see Ops.GainCompositeLook).
func (d *CPU) GainCompositeLook(dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error {
	return d.gainComposite("GainCompositeLook", dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, look, wrap, maxValue)
}

func (d *CPU) gainComposite(op string, dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error {
	o, err := cpuImg(op, "dst", dst)
	if err != nil {
		return err
	}
	if err := wantChannels(op, "dst", o, 3); err != nil {
		return err
	}
	j, err := newCompositeJob(op, o.w, o.h, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, wrap, maxValue)
	if err != nil {
		return err
	}
	if err := j.setLook(d, op, look); err != nil {
		return err
	}
	w := o.w
	scr := make([]*compositeScratch, d.workers)
	band := BandRows(w)
	d.parallel(o.h, band, func(wk, y0, y1 int) {
		if scr[wk] == nil {
			scr[wk] = j.newScratch(band)
		}
		sc := scr[wk]
		j.begin(sc, y0, y1, j.alphaSpan)
		for y := y0; y < y1; y++ {
			lo := y * w
			j.row(sc, y, y0, j.srcRows(y), j.alphaRow(y), 0, w, [3][]float32{o.plane(0)[lo:][:w], o.plane(1)[lo:][:w], o.plane(2)[lo:][:w]})
		}
	})
	return nil
}

// GainCompositeDownload is GainComposite into a temporary image followed
// by Download of it into dst (see Ops.GainCompositeDownload), in one pass
// over two-row strips: the full-resolution float result is never
// written to memory. The output is bit-identical to the two-op chain.
func (d *CPU) GainCompositeDownload(dst *frame.HostFrame, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, wrap, maxValue float32) error {
	return d.gainCompositeDownload("GainCompositeDownload", dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, CompositeLook{}, wrap, maxValue)
}

// GainCompositeLookDownload is GainCompositeLook into a temporary image
// followed by Download (see Ops.GainCompositeLookDownload).
func (d *CPU) GainCompositeLookDownload(dst *frame.HostFrame, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error {
	return d.gainCompositeDownload("GainCompositeLookDownload", dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, look, wrap, maxValue)
}

// colourDst checks a download's destination: a valid YUV420P or RGB24
// frame.
func colourDst(op string, dst *frame.HostFrame) error {
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("kernels: cpu: %s: %w", op, err)
	}
	switch dst.Format {
	case frame.YUV420P, frame.RGB24:
	case frame.Gray8:
		return shapeErr(op, "3 channels into gray8")
	default:
		return fmt.Errorf("kernels: cpu: %s: unsupported format %v", op, dst.Format)
	}
	return nil
}

func (d *CPU) gainCompositeDownload(op string, dst *frame.HostFrame, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error {
	if err := colourDst(op, dst); err != nil {
		return err
	}
	w, h := dst.Width, dst.Height
	j, err := newCompositeJob(op, w, h, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, wrap, maxValue)
	if err != nil {
		return err
	}
	if err := j.setLook(d, op, look); err != nil {
		return err
	}
	type strip struct {
		sc  *compositeScratch
		pix []float32 // two rows of 3 channels: [c*2*w + r*w : ...]
	}
	band := BandRows(w)
	band += band & 1
	strips := make([]*strip, d.workers)
	yuv := dst.Format == frame.YUV420P
	csi, fri := rows.FullRangeIdx(dst)
	k := &d.lut.YUVOut[csi][fri]
	ob := &d.lut.OETFU
	cw := (w + 1) / 2
	d.parallel(h, band, func(wk, y0, y1 int) {
		st := strips[wk]
		if st == nil {
			st = &strip{sc: j.newScratch(band), pix: make([]float32, 6*w)}
			strips[wk] = st
		}
		j.begin(st.sc, y0, y1, j.alphaSpan)
		rowOf := func(r int) [3][]float32 {
			return [3][]float32{st.pix[(0+r)*w:][:w], st.pix[(2+r)*w:][:w], st.pix[(4+r)*w:][:w]}
		}
		if !yuv {
			q := rowOf(0)
			for y := y0; y < y1; y++ {
				j.row(st.sc, y, y0, j.srcRows(y), j.alphaRow(y), 0, w, q)
				d.lut.RGBOutRow(dst.Planes[0][y*dst.Strides[0]:][:3*w], q[0], q[1], q[2])
			}
			return
		}
		for y := y0; y < y1; y += 2 {
			cy := y >> 1
			y2 := min(y+1, h-1) // odd height: the last row pairs with itself
			qa, qb := rowOf(0), rowOf(1)
			j.row(st.sc, y, y0, j.srcRows(y), j.alphaRow(y), 0, w, qa)
			if y2 != y {
				j.row(st.sc, y2, y0, j.srcRows(y2), j.alphaRow(y2), 0, w, qb)
			} else {
				qb = qa
			}
			rows.YUVOutRows(k, ob,
				dst.Planes[0][y*dst.Strides[0]:][:w], dst.Planes[0][y2*dst.Strides[0]:][:w],
				dst.Planes[1][cy*dst.Strides[1]:][:cw], dst.Planes[2][cy*dst.Strides[2]:][:cw],
				qa[0], qa[1], qa[2], qb[0], qb[1], qb[2])
		}
	})
	return nil
}

// compositeJob is a validated GainComposite: inputs and sampling tables. Its
// rows are written by begin (once per band) and row (per row, in order).
type compositeJob struct {
	w, h           int
	hasAlpha       bool
	s, a, b, bb    *cpuImage // s and a are nil when the rows come from host frames
	gl, abl        *cpuImage
	gx, gy, ax, ay rows.Bilin
	doWrap         bool
	wrap, maxV     float32
	fm, bm, sh     *cpuImage // CompositeLook's inputs (nil = none)
	shSpan         [][2]int  // nonzero columns of each row of sh
	gr             *cpuImage // CompositeLook.Grain (nil = no grain)
	grAmt          float32
	grX, grY       int // the grain's offsets, reduced modulo its size
	// plate samples b and bb moved (CompositeLook.PlateX, PlateY; nil =
	// read as they are).
	plate *rows.Shift
	// shFirst[c]: the first output column whose sample reads a column >= c;
	// shLast[c]: one past the last that reads a column < c.
	shFirst, shLast []int
	// CompositeLook.WrapLow (nil = the wrap from bgBlur and
	// alphaBlurLow) and its sampling tables; table builds tables.
	wl     *cpuImage
	wx, wy rows.Bilin
	table  func(out, in int) rows.Bilin
	// fadeInv is 1/CompositeLook.EdgeFade (0 = no fade).
	fadeInv float32
}

// compositeScratch is the per-worker state of a compositeJob.
type compositeScratch struct {
	g       [3]*rows.Hrows
	ab      *rows.Hrows
	abx, wf []float32
	span    [][2]int
	// CompositeLook: the shadow's resampled rows (over the band's hull
	// of the shadow spans) and its row (zero outside [shL, shR)).
	sh       *rows.Hrows
	shx      []float32
	shL, shR int
	// CompositeLook's FgLow and BgOldLow: their resampled rows per
	// channel (nil without them), over the same hull as the gain's.
	fm, bm [3]*rows.Hrows
	// A moved plate's rows: bg's and bgBlur's row of the moment, per
	// channel (made on first use).
	pb, pbb [3][]float32
	// CompositeLook.WrapLow: its resampled rows and its row per channel.
	wl  [3]*rows.Hrows
	wlx [3][]float32
}

// plateRows returns sc's rows for a moved plate of width w.
func (sc *compositeScratch) plateRows(w int) (pb, pbb *[3][]float32) {
	if len(sc.pb[0]) != w {
		for c := range 3 {
			sc.pb[c], sc.pbb[c] = make([]float32, w), make([]float32, w)
		}
	}
	return &sc.pb, &sc.pbb
}

// setLook checks and records GainCompositeLook's optional inputs: each
// nil or of gainLow's size; FgLow and BgOldLow 3 channels and both or
// neither, ShadowLow 1 channel. Without alpha they are ignored.
func (j *compositeJob) setLook(d *CPU, op string, look CompositeLook) error {
	fm, err := optImg(op, "FgLow", look.FgLow)
	if err != nil {
		return err
	}
	bm, err := optImg(op, "BgOldLow", look.BgOldLow)
	if err != nil {
		return err
	}
	sh, err := optImg(op, "ShadowLow", look.ShadowLow)
	if err != nil {
		return err
	}
	if (fm == nil) != (bm == nil) {
		return shapeErr(op, "FgLow and BgOldLow go together")
	}
	if err := wantChannels(op, "FgLow", fm, 3); err != nil {
		return err
	}
	if err := wantChannels(op, "BgOldLow", bm, 3); err != nil {
		return err
	}
	if err := wantChannels(op, "ShadowLow", sh, 1); err != nil {
		return err
	}
	if err := sameSize(op, j.gl, []string{"FgLow", "BgOldLow", "ShadowLow"}, fm, bm, sh); err != nil {
		return err
	}
	if j.hasAlpha {
		j.fm, j.bm, j.sh = fm, bm, sh
	}
	if look.GrainAmount > 0 {
		gr, err := optImg(op, "Grain", look.Grain)
		if err != nil {
			return err
		}
		if gr == nil {
			return shapeErr(op, "GrainAmount without Grain")
		}
		if err := wantChannels(op, "Grain", gr, 1); err != nil {
			return err
		}
		if look.GrainX < 0 || look.GrainY < 0 {
			return shapeErr(op, "negative grain offset")
		}
		if j.hasAlpha {
			j.gr, j.grAmt = gr, look.GrainAmount
			j.grX, j.grY = look.GrainX%gr.w, look.GrainY%gr.h
		}
	}
	if look.PlateX != 0 || look.PlateY != 0 {
		if !finite32(look.PlateX) || !finite32(look.PlateY) {
			return shapeErr(op, "plate offset %v, %v is not finite", look.PlateX, look.PlateY)
		}
		if j.hasAlpha {
			j.plate = d.shiftFor(j.w, j.h, look.PlateX, look.PlateY)
		}
	}
	wl, err := optImg(op, "WrapLow", look.WrapLow)
	if err != nil {
		return err
	}
	if err := wantChannels(op, "WrapLow", wl, 3); err != nil {
		return err
	}
	if wl != nil && j.hasAlpha {
		j.wl, j.doWrap = wl, true
		j.wx, j.wy = j.table(j.w, wl.w), j.table(j.h, wl.h)
	}
	if e := look.EdgeFade; e != 0 {
		if !(e > 0 && e <= 1) {
			return shapeErr(op, "EdgeFade %v is not in [0, 1]", e)
		}
		if j.hasAlpha {
			j.fadeInv = 1 / e
		}
	}
	if j.sh != nil {
		// The nonzero columns of each row of the darkness.
		j.shSpan = make([][2]int, sh.h)
		for y := range sh.h {
			l, r := rows.NonzeroSpan(sh.plane(0)[y*sh.w:][:sh.w])
			j.shSpan[y] = [2]int{l, r}
		}
		// A sample reads columns i0 <= i1 (both nondecreasing in x): it
		// can be nonzero in [cl, cr) only where i1 >= cl and i0 < cr.
		j.shFirst, j.shLast = make([]int, sh.w+1), make([]int, sh.w+1)
		x := 0
		for c := 0; c <= sh.w; c++ {
			for x < j.w && int(j.gx.I1[x]) < c {
				x++
			}
			j.shFirst[c] = x
		}
		x = 0
		for c := 0; c <= sh.w; c++ {
			for x < j.w && int(j.gx.I0[x]) < c {
				x++
			}
			j.shLast[c] = x
		}
	}
	return nil
}

// newCompositeJob checks GainComposite's inputs against a w x h output.
func newCompositeJob(op string, w, h int, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, wrap, maxValue float32) (*compositeJob, error) {
	s, err := cpuImg(op, "src", src)
	if err != nil {
		return nil, err
	}
	if s.w != w || s.h != h {
		return nil, shapeErr(op, "src %s, dst %dx%d", dims(s), w, h)
	}
	if err := wantChannels(op, "src", s, 3); err != nil {
		return nil, err
	}
	a, err := optImg(op, "alpha", alpha)
	if err != nil {
		return nil, err
	}
	if err := wantChannels(op, "alpha", a, 1); err != nil {
		return nil, err
	}
	if err := sameSize(op, s, []string{"alpha"}, a); err != nil {
		return nil, err
	}
	j, err := newCompositeJobLow(op, w, h, a != nil, gainLow, bg, bgBlur, alphaBlurLow, wrap, maxValue, rows.BilinTable)
	if err != nil {
		return nil, err
	}
	j.s, j.a = s, a
	return j, nil
}

// newCompositeJobLow checks GainComposite's inputs other than src and alpha
// against a w x h output (hasAlpha: a matte is given) and builds the
// sampling tables.
func newCompositeJobLow(op string, w, h int, hasAlpha bool, gainLow, bg, bgBlur, alphaBlurLow Image, wrap, maxValue float32,
	table func(out, in int) rows.Bilin) (*compositeJob, error) {
	gl, err := cpuImg(op, "gainLow", gainLow)
	if err != nil {
		return nil, err
	}
	b, err := optImg(op, "bg", bg)
	if err != nil {
		return nil, err
	}
	bb, err := optImg(op, "bgBlur", bgBlur)
	if err != nil {
		return nil, err
	}
	abl, err := optImg(op, "alphaBlurLow", alphaBlurLow)
	if err != nil {
		return nil, err
	}
	if hasAlpha && b == nil {
		return nil, shapeErr(op, "bg is required when alpha is given")
	}
	for _, x := range []struct {
		n string
		m *cpuImage
	}{{"gainLow", gl}, {"bg", b}, {"bgBlur", bb}} {
		if err := wantChannels(op, x.n, x.m, 3); err != nil {
			return nil, err
		}
	}
	if err := wantChannels(op, "alphaBlurLow", abl, 1); err != nil {
		return nil, err
	}
	for _, x := range []struct {
		n string
		m *cpuImage
	}{{"bg", b}, {"bgBlur", bb}} {
		if x.m != nil && (x.m.w != w || x.m.h != h) {
			return nil, shapeErr(op, "%s is %s, want %dx%d", x.n, dims(x.m), w, h)
		}
	}
	j := &compositeJob{w: w, h: h, hasAlpha: hasAlpha, b: b, bb: bb, gl: gl, abl: abl,
		doWrap: bb != nil && abl != nil, wrap: wrap, maxV: maxValue, table: table}
	j.gx, j.gy = table(w, gl.w), table(h, gl.h)
	if j.doWrap {
		j.ax, j.ay = table(w, abl.w), table(h, abl.h)
	}
	return j, nil
}

// srcRows returns row y of the src image's three planes.
func (j *compositeJob) srcRows(y int) [3][]float32 {
	lo := y * j.w
	return [3][]float32{j.s.plane(0)[lo:][:j.w], j.s.plane(1)[lo:][:j.w], j.s.plane(2)[lo:][:j.w]}
}

// alphaSpan is the nonzero span of row y of the alpha image.
func (j *compositeJob) alphaSpan(y int) (int, int) { return rows.NonzeroSpan(j.alphaRow(y)) }

// alphaRow returns row y of the alpha image (nil without one).
func (j *compositeJob) alphaRow(y int) []float32 {
	if j.a == nil {
		return nil
	}
	return j.a.plane(0)[y*j.w:][:j.w]
}

// newFullScratch is a compositeScratch for any compositeJob of width w (wrap and
// shadow rows included) and bands of up to band rows.
func newFullScratch(w, band int) *compositeScratch {
	return &compositeScratch{g: [3]*rows.Hrows{rows.NewHrows(w), rows.NewHrows(w), rows.NewHrows(w)}, span: make([][2]int, band),
		ab: rows.NewHrows(w), abx: make([]float32, w), wf: make([]float32, w), sh: rows.NewHrows(w), shx: make([]float32, w),
		fm: [3]*rows.Hrows{rows.NewHrows(w), rows.NewHrows(w), rows.NewHrows(w)}, bm: [3]*rows.Hrows{rows.NewHrows(w), rows.NewHrows(w), rows.NewHrows(w)},
		wl: [3]*rows.Hrows{rows.NewHrows(w), rows.NewHrows(w), rows.NewHrows(w)}, wlx: [3][]float32{make([]float32, w), make([]float32, w), make([]float32, w)}}
}

func (j *compositeJob) newScratch(band int) *compositeScratch {
	w := j.w
	sc := &compositeScratch{g: [3]*rows.Hrows{rows.NewHrows(w), rows.NewHrows(w), rows.NewHrows(w)}, span: make([][2]int, band)}
	if j.doWrap {
		sc.ab = rows.NewHrows(w)
		sc.abx = make([]float32, w)
		sc.wf = make([]float32, w)
	}
	if j.wl != nil {
		for c := range 3 {
			sc.wl[c], sc.wlx[c] = rows.NewHrows(w), make([]float32, w)
		}
	}
	if j.sh != nil {
		sc.sh = rows.NewHrows(w)
		sc.shx = make([]float32, w)
	}
	if j.fm != nil {
		sc.fm = [3]*rows.Hrows{rows.NewHrows(w), rows.NewHrows(w), rows.NewHrows(w)}
		sc.bm = [3]*rows.Hrows{rows.NewHrows(w), rows.NewHrows(w), rows.NewHrows(w)}
	}
	return sc
}

// begin prepares sc for the rows [y0, y1) (at most the scratch's band).
// With a matte, the columns outside [first, last] nonzero alpha of a row
// are pure background, and the gain and alphaBlur rows are only
// resampled over the band's hull of the nonzero spans.
func (j *compositeJob) begin(sc *compositeScratch, y0, y1 int, spanOf func(y int) (l, r int)) {
	w := j.w
	hl, hr := 0, w
	if j.hasAlpha {
		hl, hr = w, 0
		for y := y0; y < y1; y++ {
			l, r := spanOf(y)
			sc.span[y-y0] = [2]int{l, r}
			if l < r {
				hl, hr = min(hl, l), max(hr, r)
			}
		}
	}
	for c := range 3 {
		sc.g[c].ResetRange(hl, hr)
		if j.fm != nil {
			sc.fm[c].ResetRange(hl, hr)
			sc.bm[c].ResetRange(hl, hr)
		}
	}
	if j.sh != nil {
		sl, sr := w, 0
		for y := y0; y < y1; y++ {
			for _, jj := range [2]int32{j.gy.I0[y], j.gy.I1[y]} {
				if sp := j.shSpan[jj]; sp[0] < sp[1] {
					sl, sr = min(sl, j.shFirst[sp[0]]), max(sr, j.shLast[sp[1]])
				}
			}
		}
		sc.sh.ResetRange(min(sl, sr), sr)
	}
	if j.wl != nil {
		for c := range 3 {
			sc.wl[c].ResetRange(hl, hr)
		}
	} else if j.doWrap {
		sc.ab.ResetRange(hl, hr)
	}
}

// shadowCols returns the output columns [sl, sr) of row y where the
// shadow's sample may be nonzero (sl == sr when there is none).
func (j *compositeJob) shadowCols(y int) (sl, sr int) {
	if j.sh == nil {
		return 0, 0
	}
	c0, c1 := j.shSpan[j.gy.I0[y]], j.shSpan[j.gy.I1[y]]
	cl, cr := min(c0[0], c1[0]), max(c0[1], c1[1])
	if c0[0] >= c0[1] {
		cl, cr = c1[0], c1[1]
	} else if c1[0] >= c1[1] {
		cl, cr = c0[0], c0[1]
	}
	if cl >= cr {
		return 0, 0
	}
	return j.shFirst[cl], j.shLast[cr]
}

// row writes output row y (of the band begun at y0) into qs, from the
// source rows ss (three planes) and the alpha row al (nil without a
// matte). With a matte only the columns [xl, xr) of qs are written, and
// ss is read only where al is nonzero; [xl, xr) must hold every nonzero
// alpha and shadow column of the row. Without one, [xl, xr) is the whole
// row.
func (j *compositeJob) row(sc *compositeScratch, y, y0 int, ss [3][]float32, al []float32, xl, xr int, qs [3][]float32) {
	w, b, bb := j.w, j.b, j.bb
	gl, abl, doWrap, wrap, maxValue := j.gl, j.abl, j.doWrap, j.wrap, j.maxV
	gx, gy, ax, ay := &j.gx, &j.gy, &j.ax, &j.ay
	lo := y * w
	gj0, gj1 := int(gy.I0[y]), int(gy.I1[y])
	gw0, gw1 := gy.W0[y], gy.W1[y]
	if !j.hasAlpha {
		var wf []float32
		if doWrap {
			r0, r1 := sc.ab.Pair(abl.plane(0), abl.w, int(ay.I0[y]), int(ay.I1[y]), ax)
			rows.Vlerp(sc.abx, r0, r1, ay.W0[y], ay.W1[y])
			wf = sc.wf
			rows.WrapFactor(wf, nil, sc.abx, wrap)
		}
		for c := range 3 {
			g0, g1 := sc.g[c].Pair(gl.plane(c), gl.w, gj0, gj1, gx)
			sv := ss[c][:w]
			q := qs[c][:w]
			if doWrap {
				rows.GainWrapRow(q, sv, g0, g1, gw0, gw1, maxValue, wf, bb.plane(c)[lo:][:w])
			} else {
				rows.GainRow(q, sv, g0, g1, gw0, gw1, maxValue)
			}
		}
		return
	}
	al = al[:w]
	var bs, bbs, g0s, g1s, fm0s, fm1s, bm0s, bm1s [3][]float32
	for c := range 3 {
		qs[c] = qs[c][:w]
		bs[c] = b.plane(c)[lo:][:w]
	}
	var pbb *[3][]float32 // the moved bgBlur's rows (nil: bb's)
	if j.plate != nil {
		var pb *[3][]float32
		pb, pbb = sc.plateRows(w)
		for c := range 3 {
			j.plate.Row(pb[c], b.plane(c), y, xl, xr)
			bs[c] = pb[c]
		}
	}
	// GainCompositeLook: the shadow row (full width: it falls outside the
	// subject) multiplies bg where a < 1.
	// Rows whose two source rows of ShadowLow are all zero have no
	// shadow (bilinear samples of zeros are exactly 0, so bg*(1-0) is bg).
	var shx []float32
	sl, sr := 0, 0 // the columns where the shadow may be nonzero
	if j.sh != nil {
		shx = sc.shx
		clear(shx[sc.shL:sc.shR]) // zero outside the span, always
		sc.shL, sc.shR = 0, 0
		if sl, sr = j.shadowCols(y); sl < sr {
			s0, s1 := sc.sh.Pair(j.sh.plane(0), j.sh.w, gj0, gj1, gx)
			rows.Vlerp(shx[sl:sr], s0[sl:sr], s1[sl:sr], gw0, gw1)
			sc.shL, sc.shR = sl, sr
		}
	}
	bgCopy := func(q, b []float32, x0, x1 int) {
		if shx == nil || x1 <= sl || x0 >= sr {
			copy(q[x0:x1], b[x0:x1])
			return
		}
		u0, u1 := max(x0, sl), min(x1, sr)
		copy(q[x0:u0], b[x0:u0])
		rows.ShadeRow(q[u0:u1], b[u0:u1], shx[u0:u1])
		copy(q[u1:x1], b[u1:x1])
	}
	l, r := sc.span[y-y0][0], sc.span[y-y0][1]
	if l >= r {
		for c := range 3 {
			bgCopy(qs[c], bs[c], xl, xr)
		}
		return
	}
	for c := range 3 {
		bgCopy(qs[c], bs[c], xl, l)
		bgCopy(qs[c], bs[c], r, xr)
		ss[c] = ss[c][:w]
		g0s[c], g1s[c] = sc.g[c].Pair(gl.plane(c), gl.w, gj0, gj1, gx)
		if j.fm != nil {
			fm0s[c], fm1s[c] = sc.fm[c].Pair(j.fm.plane(c), j.fm.w, gj0, gj1, gx)
			bm0s[c], bm1s[c] = sc.bm[c].Pair(j.bm.plane(c), j.bm.w, gj0, gj1, gx)
		}
		if doWrap && j.wl == nil {
			bbs[c] = bb.plane(c)[lo:][:w]
			if pbb != nil {
				j.plate.Row(pbb[c], bb.plane(c), y, l, r)
				bbs[c] = pbb[c]
			}
		}
	}
	var ab0, ab1 []float32
	var wl0, wl1 [3][]float32 // WrapLow's two resampled rows per channel
	switch {
	case j.wl != nil:
		for c := range 3 {
			wl0[c], wl1[c] = sc.wl[c].Pair(j.wl.plane(c), j.wl.w, int(j.wy.I0[y]), int(j.wy.I1[y]), &j.wx)
			bbs[c] = sc.wlx[c]
		}
	case doWrap:
		ab0, ab1 = sc.ab.Pair(abl.plane(0), abl.w, int(ay.I0[y]), int(ay.I1[y]), ax)
	}
	for x := l; x < r; {
		// A run of nonzero alpha [x, xe), then zeros [xe, xz).
		xe := x + 1
		xe += rows.EqPrefixSIMD(al[xe:r], 0, false)
		for xe < r && al[xe] != 0 {
			xe++
		}
		switch {
		case j.wl != nil:
			// The masked wrap: wf = wrap*a*a, its light sampled.
			for c := range 3 {
				rows.Vlerp(sc.wlx[c][x:xe], wl0[c][x:xe], wl1[c][x:xe], j.wy.W0[y], j.wy.W1[y])
			}
			wf := sc.wf[x:xe]
			for i, a := range al[x:xe] {
				wf[i] = wrap * a * a
			}
		case doWrap:
			rows.Vlerp(sc.abx[x:xe], ab0[x:xe], ab1[x:xe], ay.W0[y], ay.W1[y])
			rows.WrapFactor(sc.wf[x:xe], al[x:xe], sc.abx[x:xe], wrap)
		}
		// Split into runs of a == 1 (bg is not read) and of
		// fractional alpha.
		for u := x; u < xe; {
			one := al[u] == 1
			v := u + 1
			v += rows.EqPrefixSIMD(al[v:xe], 1, one)
			for v < xe && (al[v] == 1) == one {
				v++
			}
			for c := range 3 {
				q, sv, g0, g1 := qs[c][u:v], ss[c][u:v], g0s[c][u:v], g1s[c][u:v]
				switch {
				case one && doWrap:
					rows.GainOneWrapRow(q, sv, g0, g1, gw0, gw1, maxValue, sc.wf[u:v], bbs[c][u:v])
				case one:
					rows.GainOneRow(q, sv, g0, g1, gw0, gw1, maxValue)
				case j.fm != nil || shx != nil || j.fadeInv != 0:
					lr := rows.LookRun{Al: al[u:v], B: bs[c][u:v], FadeInv: j.fadeInv}
					if doWrap {
						lr.Wf, lr.Bb = sc.wf[u:v], bbs[c][u:v]
					}
					if shx != nil {
						lr.Sh = shx[u:v]
					}
					if j.fm != nil {
						lr.Fm0, lr.Fm1, lr.Bm0, lr.Bm1 = fm0s[c][u:v], fm1s[c][u:v], bm0s[c][u:v], bm1s[c][u:v]
					}
					rows.GainLookRow(q, sv, g0, g1, gw0, gw1, maxValue, &lr)
				case doWrap:
					rows.GainCompWrapRow(q, sv, g0, g1, gw0, gw1, maxValue, al[u:v], bs[c][u:v], sc.wf[u:v], bbs[c][u:v])
				default:
					rows.GainCompRow(q, sv, g0, g1, gw0, gw1, maxValue, al[u:v], bs[c][u:v])
				}
			}
			u = v
		}
		if j.gr != nil {
			j.grainRow(qs, al, y, x, xe)
		}
		xz := xe
		for xz < r && al[xz] == 0 {
			xz++
		}
		for c := range 3 {
			bgCopy(qs[c], bs[c], xe, xz)
		}
		x = xz
	}
}

// grainRow adds CompositeLook's grain to the composited pixels [x0, x1)
// of row y (alpha al nonzero there; see CompositeLook.Grain).
func (j *compositeJob) grainRow(qs [3][]float32, al []float32, y, x0, x1 int) {
	gr := j.gr
	gw := gr.w
	gy := (y + j.grY) % gr.h
	rows.GrainRow(qs, al, gr.plane(0)[gy*gw:][:gw], (x0+j.grX)%gw, j.grAmt, j.maxV, x0, x1)
}

// finite32 reports whether v is neither NaN nor infinite.
func finite32(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
