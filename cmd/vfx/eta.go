package main

import "time"

// etaEstimator estimates the time left of a job from its progress (a
// fraction of its work: worker.JobFraction locally, the HTTP percent over
// 100 for a submitted job) as it is observed.
//
// What comes before the first progress (probing, the first network run,
// the wait for the first percent) is set-up that does not repeat: an
// estimate from the job's start would inflate the time left by it (a 76 s
// job once said 56 min). So nothing is estimated before the job is
// measurably under way (a second, higher progress seen, or 10 % done);
// then the time left is the work left at the rate since the first
// progress once that span is at least as long as the set-up, and from the
// job's start before (short jobs, where one slow first step is the
// set-up).
type etaEstimator struct {
	seen, moving bool
	t0           time.Duration // elapsed at the first progress above zero
	f0           float64       // that progress
	t            time.Duration // the last observation
	f            float64
}

// observe records the progress frac (in [0, 1]) at elapsed.
func (e *etaEstimator) observe(elapsed time.Duration, frac float64) {
	frac = min(max(frac, 0), 1)
	switch {
	case !e.seen && frac > 0:
		e.seen, e.t0, e.f0 = true, elapsed, frac
	case e.seen && frac > e.f0:
		e.moving = true
	}
	e.t, e.f = elapsed, frac
}

// left is the estimated time left after the last observation; ok is false
// while there is no estimate.
func (e *etaEstimator) left() (time.Duration, bool) {
	switch {
	case !e.seen || !e.moving && e.f < 0.1:
		return 0, false
	case e.f >= 1:
		return 0, true
	case e.moving && e.t-e.t0 >= e.t0:
		rate := (e.f - e.f0) / (e.t - e.t0).Seconds()
		return time.Duration((1 - e.f) / rate * float64(time.Second)), true
	}
	return time.Duration(float64(e.t) * (1 - e.f) / e.f), true
}

// String is "ETA 1m05s", "ETA …" while there is no estimate, "" when done.
func (e *etaEstimator) String() string {
	d, ok := e.left()
	switch {
	case !ok:
		return "ETA …"
	case e.f >= 1:
		return ""
	}
	return "ETA " + d.Round(time.Second).String()
}
