//go:build !cuda

package kernels

// CUDABuilt reports whether this binary has the CUDA backend (the cuda
// build tag). The default build does not: gorgonia.org/cu's package
// init() exits the process on a machine without a GPU, so cu is only
// linked into cuda builds.
const CUDABuilt = false

// NewCUDA fails with ErrNoCUDA in a build without the cuda tag.
func NewCUDA(ordinal int) (Device, error) { return nil, ErrNoCUDA }

// CUDADeviceCount returns 0 and ErrNoCUDA in a build without the cuda tag.
func CUDADeviceCount() (int, error) { return 0, ErrNoCUDA }
