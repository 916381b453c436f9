package look

import (
	"fmt"
	"math"
	"strings"
)

// The look bench's colour check (issue 31, "harmonisation that tints, not
// dyes"): the subject's hue shift from the source to the render, in CIELAB
// (D65) from linear RGB, over the subject's interior (alpha >= 0.99) where
// the source's colour has a hue (chroma C* >= hueMinChroma, L* >= 10): the
// median per subject of |Δh| in degrees. A uniform change of exposure
// leaves CIELAB's hue as it is (a*, b* scale together), so the measure sees
// the rotation of colours, not the relight's brightness. Reported for every
// prompt; the check (under 15° median over subjects) is on the reference
// plates, where the harmonisation is strongest.

// hueMinChroma is the least source chroma (CIELAB C*) of a measured pixel:
// below it the hue is mostly noise and a white-balance shift (a tint) may
// turn it freely.
const hueMinChroma = 12

// HueShiftLimit is the colour check's limit (degrees, median over subjects).
const HueShiftLimit = 15

// cielab converts linear sRGB (D65) to CIELAB.
func cielab(r, g, b float64) (L, A, B float64) {
	x := (0.4124*r + 0.3576*g + 0.1805*b) / 0.95047
	y := 0.2126*r + 0.7152*g + 0.0722*b
	z := (0.0193*r + 0.1192*g + 0.9505*b) / 1.08883
	f := func(t float64) float64 {
		if t > 216.0/24389 {
			return math.Cbrt(t)
		}
		return (24389.0/27*t + 16) / 116
	}
	fx, fy, fz := f(x), f(y), f(z)
	return 116*fy - 16, 500 * (fx - fy), 200 * (fy - fz)
}

// hueShift is the median |Δh| (degrees) between src and out (planar linear
// RGB) over the subject's coloured interior; NaN when fewer than 100 pixels
// qualify.
func hueShift(src, out, alpha []float32, n int) float64 {
	var d []float64
	for i := 0; i < n; i++ {
		if alpha[i] < 0.99 {
			continue
		}
		l0, a0, b0 := cielab(float64(src[i]), float64(src[n+i]), float64(src[2*n+i]))
		if l0 < 10 || math.Hypot(a0, b0) < hueMinChroma {
			continue
		}
		_, a1, b1 := cielab(float64(out[i]), float64(out[n+i]), float64(out[2*n+i]))
		// The angle between (a0, b0) and (a1, b1).
		d = append(d, math.Abs(math.Atan2(a0*b1-b0*a1, a0*a1+b0*b1))*180/math.Pi)
	}
	if len(d) < 100 {
		return math.NaN()
	}
	return median(d)
}

// hueChecked says whether a prompt's hue shift is checked (the reference
// plates).
func hueChecked(lp Prompt) bool { return lp.Reference }

func (r *Report) colourString() string {
	var b strings.Builder
	for _, row := range r.Rows {
		p := fmt.Sprintf("%q", row.Prompt.Prompt)
		if row.Prompt.Reference {
			p = "reference: first frame of " + row.Prompt.refClip()
		}
		m := "hue shift (deg), info"
		if hueChecked(row.Prompt) {
			m = fmt.Sprintf("hue shift (deg), limit < %d", HueShiftLimit)
		}
		fmt.Fprintf(&b, "%-40s %-34s %8.2f\n", "colour, "+p, m, row.MHue)
	}
	return b.String()
}
