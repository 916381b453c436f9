//go:build cuda

package kernels

// Clamp's row of the CUDA-against-CPU table: bit-identical (tol 0), to
// [0.2, 0.7] and in place.
func init() {
	opCases = append(opCases,
		imageOp("Clamp", 0, 3, func(o Ops, _ Device, dst Image, in *opInputs, up func([]float32) Image) error {
			return o.(ClampOps).Clamp(dst, up(in.rgb), 0.2, 0.7)
		}),
		imageOp("Clamp/inplace", 0, 3, func(o Ops, _ Device, dst Image, in *opInputs, up func([]float32) Image) error {
			if err := o.Copy(dst, up(in.rgb)); err != nil {
				return err
			}
			return o.(ClampOps).Clamp(dst, dst, 0.2, 0.7)
		}),
	)
}
