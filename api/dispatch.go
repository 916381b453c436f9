package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/queue"
)

// Dispatch is the job APIs' part in billing and webhooks, by job kind,
// for dispatch.Config.APIs: the generation API's and those added with
// AddJobAPI. The command's wiring runs the dispatcher beside the Server.
func (s *Server) Dispatch() map[string]dispatch.API {
	return maps.Clone(s.jobAPIs)
}

// AddJobAPI adds another API's part in billing and webhooks, for its kind
// of job. Call it before Dispatch.
func (s *Server) AddJobAPI(kind string, a dispatch.API) { s.jobAPIs[kind] = a }

// genDispatch is the generation API's part: reservations of the account
// service, the webhook state in gen_meta, the body of docs/api.md.
type genDispatch struct{ s *Server }

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
	meter, cost := s.prices.Estimate(jr.GenerationType, jr.MaxResolution, frames)
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
	m, rev, ok, err := ReadHook[genMeta](ctx, g.s.meta, jobID, "job meta")
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
	return SaveHook(ctx, g.s.meta, jobID, h)
}

// ReadHook reads the meta record T of jobID in kv with its revision; ok is
// false when there is none or it does not decode (not ours to fix).
func ReadHook[T any](ctx context.Context, kv jetstream.KeyValue, jobID, what string) (*T, uint64, bool, error) {
	entry, err := kv.Get(ctx, jobID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("api: %s: %w", what, err)
	}
	var m T
	if err := json.Unmarshal(entry.Value(), &m); err != nil {
		return nil, 0, false, nil
	}
	return &m, entry.Revision(), true, nil
}

// SaveHook stores the meta record that holds h's state back at the
// revision it was read at.
func SaveHook(ctx context.Context, kv jetstream.KeyValue, jobID string, h dispatch.Hook) error {
	v, err := json.Marshal(h.Record)
	if err != nil {
		return err
	}
	_, err = kv.Update(ctx, jobID, v, h.Revision)
	return err
}
