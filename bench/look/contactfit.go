package look

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/render"
)

// ContactReachGrid are the contact reaches (render.Params.ContactReach:
// the share of the subject's height above its lowest point whose points
// get a contact shadow) that FitContactReach tries.
var ContactReachGrid = []float64{1.0 / 20, 1.0 / 16, 1.0 / 12, 1.0 / 10, 1.0 / 8, 1.0 / 6, 1.0 / 5}

// ContactMargin is the margin under ContactLimit that the fitted reach
// must keep on the subjects it is fitted on.
const ContactMargin = 0.02

// ReachScore is one contact reach's contact check on the fit subjects:
// the worst subject over every edge prompt (Prompts measured by the edge
// rows) and the median of the prompts' medians.
type ReachScore struct {
	Reach, Worst, Median float64
}

// ReachFit is FitContactReach's result.
type ReachFit struct {
	Subjects []string
	Scores   []ReachScore
	// Best is the least reach of the grid whose worst subject is at most
	// ContactLimit - ContactMargin (the less of the subject's height
	// counts as standing on the ground, the fewer feet in the air get a
	// contact shadow); NaN when none is.
	Best float64
}

// FitContactReach scores each reach of grid (nil: ContactReachGrid) by
// the contact check (contactRatio) on the first frame of opt.Subjects
// (nil: Subjects in fold A, FoldSubjects("A")), every edge prompt,
// and picks the least reach that meets ContactLimit with ContactMargin to
// spare.
func FitContactReach(ctx context.Context, opt Options, grid []float64) (*ReachFit, error) {
	if grid == nil {
		grid = ContactReachGrid
	}
	fit := &ReachFit{Subjects: opt.Subjects, Best: math.NaN()}
	if len(fit.Subjects) == 0 {
		fit.Subjects = FoldSubjects("A")
	}
	dev := kernels.NewCPU(opt.Workers)
	defer dev.Close()
	ref, err := loadRef(ctx, dev, opt.Dataset, ReferenceClip)
	if err != nil {
		return nil, err
	}
	// vals[g][e] are the contact ratios of grid value g, edge prompt e.
	vals := make([][][]float64, len(grid))
	for g := range vals {
		vals[g] = make([][]float64, len(Prompts))
	}
	for _, name := range fit.Subjects {
		dir := filepath.Join(opt.Dataset, name)
		frames, err := decodeFrames(ctx, filepath.Join(dir, "source.mp4"), 1)
		if err != nil {
			return nil, err
		}
		s, err := loadSubject(ctx, dev, dir, frames[0], filepath.Join(dir, "masks", "00000.png"))
		if err != nil {
			return nil, fmt.Errorf("bench: %s: %w", name, err)
		}
		in, err := insideDist(dev, s.alpha, s.w, s.h)
		if err != nil {
			return nil, err
		}
		out, err := outsideDist(dev, s.alpha, s.w, s.h)
		if err != nil {
			return nil, err
		}
		for pi, lp := range Prompts {
			if edgeName(lp) == "" {
				continue
			}
			for g, reach := range grid {
				p := render.Params{Prompt: lp.Prompt, Seed: opt.Seed, Width: s.w, Height: s.h, ContactReach: reach}
				if lp.Reference {
					p.Reference = ref.frame
				}
				v, err := edgeMeasure(ctx, dev, p, s, in, out)
				if err != nil {
					return nil, fmt.Errorf("bench: %s: contact fit: %w", name, err)
				}
				vals[g][pi] = append(vals[g][pi], v.Contact)
			}
		}
	}
	for g, reach := range grid {
		sc := ReachScore{Reach: reach, Worst: math.NaN()}
		var meds []float64
		for _, v := range vals[g] {
			if len(v) == 0 {
				continue
			}
			meds = append(meds, median(v))
			if w := most(v); !(w <= sc.Worst) {
				sc.Worst = w
			}
		}
		sc.Median = median(meds)
		fit.Scores = append(fit.Scores, sc)
		if math.IsNaN(fit.Best) && sc.Worst <= ContactLimit-ContactMargin {
			fit.Best = reach
		}
	}
	return fit, nil
}

// FoldSubjects are the Subjects in the development fold ("A" or "B",
// bench.FoldOf): a constant is fitted on fold A and kept only if it also
// holds on fold B.
func FoldSubjects(fold string) []string {
	var out []string
	for _, s := range Subjects {
		if bench.FoldOf(s) == fold {
			out = append(out, s)
		}
	}
	return out
}

// String formats the fit as a table.
func (f *ReachFit) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "contact reach fit: %d subjects (%s), first frames, %d edge prompts\n", len(f.Subjects), strings.Join(f.Subjects, " "), len(newEdgeRowsNames()))
	fmt.Fprintf(&b, "%8s %12s %14s\n", "reach", "worst", "median")
	for _, s := range f.Scores {
		fmt.Fprintf(&b, "%8.4f %12.4f %14.4f\n", s.Reach, s.Worst, s.Median)
	}
	fmt.Fprintf(&b, "fitted reach (least with worst <= %.2f): %.4f\n", ContactLimit-ContactMargin, f.Best)
	return b.String()
}

// newEdgeRowsNames are the names of the edge prompts.
func newEdgeRowsNames() []string {
	var n []string
	for _, lp := range Prompts {
		if name := edgeName(lp); name != "" {
			n = append(n, name)
		}
	}
	return n
}
