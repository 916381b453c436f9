package look

import (
	"fmt"
	"math"
	"strings"

	"github.com/vfxrender/vfx/render/plate"
)

// Plate matching measures of the look bench (issue 15, "match the
// plate"), taken on the rendered output with plate.Measure: the
// subject over the matte's interior (alpha >= 0.98, 3 px in), the plate
// over the background's interior (alpha <= 0.02, 3 px out), both at the
// output size:
//   - grain ratio: the subject's grain over the plate's (Donoho's MAD
//     estimate on the Haar diagonal subband of sqrt luminance over the
//     flatter half of 16x16 blocks, as the renderer measures them);
//   - sharpness ratio: the plate's edge width over the subject's (edge
//     blur sigma at the strongest 5% of edges): above 1 the subject is
//     sharper than the plate; undefined where the plate shows no edges;
//   - black difference: sqrt of the subject's 2nd-percentile luminance
//     minus the plate's (about code values / 255).
//
// The focus check (issue 31 item 2): after matching, no subject's plate
// is sharper than the subject by more than FocusRatio (every sharpness
// ratio at least 1/FocusRatio); the count of subjects within FocusRatio
// both ways is reported too (a plate softer than the subject is not
// sharpened: see render/focus.go).

// FocusRatio bounds the plate's edge width against the subject's.
const FocusRatio = 1.5

// PlateRow is the plate measures on one prompt's renders.
type PlateRow struct {
	Name                string
	Grain, Sharp, Black []float64 // per subject
	// Medians over subjects (NaN values left out).
	MGrain, MSharp, MBlack float64
}

// lookPlateRows names the prompts whose renders are measured, by index in
// Prompts: the reference image and the beach backdrop.
func lookPlateIndex(lp Prompt) (int, string) {
	switch {
	case lp.Reference && lp.RefClip == "":
		return 0, "reference (surf)"
	case lp.Measure == MeasureShadow:
		return 1, "backdrop: " + lp.Prompt
	}
	return -1, ""
}

// plateMeasure measures one render.
func plateMeasure(s *lookSubject, out []float32) (grain, sharp, black float64) {
	n := s.w * s.h
	y := make([]float32, n)
	bgw := make([]float32, n)
	for i := range y {
		y[i] = float32(0.2126*float64(out[i]) + 0.7152*float64(out[n+i]) + 0.0722*float64(out[2*n+i]))
		bgw[i] = 1 - s.alpha[i]
	}
	sub := plate.Measure(y, s.w, s.h, s.alpha)
	pl := plate.Measure(y, s.w, s.h, bgw)
	grain, sharp, black = math.NaN(), math.NaN(), math.NaN()
	if sub.Pixels > 0 && pl.Pixels > 0 {
		if pl.Grain > 0 {
			grain = sub.Grain / pl.Grain
		}
		if pl.Edge > 0 && sub.Edge > 0 {
			sharp = pl.Edge / sub.Edge
		}
		black = math.Sqrt(sub.Black) - math.Sqrt(pl.Black)
	}
	return grain, sharp, black
}

func (r *PlateRow) finish() {
	r.MGrain, r.MSharp, r.MBlack = median(r.Grain), median(r.Sharp), median(r.Black)
}

func (r *Report) plateString() string {
	var b strings.Builder
	for _, p := range r.Plates {
		fmt.Fprintf(&b, "%-40s %-34s %8.3f\n", "plate, "+p.Name, "grain ratio subject / plate", p.MGrain)
		fmt.Fprintf(&b, "%-40s %-34s %8.3f\n", "", "sharpness ratio subject / plate", p.MSharp)
		fmt.Fprintf(&b, "%-40s %-34s %8.3f\n", "", fmt.Sprintf("  least subject, limit >= %.3f", 1/FocusRatio), least(p.Sharp))
		fmt.Fprintf(&b, "%-40s %-34s %8s\n", "", fmt.Sprintf("  subjects within %.1fx both ways", FocusRatio), fmt.Sprintf("%d/%d", within(p.Sharp, FocusRatio), len(p.Sharp)))
		fmt.Fprintf(&b, "%-40s %-34s %8.4f\n", "", "black level difference (sqrt lum)", p.MBlack)
	}
	return b.String()
}

func (r *Report) platePerSubject(line func(string, []float64)) {
	for _, p := range r.Plates {
		line("plate "+p.Name+": grain ratio", p.Grain)
		line("  sharpness ratio", p.Sharp)
		line("  black difference", p.Black)
	}
}

// within counts the values in [1/r, r] (NaN values left out).
func within(v []float64, r float64) int {
	n := 0
	for _, x := range v {
		if x >= 1/r && x <= r {
			n++
		}
	}
	return n
}
