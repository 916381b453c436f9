// Package product is the product API (/v1/products, /v1/product-jobs;
// docs/product-api.md) and the operator routes of organisations, their
// teams, keys, credits, products and model consent (/admin/v1/orgs), with
// the catalogue, the pricing in credits, the credit ledger reconciler and
// the product API's part in billing and webhooks (package dispatch).
//
// It is built on package api's core: an API embeds the *api.Server it
// registers its routes, its OpenAPI part and its dispatch part on.
package product

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/queue"
)

// Config configures the product API's own background pass.
type Config struct {
	// LedgerReconcileEvery is the pause between two passes of the credit
	// ledger reconciler (ReconcileLedger) that RunLedgerReconciler runs; 0
	// means DefaultLedgerReconcileEvery, negative turns it off.
	LedgerReconcileEvery time.Duration
	// LedgerReconcileGrace is how old a credit reservation must be before
	// the reconciler gives it up when its job record does not exist; 0
	// means DefaultLedgerReconcileGrace. It must exceed the Server's
	// SubmitRetryFor.
	LedgerReconcileGrace time.Duration
	// LedgerReconcileLimit is the open ledger entries one pass examines;
	// 0 means DefaultLedgerReconcileLimit.
	LedgerReconcileLimit int
}

// API is the product API on an *api.Server. Create it with New.
type API struct {
	*api.Server
	cfg      Config
	pmeta    jetstream.KeyValue
	pidem    jetstream.KeyValue
	pclaims  *api.Claims
	products []*productDef
}

// giveBack gives back what a dead submission held: its credits and its
// meta record (pending.go of package api).
func (p *API) giveBack(ctx context.Context, jobID string, _ api.PendingSub) error {
	var errs []error
	if _, err := p.Acc.RefundCredits(ctx, jobID); err != nil && !errors.Is(err, account.ErrNotFound) {
		errs = append(errs, fmt.Errorf("api: refund credits of %s: %w", jobID, err))
	}
	if err := p.pmeta.Delete(ctx, jobID); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		errs = append(errs, fmt.Errorf("api: product meta %s: %w", jobID, err))
	}
	return errors.Join(errs...)
}

// New opens (creating when missing) the product API's buckets and
// registers its routes, its part of the OpenAPI document and its part in
// billing and webhooks on s. ctx bounds the bucket set-up. Call it before
// serving s.
func New(ctx context.Context, s *api.Server, cfg Config) (*API, error) {
	p := &API{Server: s, cfg: cfg}
	if p.cfg.LedgerReconcileEvery == 0 {
		p.cfg.LedgerReconcileEvery = DefaultLedgerReconcileEvery
	}
	if p.cfg.LedgerReconcileGrace <= 0 {
		p.cfg.LedgerReconcileGrace = DefaultLedgerReconcileGrace
	}
	if p.cfg.LedgerReconcileGrace <= s.Cfg.SubmitRetryFor {
		return nil, fmt.Errorf("api: LedgerReconcileGrace %s must exceed SubmitRetryFor %s: a reservation whose job is still being submitted would be refunded",
			p.cfg.LedgerReconcileGrace, s.Cfg.SubmitRetryFor)
	}
	if p.cfg.LedgerReconcileLimit <= 0 {
		p.cfg.LedgerReconcileLimit = DefaultLedgerReconcileLimit
	}
	var err error
	if p.pmeta, err = s.OpenBucket(ctx, BucketProductMeta, "vfx product jobs: organisation, team, pricing, callback, webhook state"); err != nil {
		return nil, err
	}
	if p.pidem, err = s.OpenBucket(ctx, BucketProductIdem, "vfx product idempotency keys"); err != nil {
		return nil, err
	}
	p.pclaims = s.NewClaims(p.pidem, newProductJobID)
	if p.products, err = catalogue(); err != nil {
		return nil, err
	}
	s.HandleProduct("GET", "/v1/products", s.WithOrgKey(p.listProducts))
	s.HandleProduct("GET", "/v1/products/{product}/models", s.WithOrgKey(p.listModels))
	s.HandleProduct("POST", "/v1/products/{product}/estimate", s.WithOrgKey(p.estimate))
	s.HandleProduct("POST", "/v1/products/{product}/jobs", s.WithOrgKey(p.postProductJob))
	s.HandleProduct("GET", "/v1/product-jobs/{job_id}", s.WithOrgKey(p.getProductJob))
	s.HandleProduct("POST", "/v1/product-jobs/{job_id}/cancel", s.WithOrgKey(p.cancelProductJob))
	s.Handle("POST", "/admin/v1/orgs", s.WithAdmin(p.adminCreateOrg))
	s.Handle("GET", "/admin/v1/orgs/{id}", s.WithAdmin(p.adminGetOrg))
	s.Handle("POST", "/admin/v1/orgs/{id}/credits", s.WithAdmin(p.adminAddCredits))
	s.Handle("GET", "/admin/v1/orgs/{id}/credits", s.WithAdmin(p.adminGetCredits))
	s.Handle("POST", "/admin/v1/orgs/{id}/teams", s.WithAdmin(p.adminCreateTeam))
	s.Handle("POST", "/admin/v1/orgs/{id}/keys", s.WithAdmin(p.adminCreateOrgKey))
	s.Handle("PUT", "/admin/v1/orgs/{id}/products/{product}", s.WithAdmin(p.adminSetProduct))
	s.Handle("PUT", "/admin/v1/orgs/{id}/models/{model_id}/consent", s.WithAdmin(p.adminSetConsent))
	s.Handle("GET", "/admin/v1/orgs/{id}/webhook-secret", s.WithAdmin(p.adminOrgWebhookSecret))
	s.AddDoc(p.addProductAPI)
	s.AddJobAPI(queue.KindProduct, productDispatch{p})
	s.AddGiveBack(api.PendingProduct, p.giveBack)
	return p, nil
}
