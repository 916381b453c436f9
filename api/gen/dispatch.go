package gen

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/vfxrender/vfx/api"

	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/queue"
)

// genDispatch is the generation API's part: reservations of the account
// service, the webhook state in gen_meta, the body of docs/api.md.
type genDispatch struct{ s *API }

// webhookBody is the body POSTed to callback_url (docs/api.md, Webhooks).
type webhookBody struct {
	ID          string            `json:"id"`
	Status      string            `json:"status"`
	Output      map[string]string `json:"output,omitempty"`
	CompletedAt string            `json:"completed_at"`
	Error       string            `json:"error,omitempty"`
}

// Settle charges a completed job its actual cost (the render's frame
// count, as the worker recorded it) and releases a failed one uncharged.
func (g genDispatch) Settle(ctx context.Context, rec queue.Record) error {
	s := g.s
	m, err := s.getMeta(ctx, rec.ID)
	if err != nil {
		return nil // not submitted through this API: nothing reserved
	}
	if rec.Status != queue.StatusCompleted {
		return s.Acc.Settle(ctx, rec.Owner, rec.ID, false, m.Meter, 0, 0)
	}
	jr, err := job.DecodeJobRequest(rec.Request)
	if err != nil {
		return s.Acc.Settle(ctx, rec.Owner, rec.ID, false, m.Meter, 0, 0)
	}
	frames := 1
	if jr.GenerationType == "video" {
		frames = renderFrames(rec, m.EstFrames)
	}
	meter, cost := s.Prices.Estimate(jr.GenerationType, jr.MaxResolution, frames)
	return s.Acc.Settle(ctx, rec.Owner, rec.ID, true, meter, float64(frames), cost)
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

func (g genDispatch) Hook(ctx context.Context, jobID string) (dispatch.Hook, bool, error) {
	m, rev, ok, err := api.ReadHook[genMeta](ctx, g.s.meta, jobID, "job meta")
	if !ok {
		return dispatch.Hook{}, false, err
	}
	return dispatch.Hook{URL: m.CallbackURL, State: m.Webhook, Record: m, Revision: rev}, true, nil
}

// Message is the webhook body of the finished job with fresh URLs, signed
// with the account's secret.
func (g genDispatch) Message(ctx context.Context, rec queue.Record, h dispatch.Hook) (string, []byte, string, error) {
	s := g.s
	j, err := s.viewWith(ctx, rec, nil)
	if err != nil {
		return "", nil, "", err
	}
	b := webhookBody{ID: j.ID, Status: j.Status, Output: j.Output, Error: j.Error}
	if j.CompletedAt != nil {
		b.CompletedAt = *j.CompletedAt
	}
	body, err := json.Marshal(b)
	if err != nil {
		return "", nil, "", err
	}
	secret, err := s.Acc.WebhookSecret(ctx, h.Record.(*genMeta).Owner)
	if err != nil {
		return "", nil, "", fmt.Errorf("api: webhook secret: %w", err)
	}
	return string(rec.Status), body, secret, nil
}

func (g genDispatch) SaveHook(ctx context.Context, jobID string, h dispatch.Hook) error {
	return api.SaveHook(ctx, g.s.meta, jobID, h)
}
