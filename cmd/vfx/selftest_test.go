package main

import (
	"strings"
	"testing"

	"github.com/vfxrender/vfx/kernels"
)

func TestSelftestCommand(t *testing.T) {
	if code, out, e := runCLI("selftest", "--backend", "cpu", "--workers", "2"); code != 0 || !strings.Contains(out, "selftest ok: cpu") {
		t.Fatalf("vfx selftest --backend cpu: exit %d, stdout %q, stderr %q", code, out, e)
	}
	if code, _, e := runCLI("selftest", "--backend", "metal"); code != 2 || !strings.Contains(e, "want auto, cpu or cuda") {
		t.Fatalf("vfx selftest --backend metal: exit %d, %q", code, e)
	}
	if code, _, e := runCLI("selftest", "--backend", "cpu", "--gpu", "1"); code != 2 || !strings.Contains(e, "--gpu") {
		t.Fatalf("vfx selftest --backend cpu --gpu 1: exit %d, %q", code, e)
	}
	if !kernels.CUDABuilt {
		code, _, e := runCLI("selftest", "--backend", "cuda")
		if code != 2 || !strings.Contains(e, "built without CUDA; use vfx-cuda") {
			t.Fatalf("vfx selftest --backend cuda in the default build: exit %d, %q", code, e)
		}
		for _, cmd := range []string{"render", "serve"} {
			if code, _, e := runCLI(cmd, "--backend", "cuda"); code != 2 || !strings.Contains(e, "built without CUDA") {
				t.Errorf("vfx %s --backend cuda: exit %d, %q", cmd, code, e)
			}
		}
	}
}
