package worker

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Job outcomes, the values of the "outcome" label of
// vfx_worker_jobs_total.
const (
	// OutcomeCompleted: this worker completed the job.
	OutcomeCompleted = "completed"
	// OutcomeFailed: the job failed for good (bad input) on this worker.
	OutcomeFailed = "failed"
	// OutcomeRetried: a transient error; the job was handed back for a
	// later attempt.
	OutcomeRetried = "retried"
	// OutcomeReleased: the worker stopped (drain timeout) and handed the
	// job back at once.
	OutcomeReleased = "released"
	// OutcomeSkipped: the job had already finished (a redelivery after a
	// lost ack); it was only acknowledged.
	OutcomeSkipped = "skipped"
)

// Metrics are the Prometheus collectors of a worker daemon. Create them
// with NewMetrics on a registry of your own; a nil *Metrics records
// nothing.
type Metrics struct {
	jobs         *prometheus.CounterVec
	queueWait    prometheus.Histogram
	renderSecs   prometheus.Histogram
	fps          prometheus.Histogram
	frames       prometheus.Counter
	inFlight     prometheus.Gauge
	redeliveries prometheus.Counter
}

// NewMetrics creates the worker's collectors and registers them on reg:
//
//   - vfx_worker_jobs_total{outcome}: jobs handled, by outcome (completed,
//     failed, retried, released, skipped);
//   - vfx_worker_queue_wait_seconds: from job creation to the start of its
//     first attempt;
//   - vfx_worker_render_seconds: pipeline time of each rendered job
//     (decode, matte, render, encode; not fetch or upload);
//   - vfx_worker_frames_per_second: frames per second of each rendered job;
//   - vfx_worker_frames_total: frames rendered;
//   - vfx_worker_jobs_in_flight: jobs being worked on now;
//   - vfx_worker_redeliveries_total: deliveries with attempt > 1.
//
// It returns an error when a collector is already registered on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vfx_worker_jobs_total",
			Help: "Jobs handled by this worker, by outcome (completed, failed, retried, released, skipped).",
		}, []string{"outcome"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vfx_worker_queue_wait_seconds",
			Help:    "Time from job creation to the start of its first attempt.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2.5, 12), // 50 ms … ~3 h
		}),
		renderSecs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vfx_worker_render_seconds",
			Help:    "Pipeline time of each rendered job (decode, matte, render, encode).",
			Buckets: prometheus.ExponentialBuckets(0.1, 2, 14), // 100 ms … ~27 min
		}),
		fps: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vfx_worker_frames_per_second",
			Help:    "Frames per second of each rendered job.",
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 12), // 0.5 … 1024
		}),
		frames: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vfx_worker_frames_total",
			Help: "Frames rendered by this worker.",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vfx_worker_jobs_in_flight",
			Help: "Jobs this worker is working on now.",
		}),
		redeliveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vfx_worker_redeliveries_total",
			Help: "Job deliveries received with attempt > 1 (a previous attempt failed, timed out or was released).",
		}),
	}
	for _, c := range []prometheus.Collector{m.jobs, m.queueWait, m.renderSecs, m.fps, m.frames, m.inFlight, m.redeliveries} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("worker: metrics: %w", err)
		}
	}
	for _, o := range []string{OutcomeCompleted, OutcomeFailed, OutcomeRetried, OutcomeReleased, OutcomeSkipped} {
		m.jobs.WithLabelValues(o) // export zeros
	}
	return m, nil
}

func (m *Metrics) outcome(o string) {
	if m != nil {
		m.jobs.WithLabelValues(o).Inc()
	}
}

func (m *Metrics) started(attempt int, wait float64) {
	if m == nil {
		return
	}
	m.inFlight.Inc()
	if attempt > 1 {
		m.redeliveries.Inc()
	} else if wait >= 0 {
		m.queueWait.Observe(wait)
	}
}

func (m *Metrics) finished() {
	if m != nil {
		m.inFlight.Dec()
	}
}

func (m *Metrics) rendered(frames int, secs float64) {
	if m == nil {
		return
	}
	m.renderSecs.Observe(secs)
	m.frames.Add(float64(frames))
	if secs > 0 {
		m.fps.Observe(float64(frames) / secs)
	}
}
