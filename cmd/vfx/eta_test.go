package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/worker"
)

// step is one line of a progress timeline (`vfx render --progress-log`).
type step struct {
	t           time.Duration
	phase       string
	done, total int
}

func readTimeline(t *testing.T, path string) []step {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []step
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s step
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 {
			t.Fatalf("%s: line %q", path, sc.Text())
		}
		secs, err1 := strconv.ParseFloat(fs[0], 64)
		d, err2 := strconv.Atoi(fs[2])
		n, err3 := strconv.Atoi(fs[3])
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("%s: line %q", path, sc.Text())
		}
		s.t, s.phase, s.done, s.total = time.Duration(secs*float64(time.Second)), fs[1], d, n
		out = append(out, s)
	}
	if len(out) < 2 || out[len(out)-1].phase != "done" {
		t.Fatalf("%s: no done line at the end", path)
	}
	return out
}

// TestETARecordedJobs feeds the progress of real jobs, recorded with `vfx
// render --progress-log` (testdata: a 240-frame 1080p select job of 901 s
// on the shared 2-core machine, and the same job's --frames 10-19
// --preview of 32 s), to the two estimators as they see it: `vfx render`'s
// bar at every step (worker.JobFraction), and `vfx submit`'s bar polling
// the HTTP percent once a second (the worker writes it at most once a
// second, an integer capped at 99). From the first 10 % of the job (in
// time, or in progress, whichever comes first) the estimate must be within
// 2x of the real time left, give or take what the estimator cannot see:
// 2 s (its polling), and for the HTTP percent one percent of the job.
// Once 10 % is done there must be an estimate. The percent must also move
// through the matte pass: at least 5 times, and never still for a quarter
// of the job (the preview's 10 frames hold 4 network runs of seconds each).
func TestETARecordedJobs(t *testing.T) {
	for _, name := range []string{"progress-select-1080p-240f.txt", "progress-select-preview-10f.txt"} {
		tl := readTimeline(t, filepath.Join("testdata", name))
		end := tl[len(tl)-1].t
		for _, http := range []bool{false, true} {
			var e etaEstimator
			var md, mt, rd, rt, j, checked int
			slack := 2 * time.Second
			var samples []time.Duration
			if http {
				slack += end / 100
				for s := time.Duration(0); s < end; s += time.Second {
					samples = append(samples, s)
				}
			} else {
				for _, s := range tl[:len(tl)-1] {
					samples = append(samples, s.t)
				}
			}
			lastPct, lastMove, moves := -1, time.Duration(0), 0
			for _, now := range samples {
				for ; j < len(tl) && tl[j].t <= now; j++ {
					switch tl[j].phase {
					case "matte":
						md, mt = tl[j].done, tl[j].total
					case "render":
						rd, rt = tl[j].done, tl[j].total
					}
				}
				frac := worker.JobFraction(md, mt, rd, rt)
				if http {
					frac = float64(min(int(100*frac), 99)) / 100
				}
				if pct := int(100 * frac); pct != lastPct {
					lastPct, lastMove = pct, now
					if rd == 0 && mt > 0 {
						moves++
					}
				} else if rd == 0 && mt > 0 && now-lastMove > end/4 {
					t.Errorf("%s (http %v): the percent sat at %d%% from %v to %v in the matte pass", name, http, pct, lastMove, now)
				}
				e.observe(now, frac)
				if now < end/10 && frac < 0.1 {
					continue
				}
				left, ok := e.left()
				real := end - now
				switch {
				case !ok && frac >= 0.1:
					t.Errorf("%s (http %v): no estimate at %v, %.0f%% done", name, http, now, 100*frac)
				case ok && (left > 2*real+slack || left < real/2-slack):
					t.Errorf("%s (http %v): at %v (%.0f%% done) the estimate is %v, the real time left %v", name, http,
						now.Round(time.Second), 100*frac, left.Round(time.Second), real.Round(time.Second))
				}
				if ok {
					checked++
				}
			}
			if moves < 5 {
				t.Errorf("%s (http %v): the percent moved %d times in the matte pass", name, http, moves)
			}
			if checked < len(samples)/2 {
				t.Errorf("%s (http %v): only %d of %d estimates checked", name, http, checked, len(samples))
			}
		}
	}
}
