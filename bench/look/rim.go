package look

import (
	"math"

	"github.com/vfxrender/vfx/render/prompt"
)

// RimSideLimit is the rim's direction check (issue 31 item 3: rim light
// only where the normals face away from the camera toward the rim's
// direction): on the edge band of the rim prompt's renders, the relight
// gain where the silhouette faces the rim light over the gain where it
// faces away (rimSide), median over subjects, at least this. A band lit
// all round the silhouette reads about 1.
const RimSideLimit = 1.5

// rimDir is the picture-plane direction (x right, y up; unit) of the
// first rim light of the prompt text, ok false when it has none or it
// points straight at or away from the camera.
func rimDir(text string) (lx, ly float64, ok bool) {
	for _, lt := range prompt.Parse(text).Lights {
		if lt.Role != prompt.RoleRim {
			continue
		}
		x, y := float64(lt.Dir[0]), float64(lt.Dir[1])
		h := math.Hypot(x, y)
		if h < 1e-6 {
			return 0, 0, false
		}
		return x / h, y / h, true
	}
	return 0, 0, false
}

// rimSide is the rim's direction measure on one render out of s: the
// relight gain (output over source luminance) on the edge band
// (MeasureRim's: alpha >= 0.5, within 4 px of the edge) where the
// silhouette faces the rim light of text, over the gain on the band where
// it faces away: the band's pixels whose outward direction (down the
// gradient of dist, the distance inside the matte) is within 60 degrees of
// the light's picture-plane direction, and those within 60 degrees of the
// opposite. NaN without a rim direction or such pixels.
func rimSide(text string, s *lookSubject, out, dist []float32) float64 {
	lx, ly, ok := rimDir(text)
	if !ok {
		return math.NaN()
	}
	w, h, n := s.w, s.h, s.w*s.h
	a := s.alpha
	// facing is the cosine between the outward direction at i and the
	// light's (x right, y up); NaN where the gradient is 0.
	facing := func(i int) float64 {
		x, y := i%w, i/w
		if x == 0 || y == 0 || x == w-1 || y == h-1 {
			return math.NaN()
		}
		gx := float64(dist[i+1] - dist[i-1])
		gy := float64(dist[i+w] - dist[i-w])
		g := math.Hypot(gx, gy)
		if g == 0 {
			return math.NaN()
		}
		// Outward: -gradient; picture y up: -(-gy).
		return (-gx*lx + gy*ly) / g
	}
	band := func(i int) bool { return a[i] >= 0.5 && dist[i] > 0 && dist[i] <= 4 }
	return gainRatio(luma(out, n), luma(s.src, n),
		func(i int) bool { return band(i) && facing(i) >= 0.5 },
		func(i int) bool { return band(i) && facing(i) <= -0.5 })
}
