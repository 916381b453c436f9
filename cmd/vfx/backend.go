package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render"
)

// Backend selection, shared by vfx render, worker, serve and selftest:
// --backend auto|cpu|cuda and --gpu N (the CUDA device ordinal among those
// CUDA_VISIBLE_DEVICES leaves visible; -1 = device 0). auto picks cuda
// when this binary is a cuda build (bin/vfx-cuda) and a device answers,
// else cpu.

const backendHelp = "compute backend: auto (cuda when built with it and a GPU answers, else cpu), cpu or cuda"
const gpuHelp = "CUDA device ordinal among the visible ones (CUDA_VISIBLE_DEVICES); -1 means 0"

// checkBackend validates --backend and --gpu as a usage error.
func checkBackend(backend string, gpu int) error {
	switch backend {
	case "auto", "cpu":
	case "cuda":
		if !kernels.CUDABuilt {
			return usageError{"--backend cuda: this binary was built without CUDA; use vfx-cuda (make build-cuda)"}
		}
	default:
		return usageError{fmt.Sprintf("--backend %q: want auto, cpu or cuda", backend)}
	}
	if gpu < -1 {
		return usageError{fmt.Sprintf("--gpu %d: want a device ordinal (0 or more)", gpu)}
	}
	if backend == "cpu" && gpu >= 0 {
		return usageError{"--gpu needs --backend cuda or auto"}
	}
	return nil
}

// openBackend opens the compute device that backend and gpu select.
func openBackend(backend string, gpu, cpuWorkers int) (kernels.Device, error) {
	if err := checkBackend(backend, gpu); err != nil {
		return nil, err
	}
	ord := max(gpu, 0)
	switch backend {
	case "cuda":
		dev, err := kernels.NewCUDA(ord)
		if err != nil {
			return nil, fmt.Errorf("cuda backend: %w", err)
		}
		return dev, nil
	case "auto":
		if kernels.CUDABuilt {
			if dev, err := kernels.NewCUDA(ord); err == nil {
				return dev, nil
			} else if gpu >= 0 {
				return nil, fmt.Errorf("--gpu %d: %w", gpu, err)
			}
		}
	}
	return kernels.NewCPU(cpuWorkers), nil
}

// cmdSelftest loads the backend, renders a small job on it and compares it
// with the CPU reference: exit 0 and one line on stdout when it matches,
// exit 1 with a one-line reason when it does not.
func cmdSelftest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("selftest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backend := fs.String("backend", "auto", backendHelp)
	gpu := fs.Int("gpu", -1, gpuHelp)
	workers := fs.Int("workers", 0, "CPU compute threads of a cpu backend (0 = all cores)")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	dev, err := openBackend(*backend, *gpu, *workers)
	if err != nil {
		return err
	}
	defer dev.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	res, err := render.SelfTest(ctx, dev)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("self-test on %s did not finish within %s", dev.Name(), *timeout)
		}
		return err
	}
	fmt.Fprintln(stdout, "selftest ok:", res)
	return nil
}
