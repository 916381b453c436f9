//go:build cuda

package kernels

// Place's rows of the CUDA-against-CPU table: bit-identical (tol 0),
// shrinking (area) and enlarging (bilinear), colour (edge) and matte (0
// outside).
func init() {
	opCases = append(opCases,
		imageOp("Place/shrink", 0, 3, func(o Ops, _ Device, dst Image, in *opInputs, up func([]float32) Image) error {
			return o.(PlaceOps).Place(dst, up(in.rgb), Placement{Scale: 0.6, X: 0.13, Y: -0.21}, false)
		}),
		imageOp("Place/enlarge", 0, 3, func(o Ops, _ Device, dst Image, in *opInputs, up func([]float32) Image) error {
			return o.(PlaceOps).Place(dst, up(in.rgb), Placement{Scale: 2.3, X: -0.4, Y: 0.3}, false)
		}),
		imageOp("Place/matte", 0, 1, func(o Ops, _ Device, dst Image, in *opInputs, up func([]float32) Image) error {
			return o.(PlaceOps).Place(dst, up(in.alpha), Placement{Scale: 0.45, X: 0.6, Y: 0.2}, true)
		}),
	)
}
