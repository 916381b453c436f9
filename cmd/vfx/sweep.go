package main

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/queue"
)

// runSweeper runs the queue's stuck-job sweeper until ctx ends, counting
// what it does in reg: vfx_queue_swept_jobs_total{outcome} (exhausted,
// lost, cleaned, error) and the gauge vfx_queue_unaccounted_messages.
func runSweeper(ctx context.Context, q *queue.Queue, reg prometheus.Registerer, log *zap.Logger) {
	swept := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vfx_queue_swept_jobs_total",
		Help: "Jobs the queue sweeper failed (exhausted: past MaxDeliver without an advisory; lost: message gone), messages of finished jobs it deleted (cleaned), and jobs it could not handle (error).",
	}, []string{"outcome"})
	unaccounted := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "vfx_queue_unaccounted_messages",
		Help: "VFX_JOBS messages the workers consumer neither has to deliver nor has in flight, at the last sweep (exhausted, not yet failed).",
	})
	for _, c := range []prometheus.Collector{swept, unaccounted} {
		if err := reg.Register(c); err != nil {
			log.Warn("sweeper metric not registered", zap.Error(err))
		}
	}
	for _, o := range []string{"exhausted", "lost", "cleaned", "error"} {
		swept.WithLabelValues(o)
	}
	_ = q.NewSweeper(log).Run(ctx, func(st queue.SweepStats) {
		swept.WithLabelValues("exhausted").Add(float64(st.Exhausted))
		swept.WithLabelValues("lost").Add(float64(st.Lost))
		swept.WithLabelValues("cleaned").Add(float64(st.Cleaned))
		swept.WithLabelValues("error").Add(float64(st.Errors))
		unaccounted.Set(float64(st.Unaccounted))
	})
}
