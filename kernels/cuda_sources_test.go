package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestCUDAFatbinMatchesSources fails when kernels/cuda/*.cu or *.cuh no
// longer match the sources that kernels/cuda/vfx.fatbin was compiled from
// (the hash `make kernels` recorded in cuda_sources.go), or when the
// committed fatbin is not the one generated then. It runs in the default
// build: no CUDA toolkit or GPU is needed. Fix: run `make kernels`.
func TestCUDAFatbinMatchesSources(t *testing.T) {
	var names []string
	for _, pat := range []string{"*.cu", "*.cuh"} {
		m, err := filepath.Glob(filepath.Join("cuda", pat))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			names = append(names, filepath.Base(p))
		}
	}
	if len(names) == 0 {
		t.Fatal("no CUDA sources in kernels/cuda")
	}
	sort.Strings(names)
	// The same text as `sha256sum` prints for the sorted list.
	var listing strings.Builder
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("cuda", n))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&listing, "%x  %s\n", sha256.Sum256(b), n)
	}
	sum := sha256.Sum256([]byte(listing.String()))
	if got := hex.EncodeToString(sum[:]); got != cudaSourcesSHA256 {
		t.Fatalf("kernels/cuda sources hash %s, fatbin was built from %s: run `make kernels` and commit kernels/cuda/vfx.fatbin and kernels/cuda_sources.go", got, cudaSourcesSHA256)
	}
	fb, err := os.ReadFile(filepath.Join("cuda", "vfx.fatbin"))
	if err != nil {
		t.Fatal(err)
	}
	fsum := sha256.Sum256(fb)
	if got := hex.EncodeToString(fsum[:]); got != cudaFatbinSHA256 {
		t.Fatalf("kernels/cuda/vfx.fatbin hash %s, generated %s: run `make kernels`", got, cudaFatbinSHA256)
	}
}
