package kernels

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
	d.parallel(m.h, bandRows(w), func(_, y0, y1 int) {
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
	d.parallel(o.h, bandRows(w), func(_, y0, y1 int) {
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
	d.parallel(o.h, bandRows(w), func(_, y0, y1 int) {
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
	d.parallel(o.h, bandRows(w), func(wk, y0, y1 int) {
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
	d.parallel(o.h, bandRows(w), func(_, y0, y1 int) {
		lo, hi := y0*w, y1*w
		n := hi - lo
		var al []float32
		if a != nil {
			al = a.plane(0)[lo:hi][:n]
		}
		for c := range o.c {
			ratioRow(o.plane(c)[lo:hi][:n], s.plane(c)[lo:hi][:n],
				en.plane(min(c, en.c-1))[lo:hi][:n], eo.plane(min(c, eo.c-1))[lo:hi][:n], al, eps, maxGain)
		}
	})
	return nil
}

// ratioRow writes q = s*(1 + a*(g-1)), g = clamp(en/max(eo, eps), 0, maxG)
// (a = 1 when al is nil; a NaN ratio counts as 0).
func ratioRow(q, s, en, eo, al []float32, eps, maxG float32) {
	n := len(q)
	s, en, eo = s[:n], en[:n], eo[:n]
	if al == nil {
		for i := range q {
			g := en[i] / max(eo[i], eps)
			if !(g > 0) {
				g = 0
			} else if g > maxG {
				g = maxG
			}
			q[i] = s[i] * (1 + 1*(g-1))
		}
		return
	}
	al = al[:n]
	for i := range q {
		g := en[i] / max(eo[i], eps)
		if !(g > 0) {
			g = 0
		} else if g > maxG {
			g = maxG
		}
		q[i] = s[i] * (1 + al[i]*(g-1))
	}
}

// bilin holds, per output index, the two source indices and weights of a
// pixel-centre-aligned linear interpolation (clamped at the edges).
type bilin struct {
	i0, i1 []int32
	w0, w1 []float32
}

func bilinTable(out, in int) bilin {
	t := bilin{make([]int32, out), make([]int32, out), make([]float32, out), make([]float32, out)}
	scale := float64(in) / float64(out)
	for i := range out {
		s := (float64(i)+0.5)*scale - 0.5
		s = max(s, 0)
		i0 := int(s)
		f := s - float64(i0)
		i1 := i0 + 1
		if i0 >= in-1 {
			i0, i1, f = in-1, in-1, 0
		}
		t.i0[i], t.i1[i] = int32(i0), int32(i1)
		t.w0[i], t.w1[i] = float32(1-f), float32(f)
	}
	return t
}

// hlerp writes o[x] = w0[x]*r[i0[x]] + w1[x]*r[i1[x]]: one source row
// resampled horizontally.
func hlerp(o, r []float32, xt *bilin) {
	n := len(o)
	i0, i1 := xt.i0[:n], xt.i1[:n]
	w0, w1 := xt.w0[:n], xt.w1[:n]
	for x := range o {
		o[x] = w0[x]*r[i0[x]] + w1[x]*r[i1[x]]
	}
}

// vlerp writes o = w0*a + w1*b.
func vlerp(o, a, b []float32, w0, w1 float32) {
	n := len(o)
	a, b = a[:n], b[:n]
	for x := range o {
		o[x] = w0*a[x] + w1*b[x]
	}
}

// hrows caches horizontally resampled source rows of one plane. Bilinear
// sampling is horizontal first, then vertical: consecutive output rows
// share source rows, so each source row is resampled once per band.
// Every user of bilinear sampling (ResizeBilinear, GainComposite) goes
// through it, so they agree bit for bit.
type hrows struct {
	tag [2]int
	buf [2][]float32
}

func newHrows(w int) *hrows {
	return &hrows{tag: [2]int{-1, -1}, buf: [2][]float32{make([]float32, w), make([]float32, w)}}
}

func (c *hrows) reset() { c.tag = [2]int{-1, -1} }

// pair returns the resampled source rows j0 and j1 of plane p (width sw).
func (c *hrows) pair(p []float32, sw int, j0, j1 int, xt *bilin) (r0, r1 []float32) {
	return c.get(p, sw, j0, j1, xt), c.get(p, sw, j1, j0, xt)
}

func (c *hrows) get(p []float32, sw int, j, keep int, xt *bilin) []float32 {
	for k := range 2 {
		if c.tag[k] == j {
			return c.buf[k]
		}
	}
	k := 0
	if c.tag[0] == keep {
		k = 1
	}
	hlerp(c.buf[k], p[j*sw:][:sw], xt)
	c.tag[k] = j
	return c.buf[k]
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
	xt, yt := bilinTable(o.w, s.w), bilinTable(o.h, s.h)
	sw, dw := s.w, o.w
	caches := make([]*hrows, d.workers)
	d.parallel(o.h, bandRows(dw), func(wk, y0, y1 int) {
		if caches[wk] == nil {
			caches[wk] = newHrows(dw)
		}
		rc := caches[wk]
		for c := range o.c {
			rc.reset()
			sp := s.plane(c)
			dp := o.plane(c)
			for y := y0; y < y1; y++ {
				r0, r1 := rc.pair(sp, sw, int(yt.i0[y]), int(yt.i1[y]), &xt)
				vlerp(dp[y*dw:][:dw], r0, r1, yt.w0[y], yt.w1[y])
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
func (d *CPU) GainComposite(dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, wrap, maxValue float32) error {
	const op = "GainComposite"
	o, s, err := pair(op, dst, src)
	if err != nil {
		return err
	}
	gl, err := cpuImg(op, "gainLow", gainLow)
	if err != nil {
		return err
	}
	a, err := optImg(op, "alpha", alpha)
	if err != nil {
		return err
	}
	b, err := optImg(op, "bg", bg)
	if err != nil {
		return err
	}
	bb, err := optImg(op, "bgBlur", bgBlur)
	if err != nil {
		return err
	}
	abl, err := optImg(op, "alphaBlurLow", alphaBlurLow)
	if err != nil {
		return err
	}
	if a != nil && b == nil {
		return shapeErr(op, "bg is required when alpha is given")
	}
	for _, x := range []struct {
		n string
		m *cpuImage
	}{{"src", s}, {"dst", o}, {"gainLow", gl}, {"bg", b}, {"bgBlur", bb}} {
		if err := wantChannels(op, x.n, x.m, 3); err != nil {
			return err
		}
	}
	if err := wantChannels(op, "alpha", a, 1); err != nil {
		return err
	}
	if err := wantChannels(op, "alphaBlurLow", abl, 1); err != nil {
		return err
	}
	if err := sameSize(op, o, []string{"alpha", "bg", "bgBlur"}, a, b, bb); err != nil {
		return err
	}
	doWrap := bb != nil && abl != nil
	w, h := o.w, o.h
	gx, gy := bilinTable(w, gl.w), bilinTable(h, gl.h)
	var ax, ay bilin
	if doWrap {
		ax, ay = bilinTable(w, abl.w), bilinTable(h, abl.h)
	}
	type scratch struct {
		g       [3]*hrows
		ab      *hrows
		abx, wf []float32
	}
	scr := make([]*scratch, d.workers)
	d.parallel(h, bandRows(w), func(wk, y0, y1 int) {
		sc := scr[wk]
		if sc == nil {
			sc = &scratch{g: [3]*hrows{newHrows(w), newHrows(w), newHrows(w)}}
			if doWrap {
				sc.ab = newHrows(w)
				sc.abx = make([]float32, w)
				sc.wf = make([]float32, w)
			}
			scr[wk] = sc
		}
		for c := range 3 {
			sc.g[c].reset()
		}
		if doWrap {
			sc.ab.reset()
		}
		for y := y0; y < y1; y++ {
			lo := y * w
			var al, wf []float32
			if a != nil {
				al = a.plane(0)[lo:][:w]
			}
			if doWrap {
				r0, r1 := sc.ab.pair(abl.plane(0), abl.w, int(ay.i0[y]), int(ay.i1[y]), &ax)
				vlerp(sc.abx, r0, r1, ay.w0[y], ay.w1[y])
				wf = sc.wf
				wrapFactor(wf, al, sc.abx, wrap)
			}
			gj0, gj1 := int(gy.i0[y]), int(gy.i1[y])
			gw0, gw1 := gy.w0[y], gy.w1[y]
			for c := range 3 {
				g0, g1 := sc.g[c].pair(gl.plane(c), gl.w, gj0, gj1, &gx)
				ss := s.plane(c)[lo:][:w]
				q := o.plane(c)[lo:][:w]
				switch {
				case al != nil && doWrap:
					gainCompWrapRow(q, ss, g0, g1, gw0, gw1, maxValue, al, b.plane(c)[lo:][:w], wf, bb.plane(c)[lo:][:w])
				case al != nil:
					gainCompRow(q, ss, g0, g1, gw0, gw1, maxValue, al, b.plane(c)[lo:][:w])
				case doWrap:
					gainWrapRow(q, ss, g0, g1, gw0, gw1, maxValue, wf, bb.plane(c)[lo:][:w])
				default:
					gainRow(q, ss, g0, g1, gw0, gw1, maxValue)
				}
			}
		}
	})
	return nil
}

// wrapFactor writes wf = wrap * a * (1 - ab) (a = 1 when al is nil).
func wrapFactor(wf, al, ab []float32, wrap float32) {
	ab = ab[:len(wf)]
	if al == nil {
		for x := range wf {
			wf[x] = wrap * 1 * (1 - ab[x])
		}
		return
	}
	al = al[:len(wf)]
	for x := range wf {
		wf[x] = wrap * al[x] * (1 - ab[x])
	}
}

// The row kernels below compute f = clamp(s * (w0*g0 + w1*g1), 0, maxV)
// (the gain sample as ResizeBilinear computes it) and then the
// Composite / LightWrap arithmetic, in the same order as those ops.

func gainRow(q, s, g0, g1 []float32, w0, w1, maxV float32) {
	n := len(q)
	s, g0, g1 = s[:n], g0[:n], g1[:n]
	for x := range q {
		f := s[x] * (w0*g0[x] + w1*g1[x])
		if f < 0 {
			f = 0
		} else if f > maxV {
			f = maxV
		}
		q[x] = f
	}
}

func gainCompWrapRow(q, s, g0, g1 []float32, w0, w1, maxV float32, al, b, wf, bb []float32) {
	n := len(q)
	s, g0, g1 = s[:n], g0[:n], g1[:n]
	al, b, wf, bb = al[:n], b[:n], wf[:n], bb[:n]
	for x := range q {
		f := s[x] * (w0*g0[x] + w1*g1[x])
		if f < 0 {
			f = 0
		} else if f > maxV {
			f = maxV
		}
		a := al[x]
		q[x] = a*f + (1-a)*b[x] + wf[x]*bb[x]
	}
}

func gainCompRow(q, s, g0, g1 []float32, w0, w1, maxV float32, al, b []float32) {
	n := len(q)
	s, g0, g1 = s[:n], g0[:n], g1[:n]
	al, b = al[:n], b[:n]
	for x := range q {
		f := s[x] * (w0*g0[x] + w1*g1[x])
		if f < 0 {
			f = 0
		} else if f > maxV {
			f = maxV
		}
		a := al[x]
		q[x] = a*f + (1-a)*b[x]
	}
}

func gainWrapRow(q, s, g0, g1 []float32, w0, w1, maxV float32, wf, bb []float32) {
	n := len(q)
	s, g0, g1 = s[:n], g0[:n], g1[:n]
	wf, bb = wf[:n], bb[:n]
	for x := range q {
		f := s[x] * (w0*g0[x] + w1*g1[x])
		if f < 0 {
			f = 0
		} else if f > maxV {
			f = maxV
		}
		q[x] = f + wf[x]*bb[x]
	}
}
