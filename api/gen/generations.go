package gen

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"net/http"
	"strconv"
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

// genMeta is the API's record of a generation job (bucket gen_meta, keyed
// by job id): what the queue record does not hold.
type genMeta struct {
	JobID          string          `json:"job_id"`
	Owner          string          `json:"owner"`
	CallbackURL    string          `json:"callback_url,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	Meter          string          `json:"meter"`
	EstFrames      int             `json:"est_frames"`
	EstCost        float64         `json:"est_cost"`
	CreatedAt      time.Time       `json:"created_at"`
	Webhook        *dispatch.State `json:"webhook,omitempty"`
}

// outputNames are the outputs a generation job's view lists when its
// record holds them: the SPEC's three, then the extensions.
var outputNames = func() []string {
	names := []string{job.OutputRender, job.OutputSource, job.OutputAlpha, job.OutputForeground}
	for _, p := range job.EXRPasses {
		names = append(names, job.OutputEXR(p))
	}
	return names
}()

// postGeneration is POST /v1/vfx/generations.
func (s *API) postGeneration(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p := api.PrincipalOf(ctx)
	if err := s.Limit(ctx, w, account.ClassWrite); err != nil {
		return err
	}
	body, err := s.ReadBody(w, r)
	if err != nil {
		return err
	}
	g, err := decodeGenRequest(body)
	if err != nil {
		return err
	}
	jr, err := s.validate(ctx, g)
	if err != nil {
		return err
	}
	jr.Foreground = g.Foreground != nil && *g.Foreground
	hash := g.hash()
	owner := p.Account.ID
	key := ""
	if g.IdempotencyKey != nil {
		key = *g.IdempotencyKey
	}
	sub, err := s.BeginSubmission(ctx, w, s.gclaims, owner, key, hash,
		"idempotency_key already names job %s, submitted with a different body; use the same body, or a new key for a new job",
		http.StatusOK, func(ctx context.Context, id string) (any, error) { return s.existingJob(ctx, id, owner) })
	if sub == nil {
		return err // refused, or the job the key names was answered
	}
	defer sub.End()
	ctx, jobID, createdAt := sub.Ctx, sub.JobID, sub.CreatedAt
	if err := s.BeginPending(ctx, api.PendingSub{JobID: jobID, Kind: api.PendingGeneration, Owner: owner, CreatedAt: createdAt}); err != nil {
		return err
	}
	defer s.EndPending(ctx, jobID) // created or given back: the record goes
	uploads, err := s.CheckOwnedUploads(ctx, api.AccountOwner(owner), []api.NamedURI{
		{What: "source", URI: jr.SourceURI}, {What: "alpha", URI: jr.AlphaURI}, {What: "reference_image", URI: jr.ReferenceImageURI}})
	if err != nil {
		return err
	}
	cleanup, err := s.StoreInline(ctx, "jobs", jobID, &jr)
	if err != nil {
		return err
	}
	defer func() {
		if !sub.Created {
			cleanup()
		}
	}()
	frames, err := s.CheckMedia(ctx, jr)
	if err != nil {
		return err
	}
	if frames == 0 {
		frames = 1
		if jr.GenerationType == "video" {
			frames = api.DefaultVideoFramesEstimate
		}
	}
	if jr.Frames != "" {
		// Checked against the source when it is at hand (checkMedia found
		// its frames); the worker checks it again in every case.
		first, last, err := job.ParseFrames(jr.Frames)
		if err == nil && s.AtHand(jr.SourceURI) {
			_, _, err = job.CheckFrames(jr.Frames, frames)
		}
		if err != nil {
			return api.MediaError("frames", err)
		}
		frames = last - first + 1
	}
	if g.Seed != nil {
		jr.Seed = uint32(*g.Seed)
	} else {
		jr.Seed = api.RandomSeed()
	}
	job, err := s.create(ctx, p, jobID, jr, g, frames, createdAt, sub.Claim)
	if err != nil {
		return err
	}
	sub.Created = true
	s.MarkUsed(ctx, uploads, jobID)
	api.WriteJSON(w, http.StatusCreated, job)
	return nil
}

// existingJob is the generation job an idempotency key names. A job still
// in_queue is resumed (queue.Submit publishes its message again when the
// process that created it died before publishing).
func (s *API) existingJob(ctx context.Context, jobID, owner string) (api.Job, error) {
	rec, _, err := s.Queue.Get(ctx, jobID)
	if err != nil {
		return api.Job{}, fmt.Errorf("api: job %s: %w", jobID, err)
	}
	if rec.Owner != owner || rec.Kind != queue.KindGeneration {
		return api.Job{}, fmt.Errorf("api: idempotency key of %s names job %s of another owner", owner, jobID)
	}
	rec = s.ResumeQueued(ctx, rec)
	return s.view(ctx, rec)
}

// create reserves the job's estimated cost, records it and submits it.
func (s *API) create(ctx context.Context, p account.Principal, jobID string, jr job.JobRequest, g genRequest, frames int, now time.Time, claim *api.HeldClaim) (api.Job, error) {
	meter, cost := s.Prices.Estimate(jr.GenerationType, jr.MaxResolution, frames)
	if err := s.Acc.Reserve(ctx, p.Account, jobID, cost, p.Key.Kind == account.KindPersonal); err != nil {
		return api.Job{}, api.AccountError(err)
	}
	release := func(err error) (api.Job, error) {
		if serr := s.Acc.Settle(context.WithoutCancel(ctx), p.Account.ID, jobID, false, meter, 0, 0); serr != nil {
			s.Log.Warn("release reservation", zap.String("job_id", jobID), zap.Error(serr))
		}
		return api.Job{}, err
	}
	m := genMeta{JobID: jobID, Owner: p.Account.ID, CallbackURL: str(g.CallbackURL), IdempotencyKey: str(g.IdempotencyKey),
		Meter: meter, EstFrames: frames, EstCost: cost, CreatedAt: now}
	if m.CallbackURL != "" {
		m.Webhook = &dispatch.State{Status: dispatch.Pending}
	}
	mv, _ := json.Marshal(m)
	if _, err := s.meta.Put(ctx, jobID, mv); err != nil {
		return release(fmt.Errorf("api: job meta: %w", err))
	}
	if err := s.indexAdd(ctx, p.Account.ID, now, jobID); err != nil {
		return release(fmt.Errorf("api: job index: %w", err))
	}
	reqJSON, _ := json.Marshal(jr)
	if claim != nil {
		if err := claim.Check(ctx); err != nil {
			s.forgetIndex(ctx, p.Account.ID, now, jobID)
			return release(err)
		}
	}
	rec, err := s.Submit(ctx, queue.Record{ID: jobID, Kind: queue.KindGeneration, Owner: p.Account.ID,
		Request: reqJSON, Seed: jr.Seed, CreatedAt: now, ModifiedAt: now})
	if err != nil {
		if !s.Abandon(ctx, jobID, err) {
			// No record was written: the index entry would point at nothing.
			s.forgetIndex(ctx, p.Account.ID, now, jobID)
		}
		return release(api.Unavailable(1, "the job could not be queued (the job system is unreachable); resend the request"))
	}
	return s.viewWith(ctx, rec, &m)
}

// forgetIndex removes the index entry of a job never queued (best effort).
func (s *API) forgetIndex(ctx context.Context, owner string, created time.Time, jobID string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.indexRemove(dctx, owner, created, jobID); err != nil {
		s.Log.Warn("job index: remove the entry of a job never queued", zap.String("job_id", jobID), zap.Error(err))
	}
}

// getGeneration is GET /v1/vfx/generations/{job_id}.
func (s *API) getGeneration(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	if err := s.Limit(ctx, w, account.ClassRead); err != nil {
		return err
	}
	id := r.PathValue("job_id")
	rec, err := s.owned(ctx, id)
	if err != nil {
		return err
	}
	job, err := s.view(ctx, rec)
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, job)
	return nil
}

// owned returns the caller's job, or 404 JOB_NOT_FOUND for a job that does
// not exist or is someone else's.
func (s *API) owned(ctx context.Context, id string) (queue.Record, error) {
	notFound := api.NewError(api.CodeJobNotFound, "job %q not found", trunc.String(id, 80))
	if !strings.HasPrefix(id, api.JobIDPrefix) || len(id) > 200 {
		return queue.Record{}, notFound
	}
	rec, _, err := s.Queue.Get(ctx, id)
	if errors.Is(err, queue.ErrNotFound) || errors.Is(err, queue.ErrInvalid) {
		return queue.Record{}, notFound
	}
	if err != nil {
		return queue.Record{}, fmt.Errorf("api: job %s: %w", id, err)
	}
	if rec.Owner != api.PrincipalOf(ctx).Account.ID || rec.Kind != queue.KindGeneration {
		return queue.Record{}, notFound
	}
	return rec, nil
}

// view renders a record as the API's job, reading its meta.
func (s *API) view(ctx context.Context, rec queue.Record) (api.Job, error) {
	m, err := s.getMeta(ctx, rec.ID)
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return api.Job{}, err
	}
	if err != nil {
		return s.viewWith(ctx, rec, nil)
	}
	return s.viewWith(ctx, rec, &m)
}

func (s *API) getMeta(ctx context.Context, id string) (genMeta, error) {
	return api.GetJSON[genMeta](ctx, s.meta, id, "job meta")
}

// viewWith renders a record with its meta (nil when it has none), signing
// fresh output URLs.
func (s *API) viewWith(ctx context.Context, rec queue.Record, m *genMeta) (api.Job, error) {
	progress := rec.Progress
	if rec.Status == queue.StatusCompleted {
		progress = 100
	}
	v := api.Job{ID: rec.ID, Status: string(rec.Status), Progress: &progress, Seed: rec.Seed,
		CreatedAt: api.TimeString(rec.CreatedAt), ModifiedAt: api.TimeString(rec.ModifiedAt)}
	if jr, err := job.DecodeJobRequest(rec.Request); err == nil {
		if jr.GenerationType != "" {
			v.GenerationType = &jr.GenerationType
		}
		if jr.AlphaMode != "" {
			v.AlphaMode = &jr.AlphaMode
		}
		v.Prompt = jr.Prompt
	}
	v.Frames = rec.Frames
	if v.Frames == 0 && m != nil {
		v.Frames = m.EstFrames
	}
	if rec.CompletedAt != nil {
		c := api.TimeString(*rec.CompletedAt)
		v.CompletedAt = &c
	}
	switch rec.Status {
	case queue.StatusCompleted:
		v.Output = map[string]string{}
		for _, name := range outputNames {
			key, ok := rec.Outputs[name]
			if !ok {
				continue
			}
			u, err := s.Store.PresignGet(ctx, key, api.OutputURLTTL)
			if err != nil {
				return api.Job{}, fmt.Errorf("api: sign %s of %s: %w", name, rec.ID, err)
			}
			v.Output[name] = u
		}
	case queue.StatusFailed:
		v.Error = job.FailureText(rec.ErrorCode, rec.Error)
		if v.Error == "" {
			v.Error = job.FailureText(api.CodeInternal, "the job failed")
		}
	}
	if m != nil && m.CallbackURL != "" {
		v.Webhook = m.Webhook
		if v.Webhook == nil {
			v.Webhook = &dispatch.State{Status: dispatch.Pending}
		}
	}
	return v, nil
}

// listGenerations is GET /v1/vfx/generations: the caller's jobs, newest
// first, with opaque cursor tokens.
func (s *API) listGenerations(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	if err := s.Limit(ctx, w, account.ClassRead); err != nil {
		return err
	}
	limit, token, err := listQuery(r)
	if err != nil {
		return err
	}
	page, err := s.jobPage(ctx, api.PrincipalOf(ctx).Account.ID, limit, token)
	if err != nil {
		return err
	}
	api.WriteJSON(w, http.StatusOK, page)
	return nil
}

// listQuery reads the limit (1-100, default 20) and page_token of a job
// list request; a malformed one is a 422 as in FastAPI.
func listQuery(r *http.Request) (limit int, token string, err error) {
	q := r.URL.Query()
	limit = 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, "", api.Unprocessable([]any{"query", "limit"}, "Input should be a valid integer", "int_parsing")
		}
		if n < 1 || n > 100 {
			return 0, "", api.Unprocessable([]any{"query", "limit"}, "Input should be between 1 and 100", "limit_range")
		}
		limit = n
	}
	return limit, q.Get("page_token"), nil
}

// jobPage is one page of owner's jobs, newest first, after the page_token
// token ("" for the first page).
func (s *API) jobPage(ctx context.Context, owner string, limit int, token string) (api.JobPage, error) {
	acct := api.KeyPart(owner)
	prefix := acct + "."
	after, startChunk := "", -1
	if token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil || !strings.HasPrefix(string(b), prefix) {
			return api.JobPage{}, api.Unprocessable([]any{"query", "page_token"}, "Invalid page token", "value_error")
		}
		startChunk, after = parsePageToken(string(b)[len(prefix):])
	}
	cur, err := s.indexScan(ctx, acct, after, startChunk)
	if err != nil {
		return api.JobPage{}, err
	}
	page := api.JobPage{Jobs: []api.Job{}}
	var last indexEntry
	for len(page.Jobs) < limit {
		e, ok, err := cur.next(ctx)
		if err != nil {
			return api.JobPage{}, err
		}
		if !ok {
			break
		}
		last = e
		id := e.jobID()
		rec, _, err := s.Queue.Get(ctx, id)
		if errors.Is(err, queue.ErrNotFound) {
			continue // indexed by a submission that failed
		}
		if err != nil {
			return api.JobPage{}, fmt.Errorf("api: job %s: %w", id, err)
		}
		if rec.Owner != owner {
			continue
		}
		job, err := s.view(ctx, rec)
		if err != nil {
			return api.JobPage{}, err
		}
		page.Jobs = append(page.Jobs, job)
	}
	if len(page.Jobs) == limit {
		// A token only when an entry follows the page's last one.
		if _, more, err := cur.next(ctx); err != nil {
			return api.JobPage{}, err
		} else if more {
			tok := base64.RawURLEncoding.EncodeToString([]byte(pageToken(acct, last)))
			page.NextPageToken = &tok
		}
	}
	return page, nil
}
