//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels/cpuref"
	"github.com/vfxrender/vfx/kernels/rows"
	"gorgonia.org/cu"
)

// The ops of the CUDA device. Each validates its arguments exactly like
// the CPU backend, queues its kernels on the device's stream and returns
// without waiting (reductions wait for their sums). Per-op tolerances
// against the CPU reference are stated in cuda_ops_test.go.

func asBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))
}

// bilinBytes packs rows.BilinTable(out, in) as [i0 | i1 | w0 | w1].
func bilinBytes(out, in int) []byte {
	t := rows.BilinTable(out, in)
	b := make([]byte, 0, 16*out)
	b = append(b, asBytes(t.I0)...)
	b = append(b, asBytes(t.I1)...)
	b = append(b, asBytes(t.W0)...)
	return append(b, asBytes(t.W1)...)
}

func (d *CUDA) bilin(out, in int) (cu.DevicePtr, error) {
	return d.table(fmt.Sprintf("bilin:%d:%d", out, in), func() []byte { return bilinBytes(out, in) })
}

// tapsBytes packs a taps table as [start (n) | off (n+1) | w].
func tapsBytes(t rows.Taps) []byte {
	b := append([]byte(nil), asBytes(t.Start)...)
	b = append(b, asBytes(t.Off)...)
	return append(b, asBytes(t.W)...)
}

// separable runs the vertical then horizontal taps passes (the CPU's
// separable: the same sums in the same order).
func (d *CUDA) separable(o, s *cudaImage, key string, tx, ty func() rows.Taps) error {
	px, err := d.table("tx:"+key, func() []byte { return tapsBytes(tx()) })
	if err != nil {
		return err
	}
	py, err := d.table("ty:"+key, func() []byte { return tapsBytes(ty()) })
	if err != nil {
		return err
	}
	nb := int64(s.w*o.h*o.c) * 4
	tmp, err := d.alloc(nb)
	if err != nil {
		return err
	}
	defer d.put(tmp, nb)
	if err := d.launch2("vfx_taps_v", s.w, o.h, new(kargs).p(tmp).p(s.ptr).i(s.w).i(s.h).i(o.h).i(o.c).p(py)); err != nil {
		return err
	}
	return d.launch2("vfx_taps_h", o.w, o.h, new(kargs).p(o.ptr).p(tmp).i(s.w).i(o.w).i(o.h).i(o.c).p(px))
}

func (d *CUDA) copyImg(o, s *cudaImage) error {
	if o == s {
		return nil
	}
	return cu.MemcpyDtoDAsync(o.ptr, s.ptr, s.bytes(), d.stream)
}

// pair resolves dst and src and checks that their sizes are equal.
func (d *CUDA) pair(op string, dst, src Image) (*cudaImage, *cudaImage, error) {
	o, err := d.img(op, "dst", dst)
	if err != nil {
		return nil, nil, err
	}
	s, err := d.img(op, "src", src)
	if err != nil {
		return nil, nil, err
	}
	if s.w != o.w || s.h != o.h {
		return nil, nil, d.shapeErr(op, "src %s, dst %s", cdims(s), cdims(o))
	}
	return o, s, nil
}

// Fill sets every pixel of channel c to v[c] (cuMemsetD32Async per plane).
func (d *CUDA) Fill(dst Image, v []float32) error {
	m, err := d.img("Fill", "dst", dst)
	if err != nil {
		return err
	}
	if len(v) != m.c {
		return d.shapeErr("Fill", "%d values for %d channels", len(v), m.c)
	}
	return d.wrap("Fill", d.do(func() error {
		for c := range m.c {
			if err := cu.MemsetD32Async(m.plane(c), uint(math.Float32bits(v[c])), int64(m.n()), d.stream); err != nil {
				return err
			}
		}
		return nil
	}))
}

// Copy copies src into dst (device to device).
func (d *CUDA) Copy(dst, src Image) error {
	o, s, err := d.pair("Copy", dst, src)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return d.shapeErr("Copy", "src %s, dst %s", cdims(s), cdims(o))
	}
	return d.wrap("Copy", d.do(func() error { return d.copyImg(o, s) }))
}

// Luma writes the Rec.709 luminance (bit-identical to the CPU).
func (d *CUDA) Luma(dst, src Image) error {
	const op = "Luma"
	o, s, err := d.pair(op, dst, src)
	if err != nil {
		return err
	}
	if err := d.chans(op, "src", s, 3); err != nil {
		return err
	}
	if err := d.chans(op, "dst", o, 1); err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		return d.launchGS("vfx_luma", o.n(), new(kargs).p(o.ptr).p(s.ptr).l(o.n()))
	}))
}

// resizeCheck resolves a resize's dst and src (channels equal).
func (d *CUDA) resizeCheck(op string, dst, src Image) (*cudaImage, *cudaImage, error) {
	o, err := d.img(op, "dst", dst)
	if err != nil {
		return nil, nil, err
	}
	s, err := d.img(op, "src", src)
	if err != nil {
		return nil, nil, err
	}
	if s.c != o.c {
		return nil, nil, d.shapeErr(op, "src %s, dst %s", cdims(s), cdims(o))
	}
	return o, s, nil
}

// ResizeBilinear: bit-identical to the CPU (same tables, same order).
func (d *CUDA) ResizeBilinear(dst, src Image) error {
	const op = "ResizeBilinear"
	o, s, err := d.resizeCheck(op, dst, src)
	if err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		if o.w == s.w && o.h == s.h {
			return d.copyImg(o, s)
		}
		tx, err := d.bilin(o.w, s.w)
		if err != nil {
			return err
		}
		ty, err := d.bilin(o.h, s.h)
		if err != nil {
			return err
		}
		return d.launch2("vfx_resize_bilinear", o.w, o.h, new(kargs).p(o.ptr).p(s.ptr).i(s.w).i(s.h).i(o.w).i(o.h).i(o.c).p(tx).p(ty))
	}))
}

// ResizeArea: exact box coverage, bit-identical to the CPU.
func (d *CUDA) ResizeArea(dst, src Image) error {
	const op = "ResizeArea"
	o, s, err := d.resizeCheck(op, dst, src)
	if err != nil {
		return err
	}
	if o.w > s.w || o.h > s.h {
		return d.shapeErr(op, "src %s, dst %s", cdims(s), cdims(o))
	}
	return d.wrap(op, d.do(func() error {
		if o.w == s.w && o.h == s.h {
			return d.copyImg(o, s)
		}
		key := fmt.Sprintf("area:%d:%d:%d:%d", o.w, s.w, o.h, s.h)
		return d.separable(o, s, key, func() rows.Taps { return rows.AreaTaps(o.w, s.w) }, func() rows.Taps { return rows.AreaTaps(o.h, s.h) })
	}))
}

// ResizeLanczos3: separable Lanczos-3, bit-identical to the CPU.
func (d *CUDA) ResizeLanczos3(dst, src Image) error {
	const op = "ResizeLanczos3"
	o, s, err := d.resizeCheck(op, dst, src)
	if err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		if o.w == s.w && o.h == s.h {
			return d.copyImg(o, s)
		}
		key := fmt.Sprintf("lanczos:%d:%d:%d:%d", o.w, s.w, o.h, s.h)
		return d.separable(o, s, key,
			func() rows.Taps { return rows.LanczosTaps(o.w, s.w, float64(s.w)/float64(o.w), 0) },
			func() rows.Taps { return rows.LanczosTaps(o.h, s.h, float64(s.h)/float64(o.h), 0) })
	}))
}

// CoverFit: uniform Lanczos-3 scale and centred crop, bit-identical to the CPU.
func (d *CUDA) CoverFit(dst, src Image) error {
	const op = "CoverFit"
	o, s, err := d.resizeCheck(op, dst, src)
	if err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		if o.w == s.w && o.h == s.h {
			return d.copyImg(o, s)
		}
		key := fmt.Sprintf("cover:%d:%d:%d:%d", o.w, s.w, o.h, s.h)
		var tx, ty func() rows.Taps
		if o.w*s.h >= o.h*s.w {
			inv := float64(s.w) / float64(o.w)
			offY := (float64(s.h)/inv - float64(o.h)) / 2
			tx = func() rows.Taps { return rows.LanczosTaps(o.w, s.w, inv, 0) }
			ty = func() rows.Taps { return rows.LanczosTaps(o.h, s.h, inv, offY) }
		} else {
			inv := float64(s.h) / float64(o.h)
			offX := (float64(s.w)/inv - float64(o.w)) / 2
			tx = func() rows.Taps { return rows.LanczosTaps(o.w, s.w, inv, offX) }
			ty = func() rows.Taps { return rows.LanczosTaps(o.h, s.h, inv, 0) }
		}
		return d.separable(o, s, key, tx, ty)
	}))
}

// GaussianBlur: two passes with the CPU's half kernel, bit-identical.
func (d *CUDA) GaussianBlur(dst, src Image, sigma float32) error {
	const op = "GaussianBlur"
	o, s, err := d.pair(op, dst, src)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return d.shapeErr(op, "src %s, dst %s", cdims(s), cdims(o))
	}
	if sigma > 0 && 3*float64(sigma) > rows.MaxGaussRadius {
		return fmt.Errorf("kernels: %s: %s: sigma %g is too large", d.name, op, sigma)
	}
	return d.wrap(op, d.do(func() error {
		if !(sigma > 0) {
			return d.copyImg(o, s)
		}
		span := max(o.w, o.h)
		var r int
		kp, err := d.table(fmt.Sprintf("gauss:%x:%d", math.Float32bits(sigma), span), func() []byte {
			return asBytes(rows.GaussKernel(sigma, span))
		})
		if err != nil {
			return err
		}
		r = min(int(math.Ceil(3*float64(sigma))), span)
		tmp, err := d.alloc(s.bytes())
		if err != nil {
			return err
		}
		defer d.put(tmp, s.bytes())
		if err := d.launch2("vfx_gauss", o.w, o.h, new(kargs).p(tmp).p(s.ptr).i(o.w).i(o.h).i(o.c).p(kp).i(r).i(0)); err != nil {
			return err
		}
		return d.launch2("vfx_gauss", o.w, o.h, new(kargs).p(o.ptr).p(tmp).i(o.w).i(o.h).i(o.c).p(kp).i(r).i(1))
	}))
}

// boxPlane is the CPU's boxPlane on device planes (dst may equal src):
// float64 row prefix sums, clipped differences, banded vertical running
// sums. Bit-identical to the CPU.
func (d *CUDA) boxPlane(dst, src cu.DevicePtr, w, h, r int) error {
	pb := int64(w+1) * int64(h) * 8
	pre, err := d.alloc(pb)
	if err != nil {
		return err
	}
	defer d.put(pre, pb)
	tb := int64(w*h) * 4
	tmp, err := d.alloc(tb)
	if err != nil {
		return err
	}
	defer d.put(tmp, tb)
	if err := d.launch1("vfx_box_prefix", h, new(kargs).p(pre).p(src).i(w).i(h)); err != nil {
		return err
	}
	if err := d.launch2("vfx_box_diff", w, h, new(kargs).p(tmp).p(pre).i(w).i(h).i(r)); err != nil {
		return err
	}
	band := max(cpuref.BandRows(w), 4*(2*r+1))
	f, err := d.fn("vfx_box_vert")
	if err != nil {
		return err
	}
	nb := (h + band - 1) / band
	return launchRaw(f, (w+127)/128, nb, 128, 1, d.stream, new(kargs).p(dst).p(tmp).i(w).i(h).i(r).i(band))
}

// BoxFilter: the clipped (2r+1)^2 mean, bit-identical to the CPU.
func (d *CUDA) BoxFilter(dst, src Image, r int) error {
	const op = "BoxFilter"
	o, s, err := d.pair(op, dst, src)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return d.shapeErr(op, "src %s, dst %s", cdims(s), cdims(o))
	}
	return d.wrap(op, d.do(func() error {
		if r <= 0 {
			return d.copyImg(o, s)
		}
		rr := min(r, max(o.w, o.h))
		for c := range o.c {
			if err := d.boxPlane(o.plane(c), s.plane(c), o.w, o.h, rr); err != nil {
				return err
			}
		}
		return nil
	}))
}

// GuidedFilter: the CPU's steps (box means, float64 a/b), bit-identical.
func (d *CUDA) GuidedFilter(dst, guide, src Image, r int, eps float32) error {
	const op = "GuidedFilter"
	o, s, err := d.pair(op, dst, src)
	if err != nil {
		return err
	}
	g, err := d.img(op, "guide", guide)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return d.shapeErr(op, "src %s, dst %s", cdims(s), cdims(o))
	}
	if err := d.chans(op, "guide", g, 1); err != nil {
		return err
	}
	if err := d.same(op, o, []string{"guide"}, g); err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		w, h := o.w, o.h
		n := w * h
		nb := int64(n) * 4
		buf, err := d.alloc(5 * nb)
		if err != nil {
			return err
		}
		defer d.put(buf, 5*nb)
		mI, mII, t1, t2, t3 := buf, buf+cu.DevicePtr(nb), buf+cu.DevicePtr(2*nb), buf+cu.DevicePtr(3*nb), buf+cu.DevicePtr(4*nb)
		rr := min(max(r, 0), max(w, h))
		box := func(dst, src cu.DevicePtr) error {
			if rr == 0 {
				if dst == src {
					return nil
				}
				return cu.MemcpyDtoDAsync(dst, src, nb, d.stream)
			}
			return d.boxPlane(dst, src, w, h, rr)
		}
		I := g.ptr
		if err := box(mI, I); err != nil {
			return err
		}
		if err := d.launchGS("vfx_mul", n, new(kargs).p(t1).p(I).p(I).l(n)); err != nil {
			return err
		}
		if err := box(mII, t1); err != nil {
			return err
		}
		gI := I
		if g == o {
			gI = t1
			if err := cu.MemcpyDtoDAsync(gI, I, nb, d.stream); err != nil {
				return err
			}
		}
		for c := range o.c {
			p := s.plane(c)
			if err := d.launchGS("vfx_mul", n, new(kargs).p(t3).p(gI).p(p).l(n)); err != nil {
				return err
			}
			if err := box(t2, p); err != nil {
				return err
			}
			if err := box(t3, t3); err != nil {
				return err
			}
			if err := d.launchGS("vfx_guided_ab", n, new(kargs).p(t3).p(t2).p(mI).p(mII).l(n).d(float64(eps))); err != nil {
				return err
			}
			if err := box(t3, t3); err != nil {
				return err
			}
			if err := box(t2, t2); err != nil {
				return err
			}
			if err := d.launchGS("vfx_guided_out", n, new(kargs).p(o.plane(c)).p(t3).p(gI).p(t2).l(n)); err != nil {
				return err
			}
		}
		return nil
	}))
}

// GuidedFilterColour: the CPU's steps (box means, the float64 a/b step
// of vfx_guided3_ab; for a src smaller than dst the guide's area
// downsampling and the coefficients' bilinear upsampling by this
// device's own ops), bit-identical. The resampling ops run between the
// device calls of the filter's own steps (a device call cannot make
// another).
func (d *CUDA) GuidedFilterColour(dst, guide, src Image, r int, eps float32) error {
	const op = "GuidedFilterColour"
	o, err := d.img(op, "dst", dst)
	if err != nil {
		return err
	}
	s, err := d.img(op, "src", src)
	if err != nil {
		return err
	}
	g, err := d.img(op, "guide", guide)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return d.shapeErr(op, "src %s, dst %s", cdims(s), cdims(o))
	}
	if err := d.chans(op, "guide", g, 3); err != nil {
		return err
	}
	if err := d.same(op, o, []string{"guide"}, g); err != nil {
		return err
	}
	if s.w > o.w || s.h > o.h {
		return d.shapeErr(op, "src %s larger than dst %s", cdims(s), cdims(o))
	}
	if g == o {
		return d.shapeErr(op, "dst is the guide")
	}
	fast := s.w != o.w || s.h != o.h
	I := g
	var ab, up *cudaImage
	if fast {
		li, err := d.NewImage(s.w, s.h, 3)
		if err != nil {
			return err
		}
		defer d.Free(li)
		if err := d.ResizeArea(li, g); err != nil {
			return err
		}
		I = li.(*cudaImage)
		abi, err := d.NewImage(s.w, s.h, 4)
		if err != nil {
			return err
		}
		defer d.Free(abi)
		upi, err := d.NewImage(o.w, o.h, 4)
		if err != nil {
			return err
		}
		defer d.Free(upi)
		ab, up = abi.(*cudaImage), upi.(*cudaImage)
	}
	w, h := s.w, s.h
	n := w * h
	nb := int64(n) * 4
	// mI (3), mII (6), mp, mIp (3), as on the CPU.
	var buf cu.DevicePtr
	pl := func(k int) cu.DevicePtr { return buf + cu.DevicePtr(int64(k)*nb) }
	rr := min(max(r, 0), max(w, h))
	box := func(dst, src cu.DevicePtr) error {
		if rr == 0 {
			if dst == src {
				return nil
			}
			return cu.MemcpyDtoDAsync(dst, src, nb, d.stream)
		}
		return d.boxPlane(dst, src, w, h, rr)
	}
	Ip := [3]cu.DevicePtr{I.plane(0), I.plane(1), I.plane(2)}
	if err := d.wrap(op, d.do(func() error {
		var err error
		buf, err = d.alloc(13 * nb)
		return err
	})); err != nil {
		return err
	}
	// Given back on every path, the failed steps' included.
	defer d.do(func() error { d.put(buf, 13*nb); return nil })
	if err := d.wrap(op, d.do(func() error {
		for c := range 3 {
			if err := box(pl(c), Ip[c]); err != nil {
				return err
			}
		}
		for k, pr := range [6][2]int{{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}} {
			if err := d.launchGS("vfx_mul", n, new(kargs).p(pl(3+k)).p(Ip[pr[0]]).p(Ip[pr[1]]).l(n)); err != nil {
				return err
			}
			if err := box(pl(3+k), pl(3+k)); err != nil {
				return err
			}
		}
		return nil
	})); err != nil {
		return err
	}
	on := o.w * o.h
	for ch := range o.c {
		p := s.plane(ch)
		if err := d.wrap(op, d.do(func() error {
			for c := range 3 {
				if err := d.launchGS("vfx_mul", n, new(kargs).p(pl(10+c)).p(Ip[c]).p(p).l(n)); err != nil {
					return err
				}
				if err := box(pl(10+c), pl(10+c)); err != nil {
					return err
				}
			}
			if err := box(pl(9), p); err != nil {
				return err
			}
			if err := d.launchGS("vfx_guided3_ab", n, new(kargs).p(buf).l(n).d(float64(eps))); err != nil {
				return err
			}
			for _, k := range []int{10, 11, 12, 9} {
				if err := box(pl(k), pl(k)); err != nil {
					return err
				}
			}
			if !fast {
				return d.launchGS("vfx_guided3_out", n, new(kargs).p(o.plane(ch)).p(buf).p(Ip[0]).p(Ip[1]).p(Ip[2]).l(n))
			}
			// a (r, g, b) and b into the 4-channel coefficients' image.
			for c, k := range []int{10, 11, 12, 9} {
				if err := cu.MemcpyDtoDAsync(ab.plane(c), pl(k), nb, d.stream); err != nil {
					return err
				}
			}
			return nil
		})); err != nil {
			return err
		}
		if !fast {
			continue
		}
		if err := d.ResizeBilinear(up, ab); err != nil {
			return err
		}
		if err := d.wrap(op, d.do(func() error {
			return d.launchGS("vfx_guided3_apply", on, new(kargs).p(o.plane(ch)).p(up.ptr).p(g.plane(0)).p(g.plane(1)).p(g.plane(2)).l(on))
		})); err != nil {
			return err
		}
	}
	return nil
}

// Composite: bit-identical to the CPU.
func (d *CUDA) Composite(dst, fg, bg, alpha Image) error {
	const op = "Composite"
	o, f, err := d.pair(op, dst, fg)
	if err != nil {
		return err
	}
	if f.c != o.c {
		return d.shapeErr(op, "fg %s, dst %s", cdims(f), cdims(o))
	}
	a, err := d.opt(op, "alpha", alpha)
	if err != nil {
		return err
	}
	if a == nil {
		b, err := d.opt(op, "bg", bg)
		if err != nil {
			return err
		}
		if b != nil && (b.w != o.w || b.h != o.h || b.c != o.c) {
			return d.shapeErr(op, "bg %s, dst %s", cdims(b), cdims(o))
		}
		return d.wrap(op, d.do(func() error { return d.copyImg(o, f) }))
	}
	b, err := d.img(op, "bg", bg)
	if err != nil {
		return err
	}
	if b.c != o.c {
		return d.shapeErr(op, "bg %s, dst %s", cdims(b), cdims(o))
	}
	if err := d.chans(op, "alpha", a, 1); err != nil {
		return err
	}
	if err := d.same(op, o, []string{"bg", "alpha"}, b, a); err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		return d.launchGS("vfx_composite", o.n(), new(kargs).p(o.ptr).p(f.ptr).p(b.ptr).p(a.ptr).l(o.n()).i(o.c))
	}))
}

// LightWrap: bit-identical to the CPU.
func (d *CUDA) LightWrap(dst, comp, bgBlur, alpha, alphaBlur Image, strength float32) error {
	const op = "LightWrap"
	o, s, err := d.pair(op, dst, comp)
	if err != nil {
		return err
	}
	bb, err := d.img(op, "bgBlur", bgBlur)
	if err != nil {
		return err
	}
	a, err := d.img(op, "alpha", alpha)
	if err != nil {
		return err
	}
	ab, err := d.img(op, "alphaBlur", alphaBlur)
	if err != nil {
		return err
	}
	if s.c != o.c || bb.c != o.c {
		return d.shapeErr(op, "comp %s, bgBlur %s, dst %s", cdims(s), cdims(bb), cdims(o))
	}
	if err := d.chans(op, "alpha", a, 1); err != nil {
		return err
	}
	if err := d.chans(op, "alphaBlur", ab, 1); err != nil {
		return err
	}
	if err := d.same(op, o, []string{"bgBlur", "alpha", "alphaBlur"}, bb, a, ab); err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		return d.launchGS("vfx_lightwrap", o.n(), new(kargs).p(o.ptr).p(s.ptr).p(bb.ptr).p(a.ptr).p(ab.ptr).l(o.n()).i(o.c).f(strength))
	}))
}

// RatioRelight: bit-identical to the CPU.
func (d *CUDA) RatioRelight(dst, src, eNew, eOld, alpha Image, eps, maxGain float32) error {
	const op = "RatioRelight"
	o, s, err := d.pair(op, dst, src)
	if err != nil {
		return err
	}
	en, err := d.img(op, "eNew", eNew)
	if err != nil {
		return err
	}
	eo, err := d.img(op, "eOld", eOld)
	if err != nil {
		return err
	}
	a, err := d.opt(op, "alpha", alpha)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return d.shapeErr(op, "src %s, dst %s", cdims(s), cdims(o))
	}
	if en.c != 1 && en.c != s.c {
		return d.shapeErr(op, "eNew has %d channels, src %d", en.c, s.c)
	}
	if eo.c != 1 && eo.c != en.c {
		return d.shapeErr(op, "eOld has %d channels, eNew %d", eo.c, en.c)
	}
	if err := d.chans(op, "alpha", a, 1); err != nil {
		return err
	}
	if err := d.same(op, o, []string{"eNew", "eOld", "alpha"}, en, eo, a); err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		return d.launchGS("vfx_ratio_relight", o.n(), new(kargs).p(o.ptr).p(s.ptr).p(en.ptr).p(eo.ptr).p(ptrOf(a)).
			l(o.n()).i(o.c).i(en.c).i(eo.c).f(eps).f(maxGain))
	}))
}

// reduce runs a reduction kernel with nv partial sums per block over n
// items and returns the partials summed in block order (waits).
func (d *CUDA) reduce(name string, n, nv int, args func(out cu.DevicePtr) *kargs) ([]float64, error) {
	blocks := max(1, min((n+255)/256, 1024))
	nb := int64(blocks * nv * 8)
	out, err := d.alloc(nb)
	if err != nil {
		return nil, err
	}
	defer d.put(out, nb)
	f, err := d.fn(name)
	if err != nil {
		return nil, err
	}
	if err := launchRaw(f, blocks, 1, 256, 1, d.stream, args(out)); err != nil {
		return nil, err
	}
	b, err := d.fetch(out, int(nb))
	if err != nil {
		return nil, err
	}
	parts := unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), blocks*nv)
	sums := make([]float64, nv)
	for blk := range blocks {
		for k := range nv {
			sums[k] += parts[blk*nv+k]
		}
	}
	return sums, nil
}

// Sum returns the float64 sum of each channel (block partials in float64:
// equal to the CPU's up to float64 rounding).
func (d *CUDA) Sum(src Image) ([]float64, error) {
	s, err := d.img("Sum", "src", src)
	if err != nil {
		return nil, err
	}
	var out []float64
	err = d.do(func() error {
		sums, err := d.reduce("vfx_sum", s.n(), 4, func(o cu.DevicePtr) *kargs {
			return new(kargs).p(o).p(s.ptr).l(s.n()).i(s.c)
		})
		if err == nil {
			out = sums[:s.c]
		}
		return err
	})
	return out, d.wrap("Sum", err)
}

// MaskedStats: mask-weighted mean and std (see the CPU's MaskedStats).
func (d *CUDA) MaskedStats(src, mask Image) (Stats, error) {
	const op = "MaskedStats"
	s, err := d.img(op, "src", src)
	if err != nil {
		return Stats{}, err
	}
	m, err := d.opt(op, "mask", mask)
	if err != nil {
		return Stats{}, err
	}
	if err := d.chans(op, "mask", m, 1); err != nil {
		return Stats{}, err
	}
	if err := d.same(op, s, []string{"mask"}, m); err != nil {
		return Stats{}, err
	}
	if s.c > 4 {
		return Stats{}, d.shapeErr(op, "%d channels", s.c)
	}
	var sums []float64
	err = d.do(func() error {
		var err error
		sums, err = d.reduce("vfx_masked_stats", s.n(), 9, func(o cu.DevicePtr) *kargs {
			return new(kargs).p(o).p(s.ptr).p(ptrOf(m)).l(s.n()).i(s.c)
		})
		return err
	})
	if err != nil {
		return Stats{}, d.wrap(op, err)
	}
	nc := s.c
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

// SHProjectEnv: see the CPU's; the sums are float64 on the device.
func (d *CUDA) SHProjectEnv(src Image, front float32) ([3]SH9, error) {
	const op = "SHProjectEnv"
	var out [3]SH9
	s, err := d.img(op, "src", src)
	if err != nil {
		return out, err
	}
	if err := d.chans(op, "src", s, 3); err != nil {
		return out, err
	}
	var sums []float64
	err = d.do(func() error {
		var err error
		sums, err = d.reduce("vfx_sh_project", s.n(), 27, func(o cu.DevicePtr) *kargs {
			return new(kargs).p(o).p(s.ptr).i(s.w).i(s.h)
		})
		return err
	})
	if err != nil {
		return out, d.wrap(op, err)
	}
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

// SHNormalEquations: see the CPU's; float64 sums on the device.
func (d *CUDA) SHNormalEquations(signal, normals, mask Image) (ata [81]float64, atb [9]float64, err error) {
	const op = "SHNormalEquations"
	s, err := d.img(op, "signal", signal)
	if err != nil {
		return ata, atb, err
	}
	n, err := d.img(op, "normals", normals)
	if err != nil {
		return ata, atb, err
	}
	m, err := d.opt(op, "mask", mask)
	if err != nil {
		return ata, atb, err
	}
	if err := d.chans(op, "signal", s, 1); err != nil {
		return ata, atb, err
	}
	if err := d.chans(op, "normals", n, 3); err != nil {
		return ata, atb, err
	}
	if err := d.chans(op, "mask", m, 1); err != nil {
		return ata, atb, err
	}
	if err := d.same(op, s, []string{"normals", "mask"}, n, m); err != nil {
		return ata, atb, err
	}
	var sums []float64
	err = d.do(func() error {
		var err error
		sums, err = d.reduce("vfx_sh_normal_eq", s.n(), 54, func(o cu.DevicePtr) *kargs {
			return new(kargs).p(o).p(s.ptr).p(n.ptr).p(ptrOf(m)).l(s.n())
		})
		return err
	})
	if err != nil {
		return ata, atb, d.wrap(op, err)
	}
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

// shCoeffsArg is the C struct SHCoeffs.
type shCoeffsArg [4][9]float32

// SHEval: float32 basis, bit-identical to the CPU.
func (d *CUDA) SHEval(dst, normals Image, coeffs []SH9) error {
	const op = "SHEval"
	o, err := d.img(op, "dst", dst)
	if err != nil {
		return err
	}
	n, err := d.img(op, "normals", normals)
	if err != nil {
		return err
	}
	if err := d.chans(op, "normals", n, 3); err != nil {
		return err
	}
	if len(coeffs) != o.c {
		return d.shapeErr(op, "%d coefficient sets for %d channels", len(coeffs), o.c)
	}
	if err := d.same(op, o, []string{"normals"}, n); err != nil {
		return err
	}
	var cf shCoeffsArg
	for c := range coeffs {
		cf[c] = coeffs[c]
	}
	return d.wrap(op, d.do(func() error {
		return d.launchGS("vfx_sh_eval", o.n(), structArg(new(kargs).p(o.ptr).p(n.ptr).l(o.n()).i(o.c), &cf))
	}))
}

// labMatsArg is the C struct LabMats.
type labMatsArg struct{ M, A [9]float64 }

// LabStats: see the CPU's; float64 log and sums on the device.
func (d *CUDA) LabStats(src, mask Image) (LabStats, error) {
	const op = "LabStats"
	var st LabStats
	s, err := d.img(op, "src", src)
	if err != nil {
		return st, err
	}
	m, err := d.opt(op, "mask", mask)
	if err != nil {
		return st, err
	}
	if err := d.chans(op, "src", s, 3); err != nil {
		return st, err
	}
	if err := d.chans(op, "mask", m, 1); err != nil {
		return st, err
	}
	if err := d.same(op, s, []string{"mask"}, m); err != nil {
		return st, err
	}
	mats := labMatsArg{M: rows.LabM, A: rows.LabA}
	var sums []float64
	err = d.do(func() error {
		var err error
		sums, err = d.reduce("vfx_lab_stats", s.n(), 7, func(o cu.DevicePtr) *kargs {
			return structArg(new(kargs).p(o).p(s.ptr).p(ptrOf(m)).l(s.n()), &mats)
		})
		return err
	})
	if err != nil {
		return st, d.wrap(op, err)
	}
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

// labXferArg is the C struct LabXfer.
type labXferArg struct {
	P  [9]float64
	Q  [3]float64
	Mi [9]float64
	M  [9]float64
	S  float64
}

// LabTransfer: the CPU's composition, float64 log/exp on the device.
func (d *CUDA) LabTransfer(dst, src, mask Image, from, to LabStats, strength float32) error {
	const op = "LabTransfer"
	o, s, err := d.pair(op, dst, src)
	if err != nil {
		return err
	}
	m, err := d.opt(op, "mask", mask)
	if err != nil {
		return err
	}
	if err := d.chans(op, "src", s, 3); err != nil {
		return err
	}
	if err := d.chans(op, "dst", o, 3); err != nil {
		return err
	}
	if err := d.chans(op, "mask", m, 1); err != nil {
		return err
	}
	if err := d.same(op, o, []string{"mask"}, m); err != nil {
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
	x := labXferArg{P: rows.Mul3(Ainv, rows.Mul3(D, rows.LabA)), Mi: rows.Inv3(rows.LabM), M: rows.LabM, S: float64(strength)}
	for r := range 3 {
		x.Q[r] = Ainv[r*3]*off[0] + Ainv[r*3+1]*off[1] + Ainv[r*3+2]*off[2]
	}
	return d.wrap(op, d.do(func() error {
		return d.launchGS("vfx_lab_transfer", o.n(), structArg(new(kargs).p(o.ptr).p(s.ptr).p(ptrOf(m)).l(o.n()), &x))
	}))
}

// hueBoundArg is pixel.cu's HueArg.
type hueBoundArg struct {
	X, Xi                                   [9]float64
	MaxHue, CosMax, SinMax, C0, C1, MaxGain float64
}

// HueBound: the CPU's arithmetic (kernels/cpuref/cpu_hue.go, kernels/rows/hue.go) in float64 on the device.
func (d *CUDA) HueBound(dst, gain, ref, mask Image, p HueParams) error {
	const op = "HueBound"
	o, s, err := d.pair(op, dst, gain)
	if err != nil {
		return err
	}
	r, err := d.img(op, "ref", ref)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		name string
		im   *cudaImage
	}{{"gain", s}, {"dst", o}, {"ref", r}} {
		if err := d.chans(op, c.name, c.im, 3); err != nil {
			return err
		}
	}
	m, err := d.opt(op, "mask", mask)
	if err != nil {
		return err
	}
	if err := d.chans(op, "mask", m, 1); err != nil {
		return err
	}
	if err := d.same(op, o, []string{"ref", "mask"}, r, m); err != nil {
		return err
	}
	if r == o || m == o {
		return d.shapeErr(op, "ref or mask aliases dst")
	}
	h, ok := cpuref.NewHueArgs(p)
	if !ok {
		return d.shapeErr(op, "params %+v: %s", p, rows.HueParamsRule)
	}
	x := hueBoundArg{X: rows.HueXYZ, Xi: rows.HueXYZInv, MaxHue: h.MaxHue, CosMax: h.CosMax, SinMax: h.SinMax, C0: h.C0, C1: h.C1, MaxGain: h.MaxGain}
	return d.wrap(op, d.do(func() error {
		return d.launchGS("vfx_hue_bound", o.n(), structArg(new(kargs).p(o.ptr).p(s.ptr).p(r.ptr).p(ptrOf(m)).l(o.n()), &x))
	}))
}

// DistanceTransform: exact EDT (column scans, then the row lower
// envelope in float64), bit-identical to the CPU.
func (d *CUDA) DistanceTransform(dst, mask Image, threshold float32) error {
	const op = "DistanceTransform"
	o, s, err := d.pair(op, dst, mask)
	if err != nil {
		return err
	}
	if err := d.chans(op, "mask", s, 1); err != nil {
		return err
	}
	if err := d.chans(op, "dst", o, 1); err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		w, h := o.w, o.h
		sb := int64(w)*int64(h)*8*2 + int64(w+1)*int64(h)*8 + 256
		scr, err := d.alloc(sb)
		if err != nil {
			return err
		}
		defer d.put(scr, sb)
		flag := scr
		f := scr + 256
		z := f + cu.DevicePtr(int64(w)*int64(h)*8)
		v := z + cu.DevicePtr(int64(w+1)*int64(h)*8)
		if err := cu.MemsetD32Async(flag, 0, 1, d.stream); err != nil {
			return err
		}
		if err := d.launch1("vfx_edt_cols", w, new(kargs).p(o.ptr).p(s.ptr).i(w).i(h).f(threshold).p(flag)); err != nil {
			return err
		}
		return d.launch1("vfx_edt_rows", h, new(kargs).p(o.ptr).i(w).i(h).p(f).p(z).p(v).p(flag))
	}))
}

// NormalsFromMatte: bit-identical to the CPU.
func (d *CUDA) NormalsFromMatte(dst, dist, detail Image, radius, detailStrength float32) error {
	const op = "NormalsFromMatte"
	o, ds, err := d.pair(op, dst, dist)
	if err != nil {
		return err
	}
	dt, err := d.opt(op, "detail", detail)
	if err != nil {
		return err
	}
	if err := d.chans(op, "dist", ds, 1); err != nil {
		return err
	}
	if err := d.chans(op, "dst", o, 3); err != nil {
		return err
	}
	if err := d.chans(op, "detail", dt, 1); err != nil {
		return err
	}
	if err := d.same(op, o, []string{"detail"}, dt); err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		nb := int64(o.n()) * 4
		H, err := d.alloc(nb)
		if err != nil {
			return err
		}
		defer d.put(H, nb)
		if err := d.launchGS("vfx_normals_height", o.n(), new(kargs).p(H).p(ds.ptr).p(ptrOf(dt)).l(o.n()).f(radius).f(detailStrength)); err != nil {
			return err
		}
		return d.launch2("vfx_normals", o.w, o.h, new(kargs).p(o.ptr).p(H).p(ds.ptr).i(o.w).i(o.h))
	}))
}

// gcArg is the C struct GC.
type gcArg struct {
	src, alpha, gl, bg, bb, abl cu.DevicePtr
	gx, gy, ax, ay              cu.DevicePtr
	w, h, glw, glh, ablw, ablh  int32
	wrap, maxV                  float32
	fm, bm, sh                  cu.DevicePtr // CompositeLook (0 = none)
	gr                          cu.DevicePtr // CompositeLook.Grain (0 = none)
	grw, grh, grx, gry          int32
	grain                       float32
	pdx, pdy                    float32      // CompositeLook.PlateX, PlateY
	wl                          cu.DevicePtr // CompositeLook.WrapLow (0 = none)
	wx, wy                      cu.DevicePtr // its bilinear tables
	wlw, wlh                    int32
	fadeInv                     float32 // 1/CompositeLook.EdgeFade (0 = none)
}

// gcLook checks GainCompositeLook's optional inputs (the CPU's setLook
// rules) and records them in j; without alpha they are ignored.
func (d *CUDA) gcLook(op string, j *gcArg, gainLow Image, look CompositeLook) error {
	gl, err := d.img(op, "gainLow", gainLow)
	if err != nil {
		return err
	}
	fm, err := d.opt(op, "FgLow", look.FgLow)
	if err != nil {
		return err
	}
	bm, err := d.opt(op, "BgOldLow", look.BgOldLow)
	if err != nil {
		return err
	}
	sh, err := d.opt(op, "ShadowLow", look.ShadowLow)
	if err != nil {
		return err
	}
	if (fm == nil) != (bm == nil) {
		return d.shapeErr(op, "FgLow and BgOldLow go together")
	}
	if err := d.chans(op, "FgLow", fm, 3); err != nil {
		return err
	}
	if err := d.chans(op, "BgOldLow", bm, 3); err != nil {
		return err
	}
	if err := d.chans(op, "ShadowLow", sh, 1); err != nil {
		return err
	}
	if err := d.same(op, gl, []string{"FgLow", "BgOldLow", "ShadowLow"}, fm, bm, sh); err != nil {
		return err
	}
	if j.alpha != 0 {
		j.fm, j.bm, j.sh = ptrOf(fm), ptrOf(bm), ptrOf(sh)
	}
	if look.GrainAmount > 0 {
		gr, err := d.opt(op, "Grain", look.Grain)
		if err != nil {
			return err
		}
		if gr == nil {
			return d.shapeErr(op, "GrainAmount without Grain")
		}
		if err := d.chans(op, "Grain", gr, 1); err != nil {
			return err
		}
		if look.GrainX < 0 || look.GrainY < 0 {
			return d.shapeErr(op, "negative grain offset")
		}
		if j.alpha != 0 {
			j.gr, j.grain = gr.ptr, look.GrainAmount
			j.grw, j.grh = int32(gr.w), int32(gr.h)
			j.grx, j.gry = int32(look.GrainX%gr.w), int32(look.GrainY%gr.h)
		}
	}
	if look.PlateX != 0 || look.PlateY != 0 {
		if !finite32(look.PlateX) || !finite32(look.PlateY) {
			return d.shapeErr(op, "plate offset %v, %v is not finite", look.PlateX, look.PlateY)
		}
		if j.alpha != 0 {
			j.pdx, j.pdy = look.PlateX, look.PlateY
		}
	}
	wl, err := d.opt(op, "WrapLow", look.WrapLow)
	if err != nil {
		return err
	}
	if err := d.chans(op, "WrapLow", wl, 3); err != nil {
		return err
	}
	if wl != nil && j.alpha != 0 {
		j.wl, j.wlw, j.wlh = wl.ptr, int32(wl.w), int32(wl.h)
	}
	if e := look.EdgeFade; e != 0 {
		if !(e > 0 && e <= 1) {
			return d.shapeErr(op, "EdgeFade %v is not in [0, 1]", e)
		}
		if j.alpha != 0 {
			j.fadeInv = 1 / e
		}
	}
	return nil
}

// compositeJob validates GainComposite's inputs against a w x h output (the
// CPU's newCompositeJob rules) and returns the kernel argument.
func (d *CUDA) compositeJob(op string, w, h int, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, wrap, maxValue float32) (*gcArg, error) {
	s, err := d.img(op, "src", src)
	if err != nil {
		return nil, err
	}
	if s.w != w || s.h != h {
		return nil, d.shapeErr(op, "src %s, dst %dx%d", cdims(s), w, h)
	}
	gl, err := d.img(op, "gainLow", gainLow)
	if err != nil {
		return nil, err
	}
	a, err := d.opt(op, "alpha", alpha)
	if err != nil {
		return nil, err
	}
	b, err := d.opt(op, "bg", bg)
	if err != nil {
		return nil, err
	}
	bb, err := d.opt(op, "bgBlur", bgBlur)
	if err != nil {
		return nil, err
	}
	abl, err := d.opt(op, "alphaBlurLow", alphaBlurLow)
	if err != nil {
		return nil, err
	}
	if a != nil && b == nil {
		return nil, d.shapeErr(op, "bg is required when alpha is given")
	}
	for _, x := range []struct {
		n string
		m *cudaImage
	}{{"src", s}, {"gainLow", gl}, {"bg", b}, {"bgBlur", bb}} {
		if err := d.chans(op, x.n, x.m, 3); err != nil {
			return nil, err
		}
	}
	if err := d.chans(op, "alpha", a, 1); err != nil {
		return nil, err
	}
	if err := d.chans(op, "alphaBlurLow", abl, 1); err != nil {
		return nil, err
	}
	if err := d.same(op, s, []string{"alpha", "bg", "bgBlur"}, a, b, bb); err != nil {
		return nil, err
	}
	j := &gcArg{src: s.ptr, alpha: ptrOf(a), gl: gl.ptr, bg: ptrOf(b), bb: ptrOf(bb), abl: ptrOf(abl),
		w: int32(w), h: int32(h), glw: int32(gl.w), glh: int32(gl.h), wrap: wrap, maxV: maxValue}
	if bb == nil || abl == nil {
		j.bb, j.abl = 0, 0
	} else {
		j.ablw, j.ablh = int32(abl.w), int32(abl.h)
	}
	return j, nil
}

// gcTables fills the bilinear tables of j (on the device thread).
func (d *CUDA) gcTables(j *gcArg) error {
	var err error
	if j.gx, err = d.bilin(int(j.w), int(j.glw)); err != nil {
		return err
	}
	if j.gy, err = d.bilin(int(j.h), int(j.glh)); err != nil {
		return err
	}
	if j.abl != 0 {
		if j.ax, err = d.bilin(int(j.w), int(j.ablw)); err != nil {
			return err
		}
		if j.ay, err = d.bilin(int(j.h), int(j.ablh)); err != nil {
			return err
		}
	}
	if j.wl != 0 {
		if j.wx, err = d.bilin(int(j.w), int(j.wlw)); err != nil {
			return err
		}
		if j.wy, err = d.bilin(int(j.h), int(j.wlh)); err != nil {
			return err
		}
	}
	return nil
}

// GainComposite: the fused finishing pass, one kernel, bit-identical to
// the CPU (alpha == 0 gives bg exactly; alpha == 1 does not read bg).
func (d *CUDA) GainComposite(dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, wrap, maxValue float32) error {
	return d.gainComposite("GainComposite", dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, CompositeLook{}, wrap, maxValue)
}

// GainCompositeLook: GainComposite with foreground estimation in the soft
// band and a shadow on the background, in the same kernel.
func (d *CUDA) GainCompositeLook(dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error {
	return d.gainComposite("GainCompositeLook", dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, look, wrap, maxValue)
}

func (d *CUDA) gainComposite(op string, dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error {
	o, err := d.img(op, "dst", dst)
	if err != nil {
		return err
	}
	if err := d.chans(op, "dst", o, 3); err != nil {
		return err
	}
	j, err := d.compositeJob(op, o.w, o.h, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, wrap, maxValue)
	if err != nil {
		return err
	}
	if err := d.gcLook(op, j, gainLow, look); err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		if err := d.gcTables(j); err != nil {
			return err
		}
		return d.launch2("vfx_gain_composite", o.w, o.h, structArg(new(kargs).p(o.ptr), j))
	}))
}

// GainCompositeDownload: GainComposite converted to 8-bit codes in the
// same kernel; only the 8-bit planes leave the device.
func (d *CUDA) GainCompositeDownload(dst *frame.HostFrame, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, wrap, maxValue float32) error {
	return d.gainCompositeDownload("GainCompositeDownload", dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, CompositeLook{}, wrap, maxValue)
}

// GainCompositeLookDownload: GainCompositeLook converted to 8-bit codes
// in the same kernel.
func (d *CUDA) GainCompositeLookDownload(dst *frame.HostFrame, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error {
	return d.gainCompositeDownload("GainCompositeLookDownload", dst, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, look, wrap, maxValue)
}

func (d *CUDA) gainCompositeDownload(op string, dst *frame.HostFrame, src, alpha, gainLow, bg, bgBlur, alphaBlurLow Image, look CompositeLook, wrap, maxValue float32) error {
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: %s: %w", d.name, op, err)
	}
	switch dst.Format {
	case frame.YUV420P, frame.RGB24:
	case frame.Gray8:
		return d.shapeErr(op, "3 channels into gray8")
	default:
		return fmt.Errorf("kernels: %s: %s: unsupported format %v", d.name, op, dst.Format)
	}
	j, err := d.compositeJob(op, dst.Width, dst.Height, src, alpha, gainLow, bg, bgBlur, alphaBlurLow, wrap, maxValue)
	if err != nil {
		return err
	}
	if err := d.gcLook(op, j, gainLow, look); err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		if err := d.gcTables(j); err != nil {
			return err
		}
		return d.downloadWith(dst, func(raw, u, v cu.DevicePtr) error {
			if dst.Format == frame.RGB24 {
				return d.launch2("vfx_gain_composite_rgb", dst.Width, dst.Height, new(kargs).p(raw).put(structBytes(j)).p(d.lut))
			}
			return d.launch2("vfx_gain_composite_yuv", (dst.Width+1)/2, (dst.Height+1)/2,
				structArg(new(kargs).p(raw).p(u).p(v).put(structBytes(j)).p(d.lut), d.yuvOut(dst)))
		})
	}))
}

func structBytes[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// finite32 reports whether v is neither NaN nor infinite.
func finite32(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
