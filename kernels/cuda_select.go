package kernels

import "errors"

// ErrNoCUDA reports a binary built without the cuda tag: its NewCUDA
// always fails with it. Build bin/vfx-cuda (make build-cuda) for GPU nodes.
var ErrNoCUDA = errors.New("kernels: this binary was built without CUDA; use vfx-cuda (make build-cuda)")
