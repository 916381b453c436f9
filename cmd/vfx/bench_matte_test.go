package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchMatteFlagEdges: --fit-trees, --binary-level, the refiner's, the
// flow's, --memory-refind and --baseline at their limits. A value just
// inside gets past the flags to the dataset (here a
// folder that does not exist); one just outside is a usage error.
func TestBenchMatteFlagEdges(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-dataset")
	good, empty := filepath.Join(dir, "base.txt"), filepath.Join(dir, "empty.txt")
	row := "bear               select        A  0.957  0.965  +0.007     0.41  0.655    0.14    0.12      82      14.4     0\n"
	if err := os.WriteFile(good, []byte("clip mode fold J F\n"+row), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("means over 30 clips\nselect        30  0.849  0.826  +0.042     3.04  0.290    5.99    2.52      16.7     0.27      0  []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--fit-trees", "1000"}, true},
		{[]string{"--fit-trees", "1001"}, false},
		{[]string{"--fit-trees", "-1"}, false},
		{[]string{"--binary-level", "0.999"}, true},
		{[]string{"--binary-level", "1"}, false},
		{[]string{"--binary-level", "-0.1"}, false},
		{[]string{"--binary-level", "0.4", "--soft-band"}, false},
		{[]string{"--refine-radius", "0", "--refine-eps", "0"}, true},
		{[]string{"--refine-radius", "3", "--refine-eps", "1e-3"}, true},
		{[]string{"--refine-radius", "-1"}, false},
		{[]string{"--refine-eps", "-1e-9"}, false},
		{[]string{"--refine-eps", "NaN"}, false},
		{[]string{"--flow-levels", "8", "--flow-iterations", "32", "--flow-window", "16"}, true},
		{[]string{"--flow-levels", "9"}, false},
		{[]string{"--flow-iterations", "33"}, false},
		{[]string{"--flow-window", "17"}, false},
		{[]string{"--flow-window", "-1"}, false},
		{[]string{"--memory-refind", "on"}, true},
		{[]string{"--memory-refind", "off"}, true},
		{[]string{"--memory-refind", "yes"}, false},
		{[]string{"--every", "0"}, true},
		{[]string{"--every", "1"}, true},
		{[]string{"--every", "-1"}, false},
		{[]string{"--model-precision", "fp32"}, true},
		{[]string{"--model-precision", "int8"}, true},
		{[]string{"--model-precision", "fp16"}, false},
		{[]string{"--baseline", good}, true},
		{[]string{"--baseline", empty}, false},
		{[]string{"--baseline", filepath.Join(dir, "none.txt")}, false},
	} {
		checkFlagEdge(t, c.args, c.ok, benchMatte(context.Background(), append([]string{"--dataset", missing}, c.args...), io.Discard, io.Discard))
	}
}

// checkFlagEdge: flags that are accepted (ok) get past the flags to the
// dataset, a folder named no-dataset that does not exist; others are a
// usage error.
func checkFlagEdge(t *testing.T, args []string, ok bool, err error) {
	t.Helper()
	var ue usageError
	switch {
	case err == nil:
		t.Errorf("%v: no error with a missing dataset", args)
	case ok && (errors.As(err, &ue) || !strings.Contains(err.Error(), "no-dataset")):
		t.Errorf("%v: %v, want the flags accepted and the missing dataset refused", args, err)
	case !ok && !errors.As(err, &ue):
		t.Errorf("%v: %v, want a usage error", args, err)
	}
}

// TestBenchCalibrateFlagEdges: --per-clip, --percentile and --fold at
// their limits; the required flags. A value just inside gets past the
// flags to the dataset (a folder that does not exist); one just outside
// is a usage error.
func TestBenchCalibrateFlagEdges(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-dataset")
	out := filepath.Join(dir, "int8.json")
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--per-clip", "1"}, true},
		{[]string{"--per-clip", "8"}, true},
		{[]string{"--per-clip", "0"}, false},
		{[]string{"--per-clip", "9"}, false},
		{[]string{"--percentile", "1"}, true},
		{[]string{"--percentile", "0.5001"}, true},
		{[]string{"--percentile", "0.5"}, false},
		{[]string{"--percentile", "1.0001"}, false},
		{[]string{"--fold", "B"}, true},
		{[]string{"--fold", "C"}, false},
		{[]string{"--model-provider", "cuda"}, false},
	} {
		checkFlagEdge(t, c.args, c.ok, benchCalibrate(context.Background(), append([]string{"--dataset", missing, "--out", out}, c.args...), io.Discard, io.Discard))
	}
	for _, args := range [][]string{{"--dataset", missing}, {"--out", out}} {
		var ue usageError
		if err := benchCalibrate(context.Background(), args, io.Discard, io.Discard); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error (--dataset and --out are required)", args, err)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s written by refused runs", out)
	}
}
