package bench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// MatteRow is one clip and mode's J and F as `vfx bench matte` prints
// them (its per-clip rows).
type MatteRow struct {
	Clip string
	Mode MatteMode
	J, F float64
}

// maxBaselineBytes bounds a baseline file: a whole run of every clip in
// every mode prints well under 100 KiB.
const maxBaselineBytes = 4 << 20

// ParseMatteRows reads the per-clip rows of the output of an earlier
// `vfx bench matte` run (the lines "clip mode [fold] J F ..."); every other
// line (the header, the means, notes) is skipped. A file with no such row,
// or with one clip and mode twice, is an error.
func ParseMatteRows(r io.Reader) ([]MatteRow, error) {
	var rows []MatteRow
	seen := map[[2]string]bool{}
	sc := bufio.NewScanner(io.LimitReader(r, maxBaselineBytes+1))
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	read := 0
	for sc.Scan() {
		line := sc.Text()
		read += len(line) + 1
		if read > maxBaselineBytes {
			return nil, fmt.Errorf("bench: baseline is over %d MiB: not the output of vfx bench matte", maxBaselineBytes>>20)
		}
		f := strings.Fields(line)
		if len(f) < 12 {
			continue
		}
		mode, err := ParseMatteModes(f[1])
		if err != nil || len(mode) != 1 || f[1] == "all" {
			continue
		}
		k := 2
		if f[2] == "A" || f[2] == "B" {
			k = 3
		}
		j, errJ := strconv.ParseFloat(f[k], 64)
		fm, errF := strconv.ParseFloat(f[k+1], 64)
		if errJ != nil || errF != nil || j < 0 || j > 1 || fm < 0 || fm > 1 {
			continue
		}
		key := [2]string{f[0], f[1]}
		if seen[key] {
			return nil, fmt.Errorf("bench: baseline has %s %s twice", f[0], f[1])
		}
		seen[key] = true
		rows = append(rows, MatteRow{Clip: f[0], Mode: mode[0], J: j, F: fm})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench: baseline: %w", err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("bench: baseline has no per-clip rows of vfx bench matte")
	}
	return rows, nil
}

// MatteDelta compares one mode's clips of a run with a baseline run, over
// the clips both scored: whether a change wins on most clips or on one.
type MatteDelta struct {
	Mode  MatteMode
	Clips int
	// DJ and DF are the mean changes of J and F; MedianDJ the median
	// change of J.
	DJ, DF, MedianDJ float64
	// Up and Down count the clips whose J moved by at least DeltaStep
	// either way.
	Up, Down int
	// Top is the clip whose J moved most (either way), TopDJ its change,
	// and DJWithoutTop the mean change of J over the other clips: a mean
	// carried by one clip flipping (a region taken or lost on one frame)
	// shows here.
	Top          string
	TopDJ        float64
	DJWithoutTop float64
}

// DeltaStep is the change of a clip's J that CompareMatteRows counts as a
// move (smaller ones are the noise of a changed rounding).
const DeltaStep = 0.005

// CompareMatteRows compares results with the baseline's rows, per mode
// (in the results' order), over the clips in both.
func CompareMatteRows(base []MatteRow, results []ClipResult) []MatteDelta {
	old := map[[2]string]MatteRow{}
	for _, r := range base {
		old[[2]string{r.Clip, string(r.Mode)}] = r
	}
	var out []MatteDelta
	var modes []MatteMode
	for _, r := range results {
		if !slices.Contains(modes, r.Mode) {
			modes = append(modes, r.Mode)
		}
	}
	for _, m := range modes {
		d := MatteDelta{Mode: m}
		var dj []float64
		var sumJ, sumF float64
		top := -1.0
		for _, r := range results {
			b, ok := old[[2]string{r.Clip, string(m)}]
			if r.Mode != m || !ok {
				continue
			}
			x := r.Scores.J - b.J
			dj = append(dj, x)
			sumJ += x
			sumF += r.Scores.F - b.F
			switch {
			case x >= DeltaStep:
				d.Up++
			case x <= -DeltaStep:
				d.Down++
			}
			if math.Abs(x) > top {
				top, d.Top, d.TopDJ = math.Abs(x), r.Clip, x
			}
		}
		if d.Clips = len(dj); d.Clips == 0 {
			continue
		}
		n := float64(d.Clips)
		d.DJ, d.DF = sumJ/n, sumF/n
		if d.Clips > 1 {
			d.DJWithoutTop = (sumJ - d.TopDJ) / (n - 1)
		}
		slices.Sort(dj)
		if d.Clips%2 == 1 {
			d.MedianDJ = dj[d.Clips/2]
		} else {
			d.MedianDJ = (dj[d.Clips/2-1] + dj[d.Clips/2]) / 2
		}
		out = append(out, d)
	}
	return out
}
