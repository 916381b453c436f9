package look

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// lookDataset is the DAVIS-2016 train folder, read from ../shared/datasets
// beside the repository (never copied into it).
const lookDataset = "../../../shared/datasets/davis2016-train"

// TestLookBenchDAVIS runs `vfx bench look` on the real subjects and checks
// issue 15's "Done means" measures (medians over subjects) against the
// issue's thresholds.
func TestLookBenchDAVIS(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 10 real subjects; skipped with -short")
	}
	if _, err := os.Stat(filepath.Join(lookDataset, ReferenceClip, "source.mp4")); err != nil {
		t.Skipf("dataset not found at %s (it lives beside the repository, in CI too): %v", lookDataset, err)
	}
	rep, err := Run(context.Background(), Options{Dataset: lookDataset, VideoFrames: 6, Seed: 1,
		CameraClips: []string{"lucia", CameraFixture}, CameraFrames: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s%s", rep, rep.PerSubject())
	if n := len(rep.Subjects); n < 6 {
		t.Fatalf("%d subjects, want at least 6", n)
	}
	row := func(m Measure, prompt string) Row {
		for _, r := range rep.Rows {
			if r.Prompt.Measure == m && r.Prompt.Prompt == prompt {
				return r
			}
		}
		t.Fatalf("no row %q", prompt)
		return Row{}
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
		m      Measure
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
	// Issue 31 item 3's rim: lit where the silhouette faces the rim light,
	// not all round (1.128 before, a band round the whole silhouette).
	if v := row(MeasureRim, "backlit rim light").Median2; !(v >= RimSideLimit) {
		t.Errorf("rim: the band facing the light over the band facing away %.3f, want >= %.1f", v, RimSideLimit)
	}
	// Plate matching: no subject is left much cleaner than its plate
	// (grain is added where the plate is grainier; without plate matching
	// dance-jump reads 0.02 and flamingo 0.00 on the beach backdrop, and
	// the median there is 0.39), and grain is not overdone: the median on
	// the backdrop, where every subject but one is grainier than the
	// plate or matched to it, stays below 2.5 (issue-15c's was 4.78 on
	// the reference and 1.97 on the backdrop with another estimator).
	if len(rep.Plates) != 2 {
		t.Fatalf("%d plate rows, want 2", len(rep.Plates))
	}
	for _, p := range rep.Plates {
		lo := math.Inf(1)
		for _, g := range p.Grain {
			lo = math.Min(lo, g)
		}
		if !(lo >= 0.7) || len(p.Grain) != len(rep.Subjects) {
			t.Errorf("plate %s: least subject / plate grain %.3f over %d subjects, want >= 0.7", p.Name, lo, len(p.Grain))
		}
		if !(p.MBlack > -0.3 && p.MBlack < 0.1) {
			t.Errorf("plate %s: black level difference %.4f (sqrt luminance), want within (-0.3, 0.1)", p.Name, p.MBlack)
		}
	}
	if g := rep.Plates[1].MGrain; !(g <= 2.5) {
		t.Errorf("plate %s: median grain ratio %.3f, want <= 2.5", rep.Plates[1].Name, g)
	}
	// Issue 31's focus check: no plate sharper than its subject by more
	// than FocusRatio after matching (surf: least 0.550 before).
	for _, p := range rep.Plates {
		if v := least(p.Sharp); !(v >= 1/FocusRatio) {
			t.Errorf("plate %s: least sharpness ratio (plate / subject edge width) %.3f, want >= %.3f", p.Name, v, 1/FocusRatio)
		}
	}
	// Issue 31 item 3's edge measures: every measured prompt has a finite
	// value per subject; the contact check (the ground under the lowest
	// points at most ContactLimit of the plate's, the light from any
	// direction) holds on every prompt and subject (worst 0.932 before
	// contactReach); so does the bleed (the wrap's light inside beyond the
	// wrap width under BleedLimit of the plate's brightest tenth: worst
	// 0.0196 before the masked wrap, 0.0070 after); so does the halo (the
	// light added round the subject under HaloLimit of the plate's: worst
	// 0.0403 before the wrap's A² and the soft-band fade, 0.0196 after,
	// the beach prompt).
	if len(rep.Edges) != 7 {
		t.Errorf("%d edge rows, want 7", len(rep.Edges))
	}
	for _, e := range rep.Edges {
		if len(e.Halo) != len(rep.Subjects) || math.IsNaN(e.MHalo) || math.IsNaN(e.MBleed) || math.IsNaN(e.MCont) {
			t.Errorf("edges %s: halo %v bleed %.4f contact %.4f over %d subjects", e.Name, e.Halo, e.MBleed, e.MCont, len(rep.Subjects))
		}
		if !(e.XCont <= ContactLimit) {
			t.Errorf("edges %s: worst contact %.3f, want <= %.2f", e.Name, e.XCont, ContactLimit)
		}
		if !(e.XBleed < BleedLimit) {
			t.Errorf("edges %s: worst bleed %.4f, want < %.2f", e.Name, e.XBleed, BleedLimit)
		}
		if !(e.XHalo < HaloLimit) {
			t.Errorf("edges %s: worst halo %.4f, want < %.2f", e.Name, e.XHalo, HaloLimit)
		}
	}
	// Issue 31 item 5, placement: on every subject the placed matte's box
	// within PlaceBoxLimit of the placement asked, and the contact shadow
	// under the placed subject within ContactLimit wherever its feet are
	// in the frame (every subject, on the bench's placements).
	if len(rep.Place) != len(PlaceChecks) {
		t.Fatalf("%d placement rows, want %d", len(rep.Place), len(PlaceChecks))
	}
	for _, p := range rep.Place {
		if len(p.Box) != len(rep.Subjects) || !(p.XBox <= PlaceBoxLimit) {
			t.Errorf("placement %+v: box errors %v, want every subject <= %.0f px", p.P, p.Box, PlaceBoxLimit)
		}
		if p.nContactValid < len(rep.Subjects)/2 || !(p.XContact <= ContactLimit) {
			t.Errorf("placement %+v: contact %v, want measured on at least half the subjects and <= %.2f", p.P, p.Contact, ContactLimit)
		}
	}
	// Issue 31's colour check: the subject's hue shift (CIELAB, median
	// over subjects) on the reference plates (surf 17.6° and tennis 8.1°
	// before the hue bound).
	nref := 0
	for _, r := range rep.Rows {
		if !hueChecked(r.Prompt) {
			continue
		}
		nref++
		if !(r.MHue < HueShiftLimit) || len(r.Hue) != len(rep.Subjects) {
			t.Errorf("colour, reference %s: hue shift %.2f° over %d subjects, want < %d°", r.Prompt.refClip(), r.MHue, len(r.Hue), HueShiftLimit)
		}
	}
	if nref != 2 {
		t.Errorf("%d reference rows with the colour check, want 2 (surf and %s)", nref, WarmReferenceClip)
	}
	// Issue 31's night check: every subject readable on the night plates
	// (least 0.052 and 0.097 before the night floor), the night key from
	// the left still directional.
	nn := 0
	for _, r := range rep.Rows {
		if !r.Prompt.Night {
			continue
		}
		nn++
		if v := least(r.Read); !(v >= NightReadShare) || len(r.Read) != len(rep.Subjects) {
			t.Errorf("night %q: least subject median / plate top tenth %.3f over %d subjects, want >= %.2f", r.Prompt.Prompt, v, len(r.Read), NightReadShare)
		}
		if r.Prompt.KeyLeft && !(r.MDir >= NightKeyRatio) {
			t.Errorf("night %q: key left / right %.3f, want >= %.1f", r.Prompt.Prompt, r.MDir, NightKeyRatio)
		}
	}
	if nn != 2 {
		t.Errorf("%d night rows, want 2", nn)
	}
	// Issue 31's camera lock: the panning walk's plate moves with its
	// background, the locked-off fixture's stays still.
	if len(rep.Camera) != 2 || rep.Camera[0].Kind() != "panning" || rep.Camera[1].Kind() != "locked-off" {
		t.Fatalf("camera rows %+v, want lucia panning and the fixture locked-off", rep.Camera)
	}
	for _, c := range rep.Camera {
		if !c.Met() || c.Frames < 5 {
			t.Errorf("camera %s (%s): error %.3f px a frame over %d frames, limit not met", c.Clip, c.Kind(), c.Err, c.Frames)
		}
	}
}
