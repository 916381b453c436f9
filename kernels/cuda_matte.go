//go:build cuda

package kernels

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// The MatteOps of the CUDA device (kernels/cuda/matte.cu). Like the other
// ops they validate exactly like the CPU backend and only queue work;
// ColourHistogram waits for its sums. Gradient, Warp, FlowTensor,
// FlowMismatch, FlowSolve and ChromaKey are bit-identical to the CPU
// (float32 ops in the CPU's order, float64 division and square root,
// which are correctly rounded on both); FlowConfidence and MatteFuse use
// the device's float64 exp and log, which may differ from Go's math.Exp
// and math.Log in the last bit, so their float32 results may differ by
// one rounding step; ColourHistogram adds with float64 atomics in no
// fixed order (unit weights are exact).

// Gradient: central differences, bit-identical to the CPU.
func (d *CUDA) Gradient(dst, src Image) error {
	const op = "Gradient"
	o, s, err := d.pair(op, dst, src)
	if err != nil {
		return err
	}
	if err := d.chans(op, "dst", o, 2); err != nil {
		return err
	}
	if err := d.chans(op, "src", s, 1); err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		return d.launch2("vfx_gradient", o.w, o.h, new(kargs).p(o.ptr).p(s.ptr).i(o.w).i(o.h))
	}))
}

// Warp: bilinear sampling along a flow field, bit-identical to the CPU.
func (d *CUDA) Warp(dst, src, flow Image, scale float32) error {
	const op = "Warp"
	o, s, err := d.pair(op, dst, src)
	if err != nil {
		return err
	}
	f, err := d.img(op, "flow", flow)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return d.shapeErr(op, "src %s, dst %s", cdims(s), cdims(o))
	}
	if err := d.chans(op, "flow", f, 2); err != nil {
		return err
	}
	if err := d.same(op, o, []string{"flow"}, f); err != nil {
		return err
	}
	if o == s {
		return d.shapeErr(op, "dst aliases src")
	}
	return d.wrap(op, d.do(func() error {
		return d.launch2("vfx_warp", o.w, o.h, new(kargs).p(o.ptr).p(s.ptr).p(f.ptr).i(o.w).i(o.h).i(o.c).f(scale))
	}))
}

// Shift: bilinear sampling at a constant offset, bit-identical to the CPU
// (and to Warp with a constant flow).
func (d *CUDA) Shift(dst, src Image, dx, dy float32) error {
	const op = "Shift"
	o, s, err := d.pair(op, dst, src)
	if err != nil {
		return err
	}
	if s.c != o.c {
		return d.shapeErr(op, "src %s, dst %s", cdims(s), cdims(o))
	}
	if o == s {
		return d.shapeErr(op, "dst aliases src")
	}
	return d.wrap(op, d.do(func() error {
		return d.launch2("vfx_shift", o.w, o.h, new(kargs).p(o.ptr).p(s.ptr).i(o.w).i(o.h).i(o.c).f(dx).f(dy))
	}))
}

// FlowTensor: the structure products, bit-identical to the CPU.
func (d *CUDA) FlowTensor(dst, grad Image) error {
	const op = "FlowTensor"
	o, g, err := d.pair(op, dst, grad)
	if err != nil {
		return err
	}
	if err := d.chans(op, "dst", o, 3); err != nil {
		return err
	}
	if err := d.chans(op, "grad", g, 2); err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		return d.launchGS("vfx_flow_tensor", o.n(), new(kargs).p(o.ptr).p(g.ptr).l(o.n()))
	}))
}

// FlowMismatch: the mismatch products, bit-identical to the CPU.
func (d *CUDA) FlowMismatch(dst, grad, ref, warped Image) error {
	const op = "FlowMismatch"
	o, g, err := d.pair(op, dst, grad)
	if err != nil {
		return err
	}
	r, err := d.img(op, "ref", ref)
	if err != nil {
		return err
	}
	wp, err := d.img(op, "warped", warped)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		n string
		m *cudaImage
		c int
	}{{"dst", o, 2}, {"grad", g, 2}, {"ref", r, 1}, {"warped", wp, 1}} {
		if err := d.chans(op, c.n, c.m, c.c); err != nil {
			return err
		}
	}
	if err := d.same(op, o, []string{"ref", "warped"}, r, wp); err != nil {
		return err
	}
	return d.wrap(op, d.do(func() error {
		return d.launchGS("vfx_flow_mismatch", o.n(), new(kargs).p(o.ptr).p(g.ptr).p(r.ptr).p(wp.ptr).l(o.n()))
	}))
}

// FlowSolve: one regularised Lucas–Kanade step in float64, bit-identical
// to the CPU.
func (d *CUDA) FlowSolve(flow, tensor, mismatch Image, lambda, maxStep, scale float32) error {
	const op = "FlowSolve"
	f, err := d.img(op, "flow", flow)
	if err != nil {
		return err
	}
	t, err := d.img(op, "tensor", tensor)
	if err != nil {
		return err
	}
	m, err := d.img(op, "mismatch", mismatch)
	if err != nil {
		return err
	}
	if err := d.chans(op, "flow", f, 2); err != nil {
		return err
	}
	if err := d.chans(op, "tensor", t, 3); err != nil {
		return err
	}
	if err := d.chans(op, "mismatch", m, 2); err != nil {
		return err
	}
	if err := d.same(op, f, []string{"tensor", "mismatch"}, t, m); err != nil {
		return err
	}
	if !(scale > 0) {
		return fmt.Errorf("kernels: %s: %s: scale %g must be > 0", d.name, op, scale)
	}
	return d.wrap(op, d.do(func() error {
		return d.launchGS("vfx_flow_solve", f.n(), new(kargs).p(f.ptr).p(t.ptr).p(m.ptr).l(f.n()).f(lambda).f(maxStep).f(scale))
	}))
}

// FlowConfidence: forward–backward consistency; the float64 exp of the
// device may differ from Go's in the last bit (one float32 step at most).
func (d *CUDA) FlowConfidence(dst, fwd, bwd Image, sigma float32) error {
	const op = "FlowConfidence"
	o, f, err := d.pair(op, dst, fwd)
	if err != nil {
		return err
	}
	b, err := d.img(op, "bwd", bwd)
	if err != nil {
		return err
	}
	if err := d.chans(op, "dst", o, 1); err != nil {
		return err
	}
	if err := d.chans(op, "fwd", f, 2); err != nil {
		return err
	}
	if err := d.chans(op, "bwd", b, 2); err != nil {
		return err
	}
	if err := d.same(op, o, []string{"bwd"}, b); err != nil {
		return err
	}
	if !(sigma > 0) {
		return fmt.Errorf("kernels: %s: %s: sigma %g must be > 0", d.name, op, sigma)
	}
	s2 := float64(sigma) * float64(sigma)
	return d.wrap(op, d.do(func() error {
		return d.launch2("vfx_flow_confidence", o.w, o.h, new(kargs).p(o.ptr).p(f.ptr).p(b.ptr).i(o.w).i(o.h).d(s2))
	}))
}

// ColourHistogram: float64 atomics on the device (per-block shared
// histograms up to 16 bins); waits for the sums. Unit weights give the
// CPU's counts exactly; weighted sums differ from the CPU's banded sums
// only by float64 rounding (the order of the additions is not fixed).
func (d *CUDA) ColourHistogram(src, weight Image, bins int) ([]float64, error) {
	const op = "ColourHistogram"
	s, err := d.img(op, "src", src)
	if err != nil {
		return nil, err
	}
	wt, err := d.opt(op, "weight", weight)
	if err != nil {
		return nil, err
	}
	if err := d.chans(op, "src", s, 3); err != nil {
		return nil, err
	}
	if err := d.chans(op, "weight", wt, 1); err != nil {
		return nil, err
	}
	if err := d.same(op, s, []string{"weight"}, wt); err != nil {
		return nil, err
	}
	if bins < 2 || bins > 64 {
		return nil, fmt.Errorf("kernels: %s: %s: bins %d: want 2..64", d.name, op, bins)
	}
	cells := bins * bins * bins
	out := make([]float64, cells)
	err = d.do(func() error {
		nb := int64(cells) * 8
		hist, err := d.alloc(nb)
		if err != nil {
			return err
		}
		defer d.put(hist, nb)
		if err := cu.MemsetD32Async(hist, 0, int64(2*cells), d.stream); err != nil {
			return err
		}
		name := "vfx_colour_hist"
		if cells <= 4096 {
			name = "vfx_colour_hist_shared"
		}
		k := new(kargs).p(hist).p(s.ptr).p(ptrOf(wt)).l(s.n()).i(bins)
		f, err := d.fn(name)
		if err != nil {
			return err
		}
		// A fixed grid of at most 1024 blocks: enough to fill the device,
		// and few merges of the shared histograms.
		if err := launchRaw(f, max(1, min((s.n()+255)/256, 1024)), 1, 256, 1, d.stream, k); err != nil {
			return err
		}
		b, err := d.fetch(hist, int(nb))
		if err != nil {
			return err
		}
		copy(out, unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), cells))
		return nil
	})
	if err != nil {
		return nil, d.wrap(op, err)
	}
	return out, nil
}

// fuseArg is the C struct FuseArg of matte.cu.
type fuseArg struct {
	dst, src, prior, conf, lf, lb, lm, plate, table cu.DevicePtr
	n                                               int64
	wPrior, wGlobal, wLocal, wPlate, inv2s2, pt, ps float64
	usePrior, useTable, useLocal, usePlate, bins    int32
	_                                               int32
}

func b32(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// MatteFuse: the four log-odds terms in float64 in the CPU's order; the
// device's log and exp may differ from Go's in the last bit (one float32
// step at most). The colour table (if used) is uploaded with the call.
func (d *CUDA) MatteFuse(dst, src, prior, conf, localFg, localBg, localM, plate Image, table []float32, p FuseParams) error {
	const op = "MatteFuse"
	o, s, err := d.pair(op, dst, src)
	if err != nil {
		return err
	}
	var opt [6]*cudaImage
	names := []string{"prior", "conf", "localFg", "localBg", "localM", "plate"}
	chans := []int{1, 1, 3, 3, 1, 3}
	for k, im := range []Image{prior, conf, localFg, localBg, localM, plate} {
		if opt[k], err = d.opt(op, names[k], im); err != nil {
			return err
		}
		if err := d.chans(op, names[k], opt[k], chans[k]); err != nil {
			return err
		}
	}
	if err := d.same(op, o, names, opt[:]...); err != nil {
		return err
	}
	if err := d.chans(op, "dst", o, 1); err != nil {
		return err
	}
	if err := d.chans(op, "src", s, 3); err != nil {
		return err
	}
	pr, cf, lf, lb, lm, pl := opt[0], opt[1], opt[2], opt[3], opt[4], opt[5]
	if (lf == nil) != (lb == nil) || (lf == nil) != (lm == nil) {
		return d.shapeErr(op, "localFg, localBg and localM must be all nil or all set")
	}
	useTable := table != nil && p.Global != 0
	if useTable {
		if p.Bins < 2 || p.Bins > 64 || len(table) != p.Bins*p.Bins*p.Bins {
			return d.shapeErr(op, "table has %d entries for %d bins", len(table), p.Bins)
		}
	}
	useLocal := lf != nil && p.Local != 0
	if useLocal && !(p.LocalSigma > 0) {
		return fmt.Errorf("kernels: %s: %s: LocalSigma %g must be > 0", d.name, op, p.LocalSigma)
	}
	usePlate := pl != nil && p.Plate != 0
	if usePlate && !(p.PlateSoftness > 0) {
		return fmt.Errorf("kernels: %s: %s: PlateSoftness %g must be > 0", d.name, op, p.PlateSoftness)
	}
	usePrior := pr != nil && p.Prior != 0
	a := fuseArg{
		dst: o.ptr, src: s.ptr, prior: ptrOf(pr), conf: ptrOf(cf), lf: ptrOf(lf), lb: ptrOf(lb), lm: ptrOf(lm), plate: ptrOf(pl),
		n:      int64(o.n()),
		wPrior: float64(p.Prior), wGlobal: float64(p.Global), wLocal: float64(p.Local), wPlate: float64(p.Plate),
		inv2s2: 1 / (2 * float64(p.LocalSigma) * float64(p.LocalSigma)),
		pt:     float64(p.PlateThreshold), ps: float64(p.PlateSoftness),
		usePrior: b32(usePrior), useTable: b32(useTable), useLocal: b32(useLocal), usePlate: b32(usePlate), bins: int32(p.Bins),
	}
	return d.wrap(op, d.do(func() error {
		if useTable {
			nb := len(table) * 4
			t, err := d.alloc(int64(nb))
			if err != nil {
				return err
			}
			// Queued work that reads t runs before its next user (one stream).
			defer d.put(t, int64(nb))
			buf, i, err := d.stage(nb)
			if err != nil {
				return err
			}
			copy(buf, asBytes(table))
			if err := d.upload(t, i, nb); err != nil {
				return err
			}
			a.table = t
		}
		return d.launchGS("vfx_matte_fuse", o.n(), structArg(new(kargs), &a))
	}))
}

// ChromaKey: key and despill in one kernel, bit-identical to the CPU.
func (d *CUDA) ChromaKey(alpha, dst, src Image, p ChromaParams) error {
	const op = "ChromaKey"
	o, s, err := d.pair(op, dst, src)
	if err != nil {
		return err
	}
	a, err := d.img(op, "alpha", alpha)
	if err != nil {
		return err
	}
	if err := d.chans(op, "dst", o, 3); err != nil {
		return err
	}
	if err := d.chans(op, "src", s, 3); err != nil {
		return err
	}
	if err := d.chans(op, "alpha", a, 1); err != nil {
		return err
	}
	if err := d.same(op, o, []string{"alpha"}, a); err != nil {
		return err
	}
	if p.Channel != 1 && p.Channel != 2 {
		return fmt.Errorf("kernels: %s: %s: channel %d: want 1 (green) or 2 (blue)", d.name, op, p.Channel)
	}
	if !(p.Low >= 0 && p.High > p.Low) {
		return fmt.Errorf("kernels: %s: %s: want 0 <= Low < High, got %g, %g", d.name, op, p.Low, p.High)
	}
	c := p.Channel
	ks := p.Screen[c] - max(p.Screen[0], p.Screen[3-c])
	if !(ks > 0) {
		return fmt.Errorf("kernels: %s: %s: screen colour %v has no %d-channel dominance", d.name, op, p.Screen, c)
	}
	span := p.High - p.Low
	return d.wrap(op, d.do(func() error {
		return d.launchGS("vfx_chroma_key", o.n(), new(kargs).p(a.ptr).p(o.ptr).p(s.ptr).l(o.n()).i(c).f(ks).f(p.High).f(span))
	}))
}
