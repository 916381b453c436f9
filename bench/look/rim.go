package look

import (
	"math"

	"github.com/vfxrender/vfx/matte"
	"github.com/vfxrender/vfx/render/prompt"
)

// RimSideLimit is the rim's direction check (issue 31 item 3: rim light
// only where the normals face away from the camera toward the rim's
// direction): on the edge band of the rim prompt's renders, the relight
// gain on the rim light's side of the subject over the gain on the other
// side, median over subjects, at least this. A band lit all round the
// silhouette reads about 1.
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
// (MeasureRim's: alpha >= 0.5, within 4 px of the edge) on the side of the
// subject's centroid toward the rim light of text, over the gain on the
// band's other side. NaN without a rim direction or a subject.
func rimSide(text string, s *lookSubject, out, dist []float32) float64 {
	lx, ly, ok := rimDir(text)
	if !ok {
		return math.NaN()
	}
	w, n := s.w, s.w*s.h
	a := s.alpha
	c, ok := matte.Centroid(a, w)
	if !ok {
		return math.NaN()
	}
	band := func(i int) bool { return a[i] >= 0.5 && dist[i] > 0 && dist[i] <= 4 }
	toward := func(i int) bool {
		return (float64(i%w)+0.5-c[0])*lx-(float64(i/w)+0.5-c[1])*ly >= 0
	}
	return gainRatio(luma(out, n), luma(s.src, n),
		func(i int) bool { return band(i) && toward(i) },
		func(i int) bool { return band(i) && !toward(i) })
}
