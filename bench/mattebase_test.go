package bench

import (
	"math"

	"strings"
	"testing"

	"github.com/vfxrender/vfx/matte"
)

// TestParseMatteRows reads the per-clip rows of a bench output (with and
// without the fold column) and skips the headers and the means.
func TestParseMatteRows(t *testing.T) {
	out := `model isnet-imgly-fp16 (AGPL-3.0), network every 4 frame(s), 2 clips
clip               mode       fold      J      F   decay flicker%  copyJ  inner%   half%  frames matte f/s crops
bear               select        A  0.957  0.965  +0.007     0.41  0.655    0.14    0.12      82      14.4     0
other              auto             0.500  0.400  +0.002     0.49  0.000    0.27    0.20      82      16.8     0

all:
mode       clips      J      F   decay flicker%  copyJ  inner%   half% matte f/s  net/frm  crops  below copy
select        30  0.849  0.826  +0.042     3.04  0.290    5.99    2.52      16.7     0.27      0  []
`
	rows, err := ParseMatteRows(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []MatteRow{{"bear", SelectFirst, 0.957, 0.965}, {"other", AutoVideo, 0.5, 0.4}}
	if len(rows) != len(want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d: %v, want %v", i, rows[i], want[i])
		}
	}
	if _, err := ParseMatteRows(strings.NewReader(out + "bear               select        A  0.9  0.9  +0.007     0.41  0.655    0.14    0.12      82      14.4     0\n")); err == nil {
		t.Error("a clip and mode twice: no error")
	}
	if _, err := ParseMatteRows(strings.NewReader("all:\nselect 30 0.849\n")); err == nil {
		t.Error("no rows: no error")
	}
}

// TestCompareMatteRows: the means, the median, the counts at DeltaStep's
// edge and the mean without the clip that moved most.
func TestCompareMatteRows(t *testing.T) {
	base := []MatteRow{{"a", SelectFirst, 0.5, 0.5}, {"b", SelectFirst, 0.5, 0.5}, {"c", SelectFirst, 0.5, 0.5}, {"d", AutoVideo, 0.5, 0.5}}
	res := func(clip string, m MatteMode, j, f float64) ClipResult {
		return ClipResult{Clip: clip, Mode: m, Scores: MatteScores{J: j, F: f}}
	}
	ds := CompareMatteRows(base, []ClipResult{
		res("a", SelectFirst, 0.5+DeltaStep, 0.6), // just a move up
		res("b", SelectFirst, 0.5-0.004, 0.5),     // under the step: no move
		res("c", SelectFirst, 0.2, 0.2),           // the one that moved most
		res("e", SelectFirst, 0.9, 0.9),           // not in the baseline
		res("d", SelectMiddle, 0.9, 0.9),          // mode not in the baseline for d
	})
	if len(ds) != 1 {
		t.Fatalf("deltas %+v, want select's only", ds)
	}
	d := ds[0]
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if d.Mode != SelectFirst || d.Clips != 3 || d.Up != 1 || d.Down != 1 || d.Top != "c" || !near(d.TopDJ, -0.3) {
		t.Errorf("delta %+v", d)
	}
	if !near(d.DJ, (DeltaStep-0.004-0.3)/3) || !near(d.DF, (0.1-0.3)/3) || !near(d.MedianDJ, -0.004) || !near(d.DJWithoutTop, (DeltaStep-0.004)/2) {
		t.Errorf("delta %+v", d)
	}
}

// TestConfigFlow: the configuration's positive flow settings replace the
// defaults; zeros keep them.
func TestConfigFlow(t *testing.T) {
	def := matte.DefaultFlowOptions()
	if got := (RealMatteConfig{}).flow(def); got != def {
		t.Errorf("zero config: %+v, want %+v", got, def)
	}
	got := RealMatteConfig{FlowLevels: 2, FlowIterations: 7, FlowWindow: 5}.flow(def)
	want := def
	want.Levels, want.Iterations, want.Window = 2, 7, 5
	if got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
}
