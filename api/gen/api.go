// Package gen is the generation API (/v1/vfx/generations, /v1/vfx/events,
// /v1/account/*; docs/api.md) and the operator routes of what it
// administers: accounts and their keys (/admin/v1/accounts,
// /admin/v1/keys) and the queue it feeds (/admin/v1/queue); with the
// per-account job index, the event streams and the generation API's part
// in billing and webhooks (package dispatch).
//
// It is built on package api's core: an API embeds the *api.Server it
// registers its routes, its dispatch part and its give-back on.
package gen

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/queue"
)

// API is the generation API on an *api.Server. Create it with New.
type API struct {
	*api.Server
	meta  jetstream.KeyValue
	idem  jetstream.KeyValue
	index jetstream.KeyValue
	chunk int // entries per chunk of the job index (DefaultIndexChunk)
	// gclaims are the idempotency claims of the generation API (bucket
	// gen_idem).
	gclaims *api.Claims
	streams *streams
}

// New opens (creating when missing) the generation API's buckets,
// migrates the job index of the former layout, and registers the API's
// routes, its part in billing and webhooks and its give-back on s; the
// event-stream settings of s's Config get their defaults. ctx bounds the
// bucket set-up. Call it before serving s.
func New(ctx context.Context, s *api.Server) (*API, error) {
	g := &API{Server: s, chunk: DefaultIndexChunk, streams: newStreams()}
	if s.Cfg.StreamEvery <= 0 {
		s.Cfg.StreamEvery = DefaultStreamEvery
	}
	if s.Cfg.StreamMaxAge <= 0 {
		s.Cfg.StreamMaxAge = DefaultStreamMaxAge
	}
	if s.Cfg.MaxStreamsPerAccount <= 0 {
		s.Cfg.MaxStreamsPerAccount = DefaultMaxStreamsPerAccount
	}
	var err error
	if g.meta, err = s.OpenBucket(ctx, api.BucketMeta, "vfx generation jobs: owner, callback, webhook state"); err != nil {
		return nil, err
	}
	if g.idem, err = s.OpenBucket(ctx, api.BucketIdem, "vfx generation idempotency keys"); err != nil {
		return nil, err
	}
	if g.index, err = s.OpenBucket(ctx, api.BucketIndex, "vfx generation jobs by account, newest first"); err != nil {
		return nil, err
	}
	if n, err := g.migrateIndex(ctx); err != nil {
		return nil, err
	} else if n > 0 {
		s.Log.Info("job index: entries of the former layout moved into chunks", zap.Int("entries", n))
	}
	g.gclaims = s.NewClaims(g.idem, api.NewJobID)
	s.Handle("POST", "/v1/vfx/generations", s.WithKey(g.postGeneration))
	s.Handle("GET", "/v1/vfx/generations", s.WithKey(g.listGenerations))
	s.Handle("GET", "/v1/vfx/generations/{job_id}", s.WithKey(g.getGeneration))
	s.Handle("GET", "/v1/vfx/events", s.WithKey(g.streamGenerations))
	s.Handle("GET", "/v1/account/info", s.WithKey(g.accountInfo))
	s.Handle("GET", "/v1/account/billing", s.WithKey(g.accountBilling))
	s.Handle("POST", "/admin/v1/accounts", s.WithAdmin(g.adminCreateAccount))
	s.Handle("PATCH", "/admin/v1/accounts/{id}", s.WithAdmin(g.adminUpdateAccount))
	s.Handle("POST", "/admin/v1/accounts/{id}/keys", s.WithAdmin(g.adminCreateKey))
	s.Handle("DELETE", "/admin/v1/keys/{key_id}", s.WithAdmin(g.adminRevokeKey))
	s.Handle("GET", "/admin/v1/accounts/{id}/webhook-secret", s.WithAdmin(g.adminWebhookSecret))
	s.Handle("GET", "/admin/v1/queue", s.WithAdmin(g.adminQueue))
	s.AddDoc(g.addDoc)
	s.AddJobAPI(queue.KindGeneration, genDispatch{g})
	s.AddGiveBack(api.PendingGeneration, g.giveBack)
	return g, nil
}

// giveBack gives back what a dead generation submission held: its
// account slot, its meta record and its index entry (pending.go of
// package api).
func (g *API) giveBack(ctx context.Context, jobID string, ps api.PendingSub) error {
	var errs []error
	if err := g.Acc.AbandonReservation(ctx, ps.Owner, jobID); err != nil && !errors.Is(err, account.ErrNotFound) {
		errs = append(errs, err)
	}
	if err := g.meta.Delete(ctx, jobID); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		errs = append(errs, fmt.Errorf("api: job meta %s: %w", jobID, err))
	}
	if !ps.CreatedAt.IsZero() {
		if err := g.indexRemove(ctx, ps.Owner, ps.CreatedAt, jobID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
