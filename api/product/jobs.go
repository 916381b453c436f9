// Product jobs: their record and the view the API answers, and the
// handlers that estimate, create, read and cancel them.

package product

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/queue"
)

// ProductJobIDPrefix starts every product job id.
const ProductJobIDPrefix = "dap_"

// Product job states (docs/api.md, Jobs).
const (
	ProductQueued         = "queued"
	ProductRunning        = "running"
	ProductSuccess        = "success"
	ProductFailed         = "failed"
	ProductCancelled      = "cancelled"
	ProductCreditRequired = "credit_required"
)

// Codes of a product job's error that only the product API gives.
const (
	// codeCancelled: the job was cancelled by its client.
	codeCancelled job.Code = "CANCELLED"
	// codeCreditRequired: the job cost more than its reservation.
	codeCreditRequired job.Code = "CREDIT_REQUIRED"
)

// Buckets of the product API.
const (
	BucketProductMeta = "product_meta"
	BucketProductIdem = "product_idem"
)

// productMeta is the API's record of a product job (bucket product_meta,
// keyed by job id): what the queue record does not hold.
type productMeta struct {
	JobID            string          `json:"job_id"`
	Product          string          `json:"product"`
	ModelID          string          `json:"model_id"`
	OrgID            string          `json:"org_id"`
	TeamID           string          `json:"team_id,omitempty"`
	KeyOwner         string          `json:"key_owner"`
	ProductMode      string          `json:"mode,omitempty"` // inputs.mode, not the alpha mode
	MaxResolution    int             `json:"max_resolution,omitempty"`
	TargetResolution int             `json:"target_resolution,omitempty"`
	ParentJobID      string          `json:"parent_job_id,omitempty"`
	CallbackURL      string          `json:"callback_url,omitempty"`
	IdempotencyKey   string          `json:"idempotency_key"`
	MaxCredits       *int64          `json:"max_credits,omitempty"`
	Estimate         int64           `json:"estimate"`
	Reserved         int64           `json:"reserved"`
	CreatedAt        time.Time       `json:"created_at"`
	Webhook          *dispatch.State `json:"webhook,omitempty"`
}

// ProductJob is a product job as the API answers it (GET /v1/openapi.json).
type ProductJob struct {
	ID             string            `json:"id"`
	Product        string            `json:"product"`
	ModelID        string            `json:"model_id"`
	OrganizationID string            `json:"organization_id"`
	TeamID         *string           `json:"team_id"`
	BillingUnit    string            `json:"billing_unit"`
	Status         string            `json:"status"`
	Progress       *float64          `json:"progress"`
	CreditsCharged *int64            `json:"credits_charged"`
	Refunded       *bool             `json:"refunded"`
	Outputs        map[string]string `json:"outputs,omitempty"`
	Error          *productJobError  `json:"error"`
	CreatedAt      string            `json:"created_at"`
}

type productJobError struct {
	Code    job.Code `json:"code"`
	Message string   `json:"message"`
}

// listProducts is GET /v1/products.
func (s *API) listProducts(w http.ResponseWriter, _ *http.Request, _ api.OrgCtx) error {
	type item struct {
		Product     string   `json:"product"`
		Name        string   `json:"name"`
		Description string   `json:"description"`
		Models      []string `json:"models"`
	}
	out := struct {
		Products []item `json:"products"`
	}{Products: []item{}}
	for _, p := range s.products {
		out.Products = append(out.Products, item{p.Product, p.Name, p.Description, p.modelIDs()})
	}
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}

// listModels is GET /v1/products/{product}/models.
func (s *API) listModels(w http.ResponseWriter, r *http.Request, _ api.OrgCtx) error {
	p, err := s.product(r.PathValue("product"))
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, struct {
		Models []modelDef `json:"models"`
	}{p.models})
	return nil
}

// estimate is POST /v1/products/{product}/estimate.
func (s *API) estimate(w http.ResponseWriter, r *http.Request, oc api.OrgCtx) error {
	ctx := r.Context()
	p, err := s.product(r.PathValue("product"))
	if err != nil {
		return err
	}
	body, err := s.ReadBody(w, r)
	if err != nil {
		return err
	}
	pb, err := parseProductBody(body, p.Product, estimateFields, []string{"model_id"})
	if err != nil {
		return err
	}
	m, ok := p.model(pb.ModelID)
	if !ok {
		return modelNotFound(p, pb.ModelID)
	}
	if err := checkAccess(oc, p, m.ModelID); err != nil {
		return err
	}
	// An estimate stores its inline inputs only while it probes them.
	pl, cleanup, err := s.prepare(ctx, oc, p, m, pb.Inputs, "est_"+strings.TrimPrefix(api.NewJobID(), api.JobIDPrefix))
	defer cleanup()
	if err != nil {
		return err
	}
	out := struct {
		Credits     int64          `json:"credits"`
		Exact       bool           `json:"exact"`
		BillingUnit string         `json:"billing_unit"`
		Breakdown   []estimateItem `json:"breakdown"`
	}{pl.credits, pl.exact, "credits", pl.items}
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}

func newProductJobID() string {
	return ProductJobIDPrefix + strings.TrimPrefix(api.NewJobID(), api.JobIDPrefix)
}

// postProductJob is POST /v1/products/{product}/jobs.
func (s *API) postProductJob(w http.ResponseWriter, r *http.Request, oc api.OrgCtx) error {
	ctx := r.Context()
	p, err := s.product(r.PathValue("product"))
	if err != nil {
		return err
	}
	body, err := s.ReadBody(w, r)
	if err != nil {
		return err
	}
	pb, err := parseProductBody(body, p.Product, jobFields, jobRequired)
	if err != nil {
		return err
	}
	m, ok := p.model(pb.ModelID)
	if !ok {
		return modelNotFound(p, pb.ModelID)
	}
	sub, err := s.BeginSubmission(ctx, w, s.pclaims, oc.Org.ID+"-"+oc.TeamID, pb.IdempotencyKey, pb.hash,
		"idempotency_key already names job %s, submitted with a different body; resend that body, or use a new key only for a new job",
		http.StatusAccepted, func(ctx context.Context, id string) (any, error) { return s.existingProductJob(ctx, id, oc) })
	if sub == nil {
		return err // refused, or the job the key names was answered
	}
	defer sub.End()
	ctx, jobID, createdAt := sub.Ctx, sub.JobID, sub.CreatedAt
	if err := checkAccess(oc, p, m.ModelID); err != nil {
		return err
	}
	if pb.CallbackURL != "" {
		if err := s.CheckCallbackURL(ctx, pb.CallbackURL); err != nil {
			return err
		}
	}
	if err := s.BeginPending(ctx, api.PendingSub{JobID: jobID, Kind: api.PendingProduct, Owner: oc.Org.ID, CreatedAt: createdAt}); err != nil {
		return err
	}
	defer s.EndPending(ctx, jobID) // created or given back: the record goes
	pl, cleanup, err := s.prepare(ctx, oc, p, m, pb.Inputs, jobID)
	if err != nil {
		return err
	}
	defer func() {
		if !sub.Created {
			cleanup()
		}
	}()
	reserve := pl.credits
	if pb.MaxCredits != nil {
		if pl.exact && pl.credits > *pb.MaxCredits {
			return api.NewError(api.CodeBudgetExceeded,
				"this job costs %d credits, over its max_credits of %d", pl.credits, *pb.MaxCredits)
		}
		reserve = min(reserve, *pb.MaxCredits)
	}
	job, err := s.createProduct(ctx, oc, jobID, p, pb, pl, reserve, createdAt, sub.Claim)
	if err != nil {
		return err
	}
	sub.Created = true
	s.MarkUsed(ctx, pl.uploads, jobID)
	api.WriteJSON(w, http.StatusAccepted, job)
	return nil
}

// existingProductJob is the product job an idempotency key of the
// organisation and team names; a job still queued is resumed (see
// resumeQueued).
func (s *API) existingProductJob(ctx context.Context, jobID string, oc api.OrgCtx) (ProductJob, error) {
	rec, _, err := s.Queue.Get(ctx, jobID)
	if err != nil {
		return ProductJob{}, fmt.Errorf("api: job %s: %w", jobID, err)
	}
	m, err := s.getProductMeta(ctx, jobID)
	if err != nil {
		return ProductJob{}, err
	}
	if m.OrgID != oc.Org.ID {
		return ProductJob{}, fmt.Errorf("api: idempotency key of %s names job %s of another organisation", oc.Org.ID, jobID)
	}
	rec = s.ResumeQueued(ctx, rec)
	return s.productView(ctx, rec, &m)
}

// createProduct reserves the credits, records the job and submits it.
func (s *API) createProduct(ctx context.Context, oc api.OrgCtx, jobID string, p *productDef, pb productBody, pl plan, reserve int64, now time.Time, claim *api.HeldClaim) (ProductJob, error) {
	if _, err := s.Acc.ReserveCredits(ctx, jobID, oc.Org.ID, oc.TeamID, reserve); err != nil {
		var be *account.BudgetError
		if errors.As(err, &be) {
			what := "the organization's credit balance"
			if be.Scope == account.ScopeTeamBudget {
				what = "the team's credit budget"
			}
			return ProductJob{}, api.NewError(api.CodeBudgetExceeded,
				"%s has %d credits left; this job reserves %d", what, be.Available, be.Need)
		}
		return ProductJob{}, fmt.Errorf("api: reserve credits: %w", err)
	}
	release := func(err error) (ProductJob, error) {
		if _, rerr := s.Acc.RefundCredits(context.WithoutCancel(ctx), jobID); rerr != nil {
			s.Log.Warn("refund reservation", zap.String("job_id", jobID), zap.Error(rerr))
		}
		return ProductJob{}, err
	}
	m := pl.meta
	m.JobID, m.Product, m.ModelID, m.OrgID, m.TeamID, m.KeyOwner = jobID, p.Product, pb.ModelID, oc.Org.ID, oc.TeamID, oc.KeyOwner
	m.CallbackURL, m.IdempotencyKey, m.MaxCredits = pb.CallbackURL, pb.IdempotencyKey, pb.MaxCredits
	m.Estimate, m.Reserved, m.CreatedAt = pl.credits, reserve, now
	if m.CallbackURL != "" {
		m.Webhook = &dispatch.State{Status: dispatch.Pending}
	}
	mv, _ := json.Marshal(m)
	if _, err := s.pmeta.Put(ctx, jobID, mv); err != nil {
		return release(fmt.Errorf("api: product meta: %w", err))
	}
	reqJSON, _ := json.Marshal(pl.req)
	var seed uint32
	if pl.req.Generation != nil {
		seed = pl.req.Generation.Seed
	}
	if err := claim.Check(ctx); err != nil {
		if derr := s.pmeta.Delete(context.WithoutCancel(ctx), jobID); derr != nil {
			s.Log.Warn("product meta of a job never queued", zap.String("job_id", jobID), zap.Error(derr))
		}
		return release(err)
	}
	// The same submission as a generation's: retried while NATS fails,
	// then abandoned (marked failed) and answered 503 with Retry-After.
	rec, err := s.Submit(ctx, queue.Record{ID: jobID, Kind: queue.KindProduct, Owner: oc.Org.ID,
		Request: reqJSON, Seed: seed, CreatedAt: now, ModifiedAt: now})
	if err != nil {
		s.Abandon(ctx, jobID, err)
		return release(api.Unavailable(1, "the job could not be queued (the job system is unreachable); resend the request"))
	}
	return s.productView(ctx, rec, &m)
}

func (s *API) getProductMeta(ctx context.Context, id string) (productMeta, error) {
	return api.GetJSON[productMeta](ctx, s.pmeta, id, "product meta")
}

// ownedProduct returns a product job of the caller's organisation and
// team, or 404 JOB_NOT_FOUND. The product's enablement is not checked: a
// job stays readable after its product is disabled.
func (s *API) ownedProduct(ctx context.Context, oc api.OrgCtx, id string) (queue.Record, productMeta, error) {
	notFound := api.NewError(api.CodeJobNotFound, "job %q not found", trunc.String(id, 80))
	if !strings.HasPrefix(id, ProductJobIDPrefix) || len(id) > 200 {
		return queue.Record{}, productMeta{}, notFound
	}
	rec, _, err := s.Queue.Get(ctx, id)
	if errors.Is(err, queue.ErrNotFound) || errors.Is(err, queue.ErrInvalid) {
		return queue.Record{}, productMeta{}, notFound
	}
	if err != nil {
		return queue.Record{}, productMeta{}, fmt.Errorf("api: job %s: %w", id, err)
	}
	m, err := s.getProductMeta(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return queue.Record{}, productMeta{}, notFound
	}
	if err != nil {
		return queue.Record{}, productMeta{}, err
	}
	if rec.Kind != queue.KindProduct || m.OrgID != oc.Org.ID || m.TeamID != oc.TeamID {
		return queue.Record{}, productMeta{}, notFound
	}
	return rec, m, nil
}

// getProductJob is GET /v1/product-jobs/{job_id}.
func (s *API) getProductJob(w http.ResponseWriter, r *http.Request, oc api.OrgCtx) error {
	rec, m, err := s.ownedProduct(r.Context(), oc, r.PathValue("job_id"))
	if err != nil {
		return err
	}
	job, err := s.productView(r.Context(), rec, &m)
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, job)
	return nil
}

// cancelProductJob is POST /v1/product-jobs/{job_id}/cancel: an unfinished
// job becomes cancelled and its credits are refunded; a finished job is
// returned unchanged.
func (s *API) cancelProductJob(w http.ResponseWriter, r *http.Request, oc api.OrgCtx) error {
	ctx := r.Context()
	rec, m, err := s.ownedProduct(ctx, oc, r.PathValue("job_id"))
	if err != nil {
		return err
	}
	if !rec.Status.Terminal() {
		next, err := s.Queue.Update(ctx, rec.ID, func(r *queue.Record) error {
			r.Status = queue.StatusFailed
			r.ErrorCode, r.Error = codeCancelled, "cancelled by the client"
			return nil
		})
		switch {
		case err == nil:
			rec = next
			if err := s.Queue.PublishEvent(ctx, queue.Event{JobID: rec.ID, Kind: rec.Kind, Status: rec.Status, At: *rec.CompletedAt}); err != nil {
				s.Log.Warn("publish cancel event", zap.String("job_id", rec.ID), zap.Error(err))
			}
		case errors.Is(err, queue.ErrTerminal):
			rec = next // finished meanwhile
		default:
			return fmt.Errorf("api: cancel %s: %w", rec.ID, err)
		}
	}
	job, err := s.productView(ctx, rec, &m)
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, job)
	return nil
}

// settleProduct settles the credits of a finished job (charge on
// completion, refund on failure or cancellation) and returns its ledger
// entry. It is idempotent: the ledger entry changes state once, whichever
// of the billing consumer, the webhook dispatcher or a read gets there
// first, and all compute the same outcome.
func (s *API) settleProduct(ctx context.Context, rec queue.Record, m *productMeta) (account.LedgerEntry, error) {
	switch rec.Status {
	case queue.StatusCompleted:
		return s.Acc.SettleCredits(ctx, rec.ID, productCost(rec, m))
	case queue.StatusFailed:
		return s.Acc.RefundCredits(ctx, rec.ID)
	}
	return s.Acc.Ledger(ctx, rec.ID)
}

// productView renders a product job, settling its credits first when it
// has finished.
func (s *API) productView(ctx context.Context, rec queue.Record, m *productMeta) (ProductJob, error) {
	v := ProductJob{ID: rec.ID, Product: m.Product, ModelID: m.ModelID, OrganizationID: m.OrgID, BillingUnit: "credits",
		CreatedAt: api.TimeString(rec.CreatedAt)}
	if m.TeamID != "" {
		v.TeamID = &m.TeamID
	}
	progress := float64(rec.Progress)
	v.Progress = &progress
	entry, err := s.settleProduct(ctx, rec, m)
	if err != nil {
		return ProductJob{}, fmt.Errorf("api: credits of %s: %w", rec.ID, err)
	}
	final := entry.State != account.LedgerReserved
	if final {
		charged, refunded := entry.Charged, entry.Refunded()
		v.CreditsCharged, v.Refunded = &charged, &refunded
	}
	switch rec.Status {
	case queue.StatusInQueue:
		v.Status = ProductQueued
	case queue.StatusProcessing:
		v.Status = ProductRunning
	case queue.StatusFailed:
		v.Status = ProductFailed
		// The message is the text the generation API shows (the code, then
		// the record's error), as it has always been.
		code, msg := rec.ErrorCode, job.FailureText(rec.ErrorCode, rec.Error)
		if code == codeCancelled {
			v.Status = ProductCancelled
		}
		if code == "" {
			code = api.CodeInternal
		}
		if msg == "" {
			msg = "the job failed"
		}
		v.Error = &productJobError{Code: code, Message: msg}
	case queue.StatusCompleted:
		if entry.State == account.LedgerCreditRequired {
			v.Status = ProductCreditRequired
			v.Error = &productJobError{Code: codeCreditRequired, Message: fmt.Sprintf(
				"the job cost %d credits, over its reservation of %d (max_credits or balance); outputs are withheld and nothing was charged", entry.Cost, entry.Reserved)}
			break
		}
		v.Status = ProductSuccess
		progress = 100
		v.Outputs = map[string]string{}
		names := []string{job.OutputRender, job.OutputSource, job.OutputAlpha, job.OutputForeground}
		if m.Product == job.ProductFinish {
			names = names[:1]
		}
		for _, name := range names {
			key, ok := rec.Outputs[name]
			if !ok {
				continue
			}
			u, err := s.Store.PresignGet(ctx, key, api.OutputURLTTL)
			if err != nil {
				return ProductJob{}, fmt.Errorf("api: sign %s of %s: %w", name, rec.ID, err)
			}
			v.Outputs[name] = u
		}
	}
	return v, nil
}
