package look

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render"
)

// The placement check (issue 31 item 5): each subject rendered with the
// shadow prompt and each of PlaceChecks (render.Params.Placement), its
// passes read back:
//   - box: the subject's box in the render (the composite's matte, the
//     alpha pass, >= 0.5) against the source matte's box moved as asked
//     (pixel centres c -> scale*(c - W/2) + W/2 + x*W, and alike in y):
//     the largest of the four edges' differences, px; limit PlaceBoxLimit;
//   - contact: the contact measure of the edge check (contactRatio) under
//     the placed subject's lowest points: the composite over the backdrop
//     there; limit ContactLimit (NaN where the placed subject's lowest
//     point is within 14 px of the frame's bottom, or off it);
//   - old spot: the same ratio under the source matte's lowest points,
//     on the placed render: about 1 when the shadow left with the
//     subject (information only: the placed subject may still cover it).
const PlaceBoxLimit = 1.0

// placePrompt is the placement check's prompt: the shadow prompt.
const placePrompt = "sunny beach, hard sun from the left"

// PlaceChecks are the placements of the check: the subject at 0.6 of its
// size, a little right and up (its feet come into the frame), and at 1.4,
// a little left and up.
var PlaceChecks = []kernels.Placement{{Scale: 0.6, X: 0.15, Y: -0.15}, {Scale: 1.4, X: -0.1, Y: -0.1}}

// PlaceRow is one placement's measures per subject and their medians
// and worst.
type PlaceRow struct {
	P                      kernels.Placement
	Box, Contact, Old      []float64
	MBox, MContact, MOld   float64
	XBox, XContact         float64 // the worst subject's
	nBoxMet, nContactValid int
}

// placeMeasure renders s's passes with p placed by pl and measures them.
func placeMeasure(ctx context.Context, dev kernels.Device, p render.Params, pl kernels.Placement, s *lookSubject) (box, contact, old float64, th *thumb, err error) {
	p.Placement = pl
	px, err := framePasses(ctx, dev, p, s, func(ps *render.Passes) []kernels.Image {
		return []kernels.Image{ps.Composite, ps.Backdrop, ps.Alpha}
	})
	if err != nil {
		return 0, 0, 0, nil, err
	}
	w, h, n := s.w, s.h, s.w*s.h
	yc, yb := luma(px[0], n), luma(px[1], n)
	placed := &lookSubject{name: s.name, w: w, h: h, alpha: px[2]}
	return placeBoxError(s.alpha, px[2], w, h, pl), contactRatio(placed, yc, yb), contactRatio(s, yc, yb), makeThumb(px[0], w, h), nil
}

// matteEdges are the edges of a matte (w x h) at 0.5, sub-pixel: along
// each axis the profile of the matte's largest value per column (row),
// its first and last crossing of 0.5 interpolated linearly between pixel
// centres (a pixel's centre is at i + 0.5); ok false when no value
// reaches 0.5.
func matteEdges(a []float32, w, h int) (e [4]float64, ok bool) {
	px, py := make([]float64, w), make([]float64, h)
	for y := range h {
		for x := range w {
			v := float64(a[y*w+x])
			px[x], py[y] = max(px[x], v), max(py[y], v)
		}
	}
	lo := func(p []float64) (float64, bool) {
		for i, v := range p {
			if v >= 0.5 {
				if i == 0 || v == p[i-1] {
					return float64(i) + 0.5, true
				}
				return float64(i) + 0.5 - (v-0.5)/(v-p[i-1]), true
			}
		}
		return 0, false
	}
	hi := func(p []float64) float64 {
		for i := len(p) - 1; i >= 0; i-- {
			if v := p[i]; v >= 0.5 {
				if i == len(p)-1 || v == p[i+1] {
					return float64(i) + 0.5
				}
				return float64(i) + 0.5 + (v-0.5)/(v-p[i+1])
			}
		}
		return 0
	}
	var okx, oky bool
	e[0], okx = lo(px)
	e[2], oky = lo(py)
	e[1], e[3] = hi(px), hi(py)
	return e, okx && oky
}

// placeBoxError is the box measure: the largest difference (px) between
// an edge of the placed matte (matteEdges) and the source matte's edge
// moved by pl, edges that the move takes out of the frame left out (NaN
// when either matte is empty).
func placeBoxError(src, placed []float32, w, h int, pl kernels.Placement) float64 {
	se, ok1 := matteEdges(src, w, h)
	pe, ok2 := matteEdges(placed, w, h)
	if !ok1 || !ok2 {
		return math.NaN()
	}
	worst := 0.0
	for i, c := range se {
		n, off := w, pl.X
		if i >= 2 {
			n, off = h, pl.Y
		}
		want := pl.Scale*(c-float64(n)/2) + float64(n)/2 + off*float64(n)
		if want < 1 || want > float64(n)-1 {
			continue // moved to or out of the frame's edge
		}
		worst = max(worst, math.Abs(pe[i]-want))
	}
	return worst
}

func (r *PlaceRow) finish() {
	r.MBox, r.MContact, r.MOld = median(r.Box), median(r.Contact), median(r.Old)
	r.XBox, r.XContact = most(r.Box), most(r.Contact)
	for i := range r.Box {
		if r.Box[i] <= PlaceBoxLimit {
			r.nBoxMet++
		}
		if !math.IsNaN(r.Contact[i]) {
			r.nContactValid++
		}
	}
}

// placeString is the report's placement section.
func (r *Report) placeString() string {
	if len(r.Place) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "placement (%q; the subject placed by scale, x, y)\n", placePrompt)
	for _, p := range r.Place {
		name := fmt.Sprintf("scale %g, x %g, y %g", p.P.Scale, p.P.X, p.P.Y)
		fmt.Fprintf(&b, "%-40s %-34s %8.3f\n", name, "box error, px (median)", p.MBox)
		fmt.Fprintf(&b, "%-40s %-34s %8.3f %s\n", "", fmt.Sprintf("  worst subject, limit <= %.0f", PlaceBoxLimit), p.XBox, metStr(p.XBox <= PlaceBoxLimit))
		fmt.Fprintf(&b, "%-40s %-34s %8.3f\n", "", fmt.Sprintf("contact under it (%d subjects)", p.nContactValid), p.MContact)
		fmt.Fprintf(&b, "%-40s %-34s %8.3f %s\n", "", fmt.Sprintf("  worst subject, limit <= %.2f", ContactLimit), p.XContact, metStr(p.XContact <= ContactLimit))
		fmt.Fprintf(&b, "%-40s %-34s %8.3f\n", "", "ground at the old spot (info)", p.MOld)
	}
	return b.String()
}

// runPlace adds s's placement measures to rep.Place and returns the
// placed renders' thumbnails (the contact sheet's last columns).
func runPlace(ctx context.Context, dev kernels.Device, opt Options, s *lookSubject, rep *Report) ([]*thumb, error) {
	if len(rep.Place) == 0 {
		for _, pl := range PlaceChecks {
			rep.Place = append(rep.Place, PlaceRow{P: pl})
		}
	}
	p := render.Params{Prompt: placePrompt, Seed: opt.Seed, Width: s.w, Height: s.h, NoPlateMatch: opt.NoPlateMatch,
		NoFocusMatch: opt.NoFocusMatch, ContactReach: opt.ContactReach}
	var thumbs []*thumb
	for i := range rep.Place {
		row := &rep.Place[i]
		box, c, old, th, err := placeMeasure(ctx, dev, p, row.P, s)
		if err != nil {
			return nil, fmt.Errorf("bench: %s: placement %+v: %w", s.name, row.P, err)
		}
		row.Box, row.Contact, row.Old = append(row.Box, box), append(row.Contact, c), append(row.Old, old)
		thumbs = append(thumbs, th)
	}
	return thumbs, nil
}
