package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/internal/retry"
	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/queue"
)

// ProductJobIDPrefix starts every product job id.
const ProductJobIDPrefix = "dap_"

// HeaderTeamID carries the team context of product API requests.
const HeaderTeamID = "X-Service-Team-Id"

// Product job states (docs/api.md, Jobs).
const (
	ProductQueued         = "queued"
	ProductRunning        = "running"
	ProductSuccess        = "success"
	ProductFailed         = "failed"
	ProductCancelled      = "cancelled"
	ProductCreditRequired = "credit_required"
)

// cancelledPrefix starts the queue record error of a cancelled product job.
const cancelledPrefix = "CANCELLED"

// Buckets of the product API.
const (
	BucketProductMeta = "product_meta"
	BucketProductIdem = "product_idem"
)

// productMeta is the API's record of a product job (bucket product_meta,
// keyed by job id): what the queue record does not hold.
type productMeta struct {
	JobID            string        `json:"job_id"`
	Product          string        `json:"product"`
	ModelID          string        `json:"model_id"`
	OrgID            string        `json:"org_id"`
	TeamID           string        `json:"team_id,omitempty"`
	KeyOwner         string        `json:"key_owner"`
	Mode             string        `json:"mode,omitempty"`
	MaxResolution    int           `json:"max_resolution,omitempty"`
	TargetResolution int           `json:"target_resolution,omitempty"`
	ParentJobID      string        `json:"parent_job_id,omitempty"`
	CallbackURL      string        `json:"callback_url,omitempty"`
	IdempotencyKey   string        `json:"idempotency_key"`
	MaxCredits       *int64        `json:"max_credits,omitempty"`
	Estimate         int64         `json:"estimate"`
	Reserved         int64         `json:"reserved"`
	CreatedAt        time.Time     `json:"created_at"`
	Webhook          *webhookState `json:"webhook,omitempty"`
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
	Code    string `json:"code"`
	Message string `json:"message"`
}

// orgCtx is who a product request acts for.
type orgCtx struct {
	Org      account.Org
	TeamID   string
	KeyOwner string
}

// withOrgKey authenticates an organisation key and resolves the team
// context: a key bound to a team acts for that team (the header, when
// sent, must name it); an organisation-wide key acts for the team the
// header names (one of its organisation's teams) or for no team.
func (s *Server) withOrgKey(h func(w http.ResponseWriter, r *http.Request, oc orgCtx) error) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		secret := strings.TrimSpace(r.Header.Get("x-api-key"))
		if secret == "" {
			return newError(CodeInvalidAPIKey, "missing x-api-key header")
		}
		p, err := s.acc.Authenticate(r.Context(), secret)
		if err != nil {
			if errors.Is(err, account.ErrInvalidKey) || errors.Is(err, account.ErrNotFound) {
				return newError(CodeInvalidAPIKey, "invalid or revoked API key")
			}
			return fmt.Errorf("api: authenticate: %w", err)
		}
		if p.Key.OrgID == "" {
			return newError(CodeOrgKeyRequired, "the product API needs an organization key (issued with POST /admin/v1/orgs/{id}/keys); this is an account key of kind %q", p.Key.Kind)
		}
		org, err := s.acc.GetOrg(r.Context(), p.Key.OrgID)
		if err != nil {
			return fmt.Errorf("api: organisation: %w", err)
		}
		oc := orgCtx{Org: org, TeamID: p.Key.TeamID, KeyOwner: p.Key.AccountID}
		header := strings.TrimSpace(r.Header.Get(HeaderTeamID))
		switch {
		case p.Key.TeamID != "" && header != "" && header != p.Key.TeamID:
			return newError(CodeTeamForbidden, "this key belongs to team %s, not %s", p.Key.TeamID, trunc.String(header, 80))
		case p.Key.TeamID == "" && header != "":
			t, err := s.acc.GetTeam(r.Context(), header)
			if errors.Is(err, account.ErrNotFound) || (err == nil && t.OrgID != org.ID) {
				return newError(CodeTeamForbidden, "team %s is not a team of this organization", trunc.String(header, 80))
			}
			if err != nil {
				return fmt.Errorf("api: team: %w", err)
			}
			oc.TeamID = t.ID
		}
		return h(w, r, oc)
	}
}

// product returns the path's product or 404 PRODUCT_NOT_FOUND.
func (s *Server) product(name string) (*productDef, error) {
	for _, p := range s.products {
		if p.Product == name {
			return p, nil
		}
	}
	return nil, newError(CodeProductNotFound, "product %q not found", trunc.String(name, 80))
}

func modelNotFound(p *productDef, id string) error {
	return newError(CodeModelNotFound, "model %q is not a model of product %s (models: %s)",
		trunc.String(id, 80), p.Product, strings.Join(p.modelIDs(), ", "))
}

// checkAccess refuses a product the organisation has not enabled or a
// model it has not consented to.
func checkAccess(oc orgCtx, p *productDef, model string) error {
	if !oc.Org.ProductEnabled(p.Product) {
		return newError(CodeProductNotEnabled, "product %s is not enabled for this organization", p.Product)
	}
	if !oc.Org.ModelConsent(model) {
		return newError(CodeModelConsentRequired, "this organization has not consented to model %s", model)
	}
	return nil
}

// listProducts is GET /v1/products.
func (s *Server) listProducts(w http.ResponseWriter, _ *http.Request, _ orgCtx) error {
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
	writeJSON(w, http.StatusOK, out)
	return nil
}

// listModels is GET /v1/products/{product}/models.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request, _ orgCtx) error {
	p, err := s.product(r.PathValue("product"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Models []modelDef `json:"models"`
	}{p.models})
	return nil
}

// productBody is a parsed product job request (or estimate request).
type productBody struct {
	ModelID        string
	IdempotencyKey string
	Inputs         json.RawMessage
	MaxCredits     *int64
	CallbackURL    string
	hash           string
}

// parseProductBody parses and checks the top-level fields of a product
// request. allowed lists the fields of the route; required those it needs.
func parseProductBody(body []byte, product string, allowed, required []string) (productBody, error) {
	var pb productBody
	fields, err := decodeObject(body)
	if err != nil {
		return pb, err
	}
	var unknown, missing []string
	for name := range fields {
		if !contains(allowed, name) {
			unknown = append(unknown, name)
		}
	}
	for _, name := range required {
		if v, ok := fields[name]; !ok || string(v) == "null" {
			missing = append(missing, name)
		}
	}
	if len(unknown) > 0 || len(missing) > 0 {
		sortStrings(unknown)
		e := invalidInput("request body: unknown fields [%s], missing fields [%s]", strings.Join(unknown, ", "), strings.Join(missing, ", "))
		e.Unknown, e.Missing = unknown, missing
		return pb, e
	}
	str := func(name string) (string, bool, error) {
		raw, ok := fields[name]
		if !ok || string(raw) == "null" {
			return "", false, nil
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", false, invalidInput("%s must be a string", name)
		}
		return v, true, nil
	}
	if bu, ok, err := str("billing_unit"); err != nil {
		return pb, err
	} else if ok {
		switch bu {
		case "credits":
		case "usd":
			return pb, newError(CodeUnsupportedBillingUnit, "billing_unit usd is not supported by product endpoints; omit it or use credits")
		default:
			return pb, invalidInput("billing_unit %q: want credits", trunc.String(bu, 40))
		}
	}
	if pb.ModelID, _, err = str("model_id"); err != nil {
		return pb, err
	}
	if n := utf8.RuneCountInString(pb.ModelID); n < 1 || n > 256 {
		return pb, invalidInput("model_id must be 1 to 256 characters")
	}
	if contains(allowed, "idempotency_key") {
		if pb.IdempotencyKey, _, err = str("idempotency_key"); err != nil {
			return pb, err
		}
		if n := utf8.RuneCountInString(pb.IdempotencyKey); n < 1 || n > MaxIdempotencyKeyLen {
			return pb, invalidInput("idempotency_key must be 1 to %d characters", MaxIdempotencyKeyLen)
		}
	}
	if cb, ok, err := str("callback_url"); err != nil {
		return pb, err
	} else if ok {
		pb.CallbackURL = cb
	}
	if raw, ok := fields["max_credits"]; ok && string(raw) != "null" {
		n, err := parseJSONInt(raw)
		if err != nil || n < 0 {
			return pb, invalidInput("max_credits must be an integer of at least 0, or null")
		}
		pb.MaxCredits = &n
	}
	pb.Inputs = fields["inputs"]
	if len(pb.Inputs) == 0 || string(pb.Inputs) == "null" {
		pb.Inputs = json.RawMessage(`{}`)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(pb.Inputs), []byte("{")) {
		return pb, invalidInput("inputs must be an object")
	}
	// The hash covers the request as the job sees it: canonical JSON of
	// every field but the idempotency key, with billing_unit defaulted
	// (the bytes json.Marshal gives, written field by field so that an
	// inline data: URI is hashed in place).
	h := sha256.New()
	h.Write([]byte(`{"product":`))
	writeString(h, product)
	h.Write([]byte(`,"model_id":`))
	writeString(h, pb.ModelID)
	h.Write([]byte(`,"inputs":`))
	if err := writeCanonical(h, bytes.TrimSpace(pb.Inputs)); err != nil {
		return pb, invalidInput("inputs: %v", err)
	}
	h.Write([]byte(`,"max_credits":`))
	if pb.MaxCredits != nil {
		writeInt(h, *pb.MaxCredits)
	} else {
		h.Write([]byte("null"))
	}
	h.Write([]byte(`,"callback_url":`))
	writeString(h, pb.CallbackURL)
	h.Write([]byte{'}'})
	sum := h.Sum(nil)
	pb.hash = hex.EncodeToString(sum[:])
	return pb, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

var (
	jobFields      = []string{"model_id", "idempotency_key", "inputs", "billing_unit", "max_credits", "callback_url"}
	jobRequired    = []string{"model_id", "idempotency_key"}
	estimateFields = []string{"model_id", "inputs", "billing_unit", "max_credits"}
)

// plan is a validated product job before it is created.
type plan struct {
	req     job.ProductRequest
	meta    productMeta
	credits int64
	exact   bool // credits is the price (false: an upper bound)
	video   bool
	frames  int
	items   []estimateItem
	uploads []string // records of the uploads it names (markUsed)
}

type estimateItem struct {
	Item    string `json:"item"`
	Units   int64  `json:"units"`
	Rate    int64  `json:"rate"`
	Credits int64  `json:"credits"`
	Note    string `json:"note,omitempty"`
}

// prepare validates inputs (schema, then the product's own rules) and
// prices the job. Inline data: inputs are stored as input objects of
// jobID (see storeInline); cleanup deletes them and must run when the job
// is not created.
func (s *Server) prepare(ctx context.Context, oc orgCtx, p *productDef, m *modelDef, inputs json.RawMessage, jobID string) (pl plan, cleanup func(), err error) {
	cleanup = func() {}
	if err := m.schemaProblems(inputs); err != nil {
		return plan{}, cleanup, err
	}
	switch p.Product {
	case job.ProductVFX:
		return s.prepareVFX(ctx, inputs, teamOwner(oc.Org.ID, oc.TeamID), jobID)
	case job.ProductFinish:
		pl, err := s.prepareFinish(ctx, oc, inputs)
		return pl, cleanup, err
	}
	return plan{}, cleanup, fmt.Errorf("api: product %s has no planner", p.Product)
}

type vfxInputs struct {
	Source             string  `json:"source"`
	AlphaMode          string  `json:"alpha_mode"`
	Alpha              string  `json:"alpha"`
	AlphaKeyframeIndex int     `json:"alpha_keyframe_index"`
	Prompt             string  `json:"prompt"`
	ReferenceImage     string  `json:"reference_image"`
	MaxResolution      int     `json:"max_resolution"`
	Seed               *uint32 `json:"seed"`
	Mode               string  `json:"mode"`
	Outputs            struct {
		Foreground bool `json:"foreground"`
	} `json:"outputs"`
}

func (s *Server) prepareVFX(ctx context.Context, inputs json.RawMessage, owner, jobID string) (plan, func(), error) {
	cleanup := func() {}
	pl, err := s.planVFX(ctx, inputs, owner, jobID, &cleanup)
	if err != nil {
		cleanup()
		return plan{}, func() {}, err
	}
	return pl, cleanup, nil
}

func (s *Server) planVFX(ctx context.Context, inputs json.RawMessage, owner, jobID string, cleanup *func()) (plan, error) {
	if ms, err := parseObject(inputs); err == nil {
		for _, m := range ms {
			if m.key == "prompt" && !utf8.Valid(m.raw) {
				return plan{}, invalidInput("inputs.prompt is not valid UTF-8")
			}
		}
	}
	var in vfxInputs
	if err := json.Unmarshal(inputs, &in); err != nil {
		return plan{}, invalidInput("inputs: %v", err)
	}
	if in.Mode == "" {
		in.Mode = job.ModeStandard
	}
	if in.MaxResolution == 0 {
		in.MaxResolution = job.DefaultMaxResolution
	}
	if err := checkPromptChars(in.Prompt); err != nil {
		return plan{}, invalidInput("inputs.%v", err)
	}
	mode, err := job.ParseAlphaMode(in.AlphaMode)
	if err == nil {
		err = mode.Supported()
	}
	if err != nil {
		return plan{}, invalidInput("inputs.alpha_mode %s: %v", in.AlphaMode, err)
	}
	jr := job.JobRequest{SourceURI: in.Source, AlphaMode: in.AlphaMode, Prompt: in.Prompt,
		ReferenceImageURI: in.ReferenceImage, MaxResolution: in.MaxResolution, Foreground: in.Outputs.Foreground}
	if mode.NeedsMatte() {
		jr.AlphaURI = in.Alpha
	}
	if in.Seed != nil {
		jr.Seed = *in.Seed
	} else {
		jr.Seed = randomSeed()
	}
	// The contract's field rules, as the worker checks them. The schema
	// has caught all of them but one: an empty prompt with no reference.
	// The generation type follows the source below and Validate only asks
	// that it be one of the two. Like the schema's, its answer is 422
	// INVALID_INPUT (the product API's code for a rule of the inputs).
	vr := jr
	vr.GenerationType, vr.AlphaKeyframeIndex = "video", in.AlphaKeyframeIndex
	if err := job.Validate(vr); err != nil {
		var ie *job.InputError
		if errors.As(err, &ie) {
			err = ie.Err
		}
		return plan{}, invalidInput("inputs: %v", err)
	}
	for _, u := range []struct{ name, uri string }{
		{"inputs.source", jr.SourceURI}, {"inputs.alpha", jr.AlphaURI}, {"inputs.reference_image", jr.ReferenceImageURI},
	} {
		if u.uri == "" {
			continue
		}
		if err := s.checkInputURI(ctx, u.name, u.uri); err != nil {
			return plan{}, err
		}
	}
	uploads, err := s.checkOwnedUploads(ctx, owner, []namedURI{
		{"source", jr.SourceURI}, {"alpha", jr.AlphaURI}, {"reference_image", jr.ReferenceImageURI}})
	if err != nil {
		return plan{}, err
	}
	if *cleanup, err = s.storeInline(ctx, "product-jobs", jobID, &jr); err != nil {
		return plan{}, err
	}
	// The generation type follows the source's content when it is at hand.
	src, err := s.input(ctx, "source", jr.SourceURI)
	if err != nil {
		return plan{}, err
	}
	frames, video, exact := DefaultVideoFramesEstimate, true, false
	if src != nil {
		info, err := codec.Probe(ctx, *src, codec.DefaultLimits())
		if err != nil {
			return plan{}, mediaError("source", err)
		}
		jr.GenerationType = "image"
		if info.Kind == codec.KindVideo {
			jr.GenerationType = "video"
		}
		if mode == job.AlphaSelect && jr.GenerationType == "video" {
			jr.AlphaKeyframeIndex = in.AlphaKeyframeIndex
		}
		if frames, err = s.checkMedia(ctx, jr); err != nil {
			return plan{}, err
		}
		video, exact = jr.GenerationType == "video", true
	} else if mode == job.AlphaSelect {
		jr.AlphaKeyframeIndex = in.AlphaKeyframeIndex
	}
	credits := vfxCredits(video, frames, in.MaxResolution, in.Mode)
	units, rate := int64(frames), int64(2)
	if !video {
		units = ImageCreditUnits
	}
	if in.MaxResolution == 720 {
		rate = 1
	}
	item := estimateItem{Item: fmt.Sprintf("vfx %s %dp", in.Mode, in.MaxResolution), Units: units, Rate: rate, Credits: credits}
	if in.Mode == job.ModeFast {
		item.Note = "fast mode: half price, rounded up"
	}
	if !exact {
		item.Note = strings.TrimPrefix(item.Note+"; upper bound: the source is not at hand, priced as a 240-frame video; the charge follows the render's frames", "; ")
	}
	return plan{
		uploads: uploads,
		req:     job.ProductRequest{Product: job.ProductVFX, ModelID: job.ModelVFX2, Mode: in.Mode, Generation: &jr},
		meta:    productMeta{Mode: in.Mode, MaxResolution: in.MaxResolution},
		credits: credits, exact: exact, video: video, frames: frames, items: []estimateItem{item},
	}, nil
}

type finishInputs struct {
	ParentJobID      string `json:"parent_job_id"`
	TargetResolution int    `json:"target_resolution"`
}

func (s *Server) prepareFinish(ctx context.Context, oc orgCtx, inputs json.RawMessage) (plan, error) {
	var in finishInputs
	if err := json.Unmarshal(inputs, &in); err != nil {
		return plan{}, invalidInput("inputs: %v", err)
	}
	if strings.HasPrefix(in.ParentJobID, JobIDPrefix) {
		return plan{}, newError(CodeParentNotProductJob,
			"parent_job_id %s is a generation API job; only vfx product jobs (dap_…) can be finished", trunc.String(in.ParentJobID, 80))
	}
	notFound := newError(CodeParentNotFound, "parent job %s not found", trunc.String(in.ParentJobID, 80))
	rec, _, err := s.q.Get(ctx, in.ParentJobID)
	if errors.Is(err, queue.ErrNotFound) || errors.Is(err, queue.ErrInvalid) {
		return plan{}, notFound
	}
	if err != nil {
		return plan{}, fmt.Errorf("api: parent %s: %w", in.ParentJobID, err)
	}
	pm, err := s.getProductMeta(ctx, rec.ID)
	if errors.Is(err, jetstream.ErrKeyNotFound) || rec.Kind != queue.KindProduct || (err == nil && pm.OrgID != oc.Org.ID) {
		return plan{}, notFound
	}
	if err != nil {
		return plan{}, err
	}
	if pm.TeamID != oc.TeamID || pm.KeyOwner != oc.KeyOwner {
		return plan{}, newError(CodeParentNotOwned,
			"parent job %s belongs to another key owner or team of this organization", rec.ID)
	}
	switch {
	case pm.Product == job.ProductFinish:
		return plan{}, newError(CodeParentIsFinish, "parent job %s is a vfx_finish result; finish its standard vfx parent instead", rec.ID)
	case pm.Product != job.ProductVFX:
		return plan{}, newError(CodeParentNotProductJob, "parent job %s is a %s job", rec.ID, pm.Product)
	case pm.Mode == job.ModeFast:
		return plan{}, newError(CodeParentFastMode, "parent job %s is a fast-mode result; only standard-mode jobs can be finished", rec.ID)
	}
	pv, err := s.productView(ctx, rec, &pm)
	if err != nil {
		return plan{}, err
	}
	render := rec.Outputs[job.OutputRender]
	if pv.Status != ProductSuccess || render == "" {
		return plan{}, newError(CodeParentNotSuccessful, "parent job %s is %s; only success-ful jobs can be finished", rec.ID, pv.Status)
	}
	video := strings.HasSuffix(render, ".mp4")
	frames := max(rec.Frames, 1)
	credits := finishCredits(video, frames, in.TargetResolution)
	units, rate := int64(frames), int64(1)
	if !video {
		units = ImageCreditUnits
	}
	if in.TargetResolution == job.FinishRes2160 {
		rate = 3
	}
	return plan{
		req: job.ProductRequest{Product: job.ProductFinish, ModelID: job.ModelVFX2,
			Finish: &job.FinishRequest{ParentJobID: rec.ID, ParentRender: render, ParentVideo: video, TargetResolution: in.TargetResolution}},
		meta:    productMeta{ParentJobID: rec.ID, TargetResolution: in.TargetResolution},
		credits: credits, exact: true, video: video, frames: frames,
		items: []estimateItem{{Item: fmt.Sprintf("vfx_finish %d", in.TargetResolution), Units: units, Rate: rate, Credits: credits}},
	}, nil
}

// estimate is POST /v1/products/{product}/estimate.
func (s *Server) estimate(w http.ResponseWriter, r *http.Request, oc orgCtx) error {
	ctx := r.Context()
	p, err := s.product(r.PathValue("product"))
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
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
	pl, cleanup, err := s.prepare(ctx, oc, p, m, pb.Inputs, "est_"+strings.TrimPrefix(newJobID(), JobIDPrefix))
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
	writeJSON(w, http.StatusOK, out)
	return nil
}

func newProductJobID() string {
	return ProductJobIDPrefix + strings.TrimPrefix(newJobID(), JobIDPrefix)
}

// postProductJob is POST /v1/products/{product}/jobs.
func (s *Server) postProductJob(w http.ResponseWriter, r *http.Request, oc orgCtx) error {
	ctx := r.Context()
	p, err := s.product(r.PathValue("product"))
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
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
	ikey := idemKey(oc.Org.ID+"-"+oc.TeamID, pb.IdempotencyKey)
	if job, found, err := s.existingProduct(ctx, ikey, pb.hash, oc); err != nil || found {
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusAccepted, job)
		return nil
	}
	if err := checkAccess(oc, p, m.ModelID); err != nil {
		return err
	}
	if pb.CallbackURL != "" {
		if err := s.checkCallbackURL(ctx, pb.CallbackURL); err != nil {
			return err
		}
	}
	jobID := newProductJobID()
	pl, cleanup, err := s.prepare(ctx, oc, p, m, pb.Inputs, jobID)
	if err != nil {
		return err
	}
	created := false
	defer func() {
		if !created {
			cleanup()
		}
	}()
	reserve := pl.credits
	if pb.MaxCredits != nil {
		if pl.exact && pl.credits > *pb.MaxCredits {
			return newError(CodeBudgetExceeded,
				"this job costs %d credits, over its max_credits of %d", pl.credits, *pb.MaxCredits)
		}
		reserve = min(reserve, *pb.MaxCredits)
	}
	for {
		v, _ := json.Marshal(idemEntry{JobID: jobID, BodyHash: pb.hash})
		if _, err := s.pidem.Create(ctx, ikey, v); err == nil {
			break
		} else if !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("api: idempotency key: %w", err)
		}
		job, found, err := s.existingProduct(ctx, ikey, pb.hash, oc)
		if err != nil {
			return err
		}
		if found {
			writeJSON(w, http.StatusAccepted, job)
			return nil
		}
	}
	job, err := s.createProduct(ctx, oc, jobID, p, pb, pl, reserve)
	if err != nil {
		_ = s.pidem.Delete(context.WithoutCancel(ctx), ikey)
		return err
	}
	created = true
	s.markUsed(ctx, pl.uploads, jobID)
	writeJSON(w, http.StatusAccepted, job)
	return nil
}

// existingProduct looks up an idempotency key of the organisation and
// team: found with the job when it names one with the same body; 409
// IDEMPOTENCY_CONFLICT when the body differs. A job still being created by
// a concurrent request is waited for (up to 15 s).
func (s *Server) existingProduct(ctx context.Context, ikey, hash string, oc orgCtx) (ProductJob, bool, error) {
	deadline := time.Now().Add(s.idemWait)
	for {
		e, err := s.pidem.Get(ctx, ikey)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return ProductJob{}, false, nil
		}
		if err != nil {
			return ProductJob{}, false, fmt.Errorf("api: idempotency key: %w", err)
		}
		var ie idemEntry
		if err := json.Unmarshal(e.Value(), &ie); err != nil {
			return ProductJob{}, false, fmt.Errorf("api: idempotency key: %w", err)
		}
		if ie.BodyHash != hash {
			return ProductJob{}, false, newError(CodeIdempotencyConflict,
				"idempotency_key already names job %s, submitted with a different body; resend that body, or use a new key only for a new job", ie.JobID)
		}
		rec, _, err := s.q.Get(ctx, ie.JobID)
		if err == nil {
			m, err := s.getProductMeta(ctx, ie.JobID)
			if err == nil && m.OrgID == oc.Org.ID {
				job, err := s.productView(ctx, rec, &m)
				return job, err == nil, err
			}
			if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
				return ProductJob{}, false, err
			}
		} else if !errors.Is(err, queue.ErrNotFound) {
			return ProductJob{}, false, fmt.Errorf("api: job %s: %w", ie.JobID, err)
		}
		if time.Now().After(deadline) {
			return ProductJob{}, false, unavailable(1,
				"a job with this idempotency_key is still being created; retry the same request")
		}
		if err := retry.Sleep(ctx, 20*time.Millisecond); err != nil {
			return ProductJob{}, false, err
		}
	}
}

// createProduct reserves the credits, records the job and submits it.
func (s *Server) createProduct(ctx context.Context, oc orgCtx, jobID string, p *productDef, pb productBody, pl plan, reserve int64) (ProductJob, error) {
	if _, err := s.acc.ReserveCredits(ctx, jobID, oc.Org.ID, oc.TeamID, reserve); err != nil {
		var be *account.BudgetError
		if errors.As(err, &be) {
			what := "the organization's credit balance"
			if be.Scope == account.ScopeTeamBudget {
				what = "the team's credit budget"
			}
			return ProductJob{}, newError(CodeBudgetExceeded,
				"%s has %d credits left; this job reserves %d", what, be.Available, be.Need)
		}
		return ProductJob{}, fmt.Errorf("api: reserve credits: %w", err)
	}
	release := func(err error) (ProductJob, error) {
		if _, rerr := s.acc.RefundCredits(context.WithoutCancel(ctx), jobID); rerr != nil {
			s.log.Warn("refund reservation", zap.String("job_id", jobID), zap.Error(rerr))
		}
		return ProductJob{}, err
	}
	now := s.now().UTC()
	m := pl.meta
	m.JobID, m.Product, m.ModelID, m.OrgID, m.TeamID, m.KeyOwner = jobID, p.Product, pb.ModelID, oc.Org.ID, oc.TeamID, oc.KeyOwner
	m.CallbackURL, m.IdempotencyKey, m.MaxCredits = pb.CallbackURL, pb.IdempotencyKey, pb.MaxCredits
	m.Estimate, m.Reserved, m.CreatedAt = pl.credits, reserve, now
	if m.CallbackURL != "" {
		m.Webhook = &webhookState{Status: WebhookPending}
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
	// The same submission as a generation's: retried while NATS fails,
	// then abandoned (marked failed) and answered 503 with Retry-After.
	rec, err := s.submit(ctx, queue.Record{ID: jobID, Kind: queue.KindProduct, Owner: oc.Org.ID,
		Request: reqJSON, Seed: seed, CreatedAt: now, ModifiedAt: now})
	if err != nil {
		s.abandon(ctx, jobID, err)
		return release(unavailable(1, "the job could not be queued (the job system is unreachable); resend the request"))
	}
	return s.productView(ctx, rec, &m)
}

func (s *Server) getProductMeta(ctx context.Context, id string) (productMeta, error) {
	e, err := s.pmeta.Get(ctx, id)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return productMeta{}, err
		}
		return productMeta{}, fmt.Errorf("api: product meta %s: %w", id, err)
	}
	var m productMeta
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		return productMeta{}, fmt.Errorf("api: product meta %s: %w", id, err)
	}
	return m, nil
}

// ownedProduct returns a product job of the caller's organisation and
// team, or 404 JOB_NOT_FOUND. The product's enablement is not checked: a
// job stays readable after its product is disabled.
func (s *Server) ownedProduct(ctx context.Context, oc orgCtx, id string) (queue.Record, productMeta, error) {
	notFound := newError(CodeJobNotFound, "job %q not found", trunc.String(id, 80))
	if !strings.HasPrefix(id, ProductJobIDPrefix) || len(id) > 200 {
		return queue.Record{}, productMeta{}, notFound
	}
	rec, _, err := s.q.Get(ctx, id)
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
func (s *Server) getProductJob(w http.ResponseWriter, r *http.Request, oc orgCtx) error {
	rec, m, err := s.ownedProduct(r.Context(), oc, r.PathValue("job_id"))
	if err != nil {
		return err
	}
	job, err := s.productView(r.Context(), rec, &m)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, job)
	return nil
}

// cancelProductJob is POST /v1/product-jobs/{job_id}/cancel: an unfinished
// job becomes cancelled and its credits are refunded; a finished job is
// returned unchanged.
func (s *Server) cancelProductJob(w http.ResponseWriter, r *http.Request, oc orgCtx) error {
	ctx := r.Context()
	rec, m, err := s.ownedProduct(ctx, oc, r.PathValue("job_id"))
	if err != nil {
		return err
	}
	if !rec.Status.Terminal() {
		next, err := s.q.Update(ctx, rec.ID, func(r *queue.Record) error {
			r.Status = queue.StatusFailed
			r.Error = cancelledPrefix + ": cancelled by the client"
			r.ErrorCode = cancelledPrefix
			return nil
		})
		switch {
		case err == nil:
			rec = next
			if err := s.q.PublishEvent(ctx, queue.Event{JobID: rec.ID, Kind: rec.Kind, Status: rec.Status, At: *rec.CompletedAt}); err != nil {
				s.log.Warn("publish cancel event", zap.String("job_id", rec.ID), zap.Error(err))
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
	writeJSON(w, http.StatusOK, job)
	return nil
}

// cost is the credits a completed product job costs, from its render.
func productCost(rec queue.Record, m *productMeta) int64 {
	video := strings.HasSuffix(rec.Outputs[job.OutputRender], ".mp4")
	if m.Product == job.ProductFinish {
		return finishCredits(video, rec.Frames, m.TargetResolution)
	}
	return vfxCredits(video, rec.Frames, m.MaxResolution, m.Mode)
}

// settleProduct settles the credits of a finished job (charge on
// completion, refund on failure or cancellation) and returns its ledger
// entry. It is idempotent: the ledger entry changes state once, whichever
// of the billing consumer, the webhook dispatcher or a read gets there
// first, and all compute the same outcome.
func (s *Server) settleProduct(ctx context.Context, rec queue.Record, m *productMeta) (account.LedgerEntry, error) {
	switch rec.Status {
	case queue.StatusCompleted:
		return s.acc.SettleCredits(ctx, rec.ID, productCost(rec, m))
	case queue.StatusFailed:
		return s.acc.RefundCredits(ctx, rec.ID)
	}
	return s.acc.Ledger(ctx, rec.ID)
}

// productView renders a product job, settling its credits first when it
// has finished.
func (s *Server) productView(ctx context.Context, rec queue.Record, m *productMeta) (ProductJob, error) {
	v := ProductJob{ID: rec.ID, Product: m.Product, ModelID: m.ModelID, OrganizationID: m.OrgID, BillingUnit: "credits",
		CreatedAt: timeString(rec.CreatedAt)}
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
		code, msg := recordCode(rec), rec.Error
		if code == cancelledPrefix {
			v.Status = ProductCancelled
		}
		if code == "" {
			code = CodeInternal
		}
		if msg == "" {
			msg = "the job failed"
		}
		v.Error = &productJobError{Code: code, Message: msg}
	case queue.StatusCompleted:
		if entry.State == account.LedgerCreditRequired {
			v.Status = ProductCreditRequired
			v.Error = &productJobError{Code: "CREDIT_REQUIRED", Message: fmt.Sprintf(
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
			u, err := s.st.PresignGet(ctx, key, OutputURLTTL)
			if err != nil {
				return ProductJob{}, fmt.Errorf("api: sign %s of %s: %w", name, rec.ID, err)
			}
			v.Outputs[name] = u
		}
	}
	return v, nil
}

// recordCode returns a failed record's error code: its ErrorCode, or for
// a record written before that field, the code at the start of its Error.
func recordCode(rec queue.Record) string {
	if rec.ErrorCode != "" {
		return rec.ErrorCode
	}
	return errorCode(rec.Error)
}

// errorCode returns the code at the start of a record error
// ("SOURCE_UNREACHABLE: …"), or "".
func errorCode(s string) string {
	code, _, ok := strings.Cut(s, ":")
	if !ok || code == "" {
		return ""
	}
	for _, c := range code {
		if !(c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9') {
			return ""
		}
	}
	return code
}
