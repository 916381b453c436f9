package main

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchMatteFlagEdges: --fit-trees, --binary-level and the refiner's at their
// limits. A value just inside gets past the flags to the dataset (here a
// folder that does not exist); one just outside is a usage error.
func TestBenchMatteFlagEdges(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-dataset")
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
	} {
		err := benchMatte(context.Background(), append([]string{"--dataset", missing}, c.args...), io.Discard, io.Discard)
		var ue usageError
		switch {
		case err == nil:
			t.Errorf("%v: no error with a missing dataset", c.args)
		case c.ok && (errors.As(err, &ue) || !strings.Contains(err.Error(), "no-dataset")):
			t.Errorf("%v: %v, want the flags accepted and the missing dataset refused", c.args, err)
		case !c.ok && !errors.As(err, &ue):
			t.Errorf("%v: %v, want a usage error", c.args, err)
		}
	}
}
