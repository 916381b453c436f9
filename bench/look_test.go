package bench

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// lookDataset is the DAVIS-2016 train folder, read from ../shared/datasets
// beside the repository (never copied into it).
const lookDataset = "../../shared/datasets/davis2016-train"

// TestLookBenchDAVIS runs `vfx bench look` on the real subjects and checks
// issue 15's "Done means" measures (medians over subjects) against the
// issue's thresholds.
func TestLookBenchDAVIS(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 10 real subjects; skipped with -short")
	}
	if _, err := os.Stat(filepath.Join(lookDataset, LookReference, "source.mp4")); err != nil {
		t.Skipf("dataset not found at %s (it lives beside the repository, in CI too): %v", lookDataset, err)
	}
	rep, err := RunLook(context.Background(), LookOptions{Dataset: lookDataset, VideoFrames: 6, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s%s", rep, rep.PerSubject())
	if n := len(rep.Subjects); n < 6 {
		t.Fatalf("%d subjects, want at least 6", n)
	}
	row := func(m LookMeasure, prompt string) LookRow {
		for _, r := range rep.Rows {
			if r.Prompt.Measure == m && r.Prompt.Prompt == prompt {
				return r
			}
		}
		t.Fatalf("no row %q", prompt)
		return LookRow{}
	}
	// Met: the thresholds.
	for _, p := range []string{"dark night, moonlight", "low-key dramatic light from the left"} {
		if v := row(MeasureNight, p).Median; !(v <= 3) {
			t.Errorf("%q: subject / background luminance %.3f, want <= 3", p, v)
		}
	}
	if v := row(MeasureReference, "").Median; !(v >= 1.0/3 && v <= 3) {
		t.Errorf("reference: subject / reference luminance %.3f, want within 3x", v)
	}
	sh := row(MeasureShadow, "sunny beach, hard sun from the left")
	if !(sh.Median >= 0.15) {
		t.Errorf("contact shadow: darkening under the lowest points %.3f, want >= 0.15", sh.Median)
	}
	if !(sh.Median2 > 0) {
		t.Errorf("cast shadow: darkening away from the key minus toward it %.3f, want > 0", sh.Median2)
	}
	if !(rep.FGErrEstimate <= 0.7*rep.FGErrSource) {
		t.Errorf("foreground estimation: colour error %.4f vs %.4f with the source colour, want a drop of >= 30%%", rep.FGErrEstimate, rep.FGErrSource)
	}
	if !(rep.GainFlicker <= rep.SourceFlicker+0.01) {
		t.Errorf("video: gain change per frame %.4f, source's own %.4f: want <= source + 0.01", rep.GainFlicker, rep.SourceFlicker)
	}
	// Direction and rim: the thresholds (1.236, 1.236, 0.929,
	// 1.173 on these subjects before issue 15's work).
	for _, c := range []struct {
		m      LookMeasure
		prompt string
		want   float64
	}{
		{MeasureLeft, "strong light from the left", 1.8},
		{MeasureRight, "strong light from the right", 1.8},
		{MeasureAbove, "light from above", 1.5},
		{MeasureRim, "backlit rim light", 1.5},
	} {
		if v := row(c.m, c.prompt).Median; !(v >= c.want) || math.IsNaN(v) {
			t.Errorf("%q: %.3f, issue 15 asks >= %.1f", c.prompt, v, c.want)
		}
	}
}
