package product

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vfxrender/vfx/api"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/queue"
)

// productDispatch is the product API's part: the organisation's credits,
// the webhook state in product_meta, the product job as the body.
type productDispatch struct{ s *API }

// Settle settles the credits of a finished product job.
func (p productDispatch) Settle(ctx context.Context, rec queue.Record) error {
	m, err := p.s.getProductMeta(ctx, rec.ID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = p.s.settleProduct(ctx, rec, &m)
	return err
}

func (p productDispatch) Hook(ctx context.Context, jobID string) (dispatch.Hook, bool, error) {
	m, rev, ok, err := api.ReadHook[productMeta](ctx, p.s.pmeta, jobID, "product meta")
	if !ok {
		return dispatch.Hook{}, false, err
	}
	return dispatch.Hook{URL: m.CallbackURL, State: m.Webhook, Record: m, Revision: rev}, true, nil
}

// Message is the product job (credits settled first, so the body carries
// the final status), signed with the organisation's secret.
func (p productDispatch) Message(ctx context.Context, rec queue.Record, h dispatch.Hook) (string, []byte, string, error) {
	m := h.Record.(*productMeta)
	j, err := p.s.productView(ctx, rec, m)
	if err != nil {
		return "", nil, "", err
	}
	body, err := json.Marshal(j)
	if err != nil {
		return "", nil, "", err
	}
	secret, err := p.s.Acc.OrgWebhookSecret(ctx, m.OrgID)
	if err != nil {
		return "", nil, "", fmt.Errorf("api: webhook secret: %w", err)
	}
	return j.Status, body, secret, nil
}

func (p productDispatch) SaveHook(ctx context.Context, jobID string, h dispatch.Hook) error {
	return api.SaveHook(ctx, p.s.pmeta, jobID, h)
}
