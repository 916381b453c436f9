//go:build cuda

package kernels

// AddGrain's row of the CUDA-against-CPU table: bit-identical (tol 0),
// in place over a copy of the source (dst is not written where a <= 0),
// with and without a matte.
func init() {
	opCases = append(opCases,
		imageOp("AddGrain", 0, 3, func(o Ops, _ Device, dst Image, in *opInputs, up func([]float32) Image) error {
			if err := o.Copy(dst, up(in.rgb)); err != nil {
				return err
			}
			return o.(GrainOps).AddGrain(dst, dst, up(in.alpha), 12345, 0.03)
		}),
		imageOp("AddGrain/noalpha", 0, 3, func(o Ops, _ Device, dst Image, in *opInputs, up func([]float32) Image) error {
			return o.(GrainOps).AddGrain(dst, up(in.rgb), nil, 7, 0.1)
		}),
	)
}
