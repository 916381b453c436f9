package look

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// The look bench's night check (issue 31, "night keeps the subject
// readable"), on the prompts that ask for night (Prompt.Night): the
// subject's median output luminance (alpha >= 0.99) over the mean
// luminance of the plate's brightest tenth (the output's background,
// alpha <= 0.02), at least NightReadShare on every subject; and on a night
// prompt with a key from the left, the key still directional: left half
// over right half of the relight gain (as MeasureLeft), at least
// NightKeyRatio (median over subjects). The renderer aims the subject's
// median at 0.3 of the plate's brightest tenth (render/exposure.go
// nightFloor, on the source's median at half the working resolution);
// the output's median lands lower where the key leaves half of the
// subject in shadow or the highlight cap lowers it.

// NightReadShare is the least readable share of every subject: its median
// luminance over the plate's brightest tenth.
const NightReadShare = 0.1

// NightKeyRatio is the least left/right gain ratio of a night key from
// the left.
const NightKeyRatio = 1.8

// nightRead returns the subject's median luminance over the mean of the
// brightest tenth of the background's (NaN when either is empty).
func nightRead(yo []float64, alpha []float32) float64 {
	var sub, bg []float64
	for i, v := range yo {
		switch {
		case alpha[i] >= 0.99:
			sub = append(sub, v)
		case alpha[i] <= 0.02:
			bg = append(bg, v)
		}
	}
	if len(sub) == 0 || len(bg) < 10 {
		return math.NaN()
	}
	sort.Float64s(bg)
	var top float64
	k := len(bg) - len(bg)/10
	for _, v := range bg[k:] {
		top += v
	}
	top /= float64(len(bg) - k)
	if !(top > 0) {
		return math.NaN()
	}
	return median(sub) / top
}

func (r *Report) nightString() string {
	var b strings.Builder
	for _, row := range r.Rows {
		if !row.Prompt.Night {
			continue
		}
		p := fmt.Sprintf("night, %q", row.Prompt.Prompt)
		fmt.Fprintf(&b, "%-40s %-34s %8.3f\n", p, "subject median / plate top 10%", row.MRead)
		fmt.Fprintf(&b, "%-40s %-34s %8.3f\n", "", fmt.Sprintf("  least subject, limit >= %.2f", NightReadShare), least(row.Read))
		if row.Prompt.KeyLeft {
			fmt.Fprintf(&b, "%-40s %-34s %8.3f\n", "", fmt.Sprintf("key left / right (gain) >= %.1f", NightKeyRatio), row.MDir)
		}
	}
	return b.String()
}

// least is the smallest value, NaN values left out (NaN when none).
func least(v []float64) float64 {
	m := math.NaN()
	for _, x := range v {
		if !math.IsNaN(x) && !(x >= m) {
			m = x
		}
	}
	return m
}
