//go:build cuda

package kernels

import (
	"fmt"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/kernels/rows"
	"gorgonia.org/cu"
)

// The ScaleOps of the CUDA device (kernels/cuda/scale.cu). Like the other
// ops they validate exactly like the CPU backend and only queue work;
// SharpenDownload waits for its 8-bit planes.

// edgeTabBytes packs the tables of one UpscaleEdge axis (out outputs from
// in inputs) as [a (out) | b (out) | start (out) | off (out+1) | w]: the
// CPU's nearPairs and lanczosTaps.
func edgeTabBytes(out, in int) []byte {
	a, b := rows.NearPairs(out, in)
	t := rows.LanczosTaps(out, in, float64(in)/float64(out), 0)
	buf := append([]byte(nil), asBytes(a)...)
	buf = append(buf, asBytes(b)...)
	return append(buf, tapsBytes(t)...)
}

func (d *CUDA) edgeTab(out, in int) (cu.DevicePtr, error) {
	return d.table(fmt.Sprintf("edge:%d:%d", out, in), func() []byte { return edgeTabBytes(out, in) })
}

// UpscaleEdge: the two Lanczos-3 passes with the edge clamp fused into
// each, bit-identical to the CPU (same tables, same sums in the same
// order: interleaved pair sums along rows, one running sum down columns).
func (d *CUDA) UpscaleEdge(dst, src Image, edge float32) error {
	const op = "UpscaleEdge"
	o, s, err := d.resizeCheck(op, dst, src)
	if err != nil {
		return err
	}
	if o.w < s.w || o.h < s.h || o == s {
		return d.shapeErr(op, "src %s, dst %s (dst must not be smaller, channels equal)", cdims(s), cdims(o))
	}
	if edge != edge {
		edge = 0
	}
	edge = min(max(edge, 0), 1)
	return d.wrap(op, d.do(func() error {
		if o.w == s.w && o.h == s.h {
			return d.copyImg(o, s)
		}
		tx, err := d.edgeTab(o.w, s.w)
		if err != nil {
			return err
		}
		ty, err := d.edgeTab(o.h, s.h)
		if err != nil {
			return err
		}
		nb := int64(o.w) * int64(s.h) * int64(o.c) * 4
		tmp, err := d.alloc(nb)
		if err != nil {
			return err
		}
		defer d.put(tmp, nb)
		if err := d.launch2("vfx_upscale_rows", o.w, s.h, new(kargs).p(tmp).p(s.ptr).i(s.w).i(s.h).i(o.w).i(o.c).p(tx).f(edge)); err != nil {
			return err
		}
		return d.launch2("vfx_upscale_cols", o.w, o.h, new(kargs).p(o.ptr).p(tmp).i(o.w).i(s.h).i(o.h).i(o.c).p(ty).f(edge))
	}))
}

// Sharpen: the 3x3 binomial unsharp mask in one kernel, bit-identical to
// the CPU.
func (d *CUDA) Sharpen(dst, src Image, amount float32) error {
	const op = "Sharpen"
	o, s, err := d.pair(op, dst, src)
	if err != nil {
		return err
	}
	if o == s {
		return d.shapeErr(op, "dst aliases src")
	}
	if s.c != o.c {
		return d.shapeErr(op, "src %s, dst %s", cdims(s), cdims(o))
	}
	return d.wrap(op, d.do(func() error {
		return d.launch2("vfx_sharpen", o.w, o.h, new(kargs).p(o.ptr).p(s.ptr).i(o.w).i(o.h).i(o.c).f(amount))
	}))
}

// SharpenDownload: Sharpen converted to 8-bit codes in the same kernel
// (no full-size float intermediate); only the 8-bit planes leave the
// device. Bit-identical to the CPU. It waits for the result.
func (d *CUDA) SharpenDownload(dst *frame.HostFrame, src Image, amount float32) error {
	const op = "SharpenDownload"
	s, err := d.img(op, "src", src)
	if err != nil {
		return err
	}
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: %s: %w", d.name, op, err)
	}
	if s.w != dst.Width || s.h != dst.Height || s.c != 3 {
		return d.shapeErr(op, "image %s into frame %dx%d", cdims(s), dst.Width, dst.Height)
	}
	switch dst.Format {
	case frame.YUV420P, frame.RGB24:
	default:
		return fmt.Errorf("kernels: %s: %s: unsupported format %v", d.name, op, dst.Format)
	}
	return d.wrap(op, d.do(func() error {
		return d.downloadWith(dst, func(raw, u, v cu.DevicePtr) error {
			if dst.Format == frame.RGB24 {
				return d.launch2("vfx_sharpen_rgb", s.w, s.h, new(kargs).p(raw).p(s.ptr).i(s.w).i(s.h).f(amount).p(d.lut))
			}
			return d.launch2("vfx_sharpen_yuv", (s.w+1)/2, (s.h+1)/2,
				structArg(new(kargs).p(raw).p(u).p(v).p(s.ptr).i(s.w).i(s.h).f(amount).p(d.lut), d.yuvOut(dst)))
		})
	}))
}
