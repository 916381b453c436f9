//go:build cuda

package kernels

// WrapLight's rows of the CUDA-against-CPU table: bit-identical (tol 0),
// with the matte's exact 0 and 1 regions (1 - wide below eps), and in
// place; and GainCompositeLook with the masked wrap's light
// (CompositeLook.WrapLow: bgBlur and alphaBlurLow not read, and not
// moved by the plate offset), and with CompositeLook.EdgeFade.
func init() {
	opCases = append(opCases,
		imageOp("WrapLight", 0, 3, func(o Ops, _ Device, dst Image, in *opInputs, up func([]float32) Image) error {
			return o.(WrapOps).WrapLight(dst, up(in.rgb), up(in.alpha), up(in.gray), 1e-3)
		}),
		imageOp("WrapLight/inplace", 0, 3, func(o Ops, _ Device, dst Image, in *opInputs, up func([]float32) Image) error {
			if err := o.Copy(dst, up(in.rgb)); err != nil {
				return err
			}
			return o.(WrapOps).WrapLight(dst, dst, up(in.gray), up(in.alpha), 0.25)
		}),
		imageOp("GainCompositeLook/wraplow", 0, 3, func(o Ops, _ Device, dst Image, in *opInputs, up func([]float32) Image) error {
			g := up(in.gainLow)
			look := CompositeLook{FgLow: g, BgOldLow: up(in.gainLow), ShadowLow: up(in.alphaLow), WrapLow: up(in.gainLow)}
			return o.GainCompositeLook(dst, up(in.rgb), up(in.alpha), g, up(in.rgb2), nil, nil, look, 0.4, 1.5)
		}),
		imageOp("GainCompositeLook/wraplow-plate", 0, 3, func(o Ops, _ Device, dst Image, in *opInputs, up func([]float32) Image) error {
			look := CompositeLook{ShadowLow: up(in.alphaLow), WrapLow: up(in.gainLow), PlateX: -3.37, PlateY: 1.61}
			return o.GainCompositeLook(dst, up(in.rgb), up(in.alpha), up(in.gainLow), up(in.rgb2), up(in.rgb), up(in.alphaLow), look, 0.4, 1.5)
		}),
		// CompositeLook.EdgeFade (issue 31's soft band), with the
		// estimate and the masked wrap, and alone.
		imageOp("GainCompositeLook/edgefade", 0, 3, func(o Ops, _ Device, dst Image, in *opInputs, up func([]float32) Image) error {
			g := up(in.gainLow)
			look := CompositeLook{FgLow: g, BgOldLow: up(in.gainLow), ShadowLow: up(in.alphaLow), WrapLow: up(in.gainLow), EdgeFade: 0.5}
			return o.GainCompositeLook(dst, up(in.rgb), up(in.alpha), g, up(in.rgb2), nil, nil, look, 0.4, 1.5)
		}),
		imageOp("GainCompositeLook/edgefade-only", 0, 3, func(o Ops, _ Device, dst Image, in *opInputs, up func([]float32) Image) error {
			look := CompositeLook{EdgeFade: 0.3}
			return o.GainCompositeLook(dst, up(in.rgb), up(in.alpha), up(in.gainLow), up(in.rgb2), up(in.rgb), up(in.alphaLow), look, 0.4, 1.5)
		}),
	)
}
