package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/queue"
)

// settleProductEvent settles the credits of a finished product job (the
// billing consumer's share of product events).
func (s *Server) settleProductEvent(ctx context.Context, ev queue.Event) error {
	rec, _, err := s.q.Get(ctx, ev.JobID)
	if errors.Is(err, queue.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("api: job: %w", err)
	}
	m, err := s.getProductMeta(ctx, rec.ID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = s.settleProduct(ctx, rec, &m)
	return err
}

// deliverProduct makes one webhook attempt for a finished product job:
// the body is the product job (credits settled first, so the body carries
// the final status), signed with the organisation's secret; the schedule
// and delivery state work as for generation jobs.
func (s *Server) deliverProduct(ctx context.Context, ev queue.Event) (time.Duration, error) {
	entry, err := s.pmeta.Get(ctx, ev.JobID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("api: product meta: %w", err)
	}
	var m productMeta
	if err := json.Unmarshal(entry.Value(), &m); err != nil {
		return 0, nil
	}
	rec, due, err := s.hookDue(ctx, ev.JobID, m.CallbackURL, m.Webhook)
	if err != nil || !due {
		return 0, err
	}
	job, err := s.productView(ctx, rec, &m)
	if err != nil {
		return 0, err
	}
	body, err := json.Marshal(job)
	if err != nil {
		return 0, err
	}
	secret, err := s.acc.OrgWebhookSecret(ctx, m.OrgID)
	if err != nil {
		return 0, fmt.Errorf("api: webhook secret: %w", err)
	}
	attemptErr := s.post(ctx, m.CallbackURL, rec.ID+"_"+job.Status, secret, body)
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	m.Webhook.record(attemptErr, s.maxHookAttempts())
	v, _ := json.Marshal(m)
	if _, err := s.pmeta.Update(context.WithoutCancel(ctx), ev.JobID, v, entry.Revision()); err != nil {
		return 0, fmt.Errorf("api: store webhook state: %w", err)
	}
	s.log.Info("product webhook attempt", zap.String("job_id", rec.ID), zap.Int("attempt", m.Webhook.Attempts),
		zap.String("status", m.Webhook.Status), zap.String("last_error", m.Webhook.LastError))
	return s.retryAfter(m.Webhook), nil
}
