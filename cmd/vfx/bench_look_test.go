package main

import (
	"strings"
	"testing"
)

// TestBenchLookContactReach: --contact-reach is a share of the height in
// [0, 1]: just outside is a usage error (exit 2) naming the flag; the
// edges themselves pass and the bench goes on to read its dataset (exit
// 1 on a missing one, nothing rendered), with --fit-contact-reach too.
func TestBenchLookContactReach(t *testing.T) {
	for _, v := range []string{"-0.001", "1.001", "NaN"} {
		code, _, e := runCLI("bench", "look", "--contact-reach", v)
		if code != 2 || !strings.Contains(e, "--contact-reach") {
			t.Errorf("--contact-reach %s: exit %d, %q; want 2 naming the flag", v, code, e)
		}
	}
	missing := t.TempDir() + "/none"
	for _, args := range [][]string{{"--contact-reach", "0"}, {"--contact-reach", "1"}, {"--contact-reach", "0.125", "--fit-contact-reach"}} {
		a := append([]string{"bench", "look", "--dataset", missing, "--subjects", "bear", "--camera-clips", ""}, args...)
		code, _, e := runCLI(a...)
		if code != 1 || !strings.Contains(e, "none") {
			t.Errorf("%v: exit %d, %q; want 1 (the dataset is missing)", args, code, e)
		}
	}
}
