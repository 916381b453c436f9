package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/queue"
)

// runBilling settles the reservation of every finished generation job
// until ctx ends: a completed job is charged its actual cost (the render's
// frame count, as the worker recorded it), a failed one is released
// uncharged. The account service settles a job once, so redelivered events
// charge nothing twice.
func (s *Server) runBilling(ctx context.Context, ec *queue.EventConsumer) {
	log := s.log.Named("billing")
	ec.Consume(ctx, log, func(ctx context.Context, d *queue.EventDelivery) time.Duration {
		if err := s.settle(ctx, d.Event); err != nil {
			if ctx.Err() == nil {
				log.Warn("settle job; retrying", zap.String("job_id", d.Event.JobID), zap.Error(err))
			}
			return min(time.Duration(d.Attempt)*time.Second, 30*time.Second)
		}
		return 0
	})
}

// settle charges or releases one finished job.
func (s *Server) settle(ctx context.Context, ev queue.Event) error {
	if ev.Kind == queue.KindProduct && ev.Status.Terminal() {
		return s.settleProductEvent(ctx, ev)
	}
	if ev.Kind != queue.KindGeneration || !ev.Status.Terminal() {
		return nil
	}
	rec, _, err := s.q.Get(ctx, ev.JobID)
	if errors.Is(err, queue.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("api: job: %w", err)
	}
	m, err := s.getMeta(ctx, rec.ID)
	if err != nil {
		return nil // not submitted through this API: nothing reserved
	}
	if rec.Status != queue.StatusCompleted {
		return s.acc.Settle(ctx, rec.Owner, rec.ID, false, m.Meter, 0, 0)
	}
	jr, err := job.DecodeJobRequest(rec.Request)
	if err != nil {
		return s.acc.Settle(ctx, rec.Owner, rec.ID, false, m.Meter, 0, 0)
	}
	frames := 1
	if jr.GenerationType == "video" {
		frames = renderFrames(rec, m.EstFrames)
	}
	meter, cost := s.prices.Estimate(jr.GenerationType, jr.MaxResolution, frames)
	return s.acc.Settle(ctx, rec.Owner, rec.ID, true, meter, float64(frames), cost)
}

// renderFrames is the frame count of a completed video job's render, as
// the worker recorded it, or fallback (the submission's estimate) for a
// record without one.
func renderFrames(rec queue.Record, fallback int) int {
	if rec.Frames < 1 {
		return fallback
	}
	return rec.Frames
}
