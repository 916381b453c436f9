package main

import "time"

// etaEstimator estimates the time left of a job from its progress (a
// fraction of its work, worker.JobFraction, or the HTTP percent over 100)
// as it is observed. The rate is measured from the first progress seen
// above zero, not from the job's start: what comes before it (loading the
// network, probing, the wait for the first percent) does not repeat and
// would inflate the estimate, the fault that had a 76 s job say 56 min.
type etaEstimator struct {
	seen       bool
	t0         time.Duration // elapsed at the first progress above zero
	f0         float64       // that progress
	last       time.Duration
	lastFrac   float64
	haveSample bool
}

// observe records the progress frac (in [0, 1]) at elapsed.
func (e *etaEstimator) observe(elapsed time.Duration, frac float64) {
	frac = min(max(frac, 0), 1)
	if !e.seen && frac > 0 {
		e.seen, e.t0, e.f0 = true, elapsed, frac
	}
	e.last, e.lastFrac, e.haveSample = elapsed, frac, true
}

// left is the estimated time left after the last observation; ok is false
// before any progress.
func (e *etaEstimator) left() (time.Duration, bool) {
	f, t := e.lastFrac, e.last
	switch {
	case !e.seen || f <= 0:
		return 0, false
	case f >= 1:
		return 0, true
	case f > e.f0 && t > e.t0:
		// The rate since the first progress.
		rate := (f - e.f0) / (t - e.t0).Seconds()
		return time.Duration((1 - f) / rate * float64(time.Second)), true
	}
	// Only the first progress so far: from the start of the job.
	return time.Duration(float64(t) * (1 - f) / f), true
}

// String is "ETA 1m05s", "ETA …" before any progress, "" when done.
func (e *etaEstimator) String() string {
	d, ok := e.left()
	switch {
	case !ok:
		return "ETA …"
	case e.lastFrac >= 1:
		return ""
	}
	return "ETA " + d.Round(time.Second).String()
}
