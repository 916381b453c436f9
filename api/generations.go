package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/internal/retry"
	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/queue"
)

// JobIDPrefix starts every generation job id.
const JobIDPrefix = "vfx_"

// Webhook delivery states.
const (
	WebhookPending   = "pending"
	WebhookDelivered = "delivered"
	WebhookFailed    = "failed"
)

// genMeta is the API's record of a generation job (bucket gen_meta, keyed
// by job id): what the queue record does not hold.
type genMeta struct {
	JobID          string        `json:"job_id"`
	Owner          string        `json:"owner"`
	CallbackURL    string        `json:"callback_url,omitempty"`
	IdempotencyKey string        `json:"idempotency_key,omitempty"`
	Meter          string        `json:"meter"`
	EstFrames      int           `json:"est_frames"`
	EstCost        float64       `json:"est_cost"`
	CreatedAt      time.Time     `json:"created_at"`
	Webhook        *webhookState `json:"webhook,omitempty"`
}

// webhookState is the delivery state of a job's webhook.
type webhookState struct {
	Status    string `json:"status"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error"`
}

// idemEntry is the value of an idempotency key (bucket gen_idem).
type idemEntry struct {
	JobID    string `json:"job_id"`
	BodyHash string `json:"body_hash"`
}

// Job is a generation job as the API answers it (GET /v1/openapi.json).
type Job struct {
	ID             string            `json:"id"`
	Status         string            `json:"status"`
	Progress       *int              `json:"progress"`
	GenerationType *string           `json:"generation_type"`
	AlphaMode      *string           `json:"alpha_mode"`
	Prompt         string            `json:"prompt,omitempty"`
	Frames         int               `json:"frames,omitempty"`
	Output         map[string]string `json:"output,omitempty"`
	Seed           uint32            `json:"seed"`
	Error          string            `json:"error,omitempty"`
	CreatedAt      string            `json:"created_at"`
	ModifiedAt     string            `json:"modified_at"`
	CompletedAt    *string           `json:"completed_at"`
	Webhook        *webhookState     `json:"webhook,omitempty"`
}

func timeString(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// newJobID returns "vfx_" and 24 random letters and digits.
func newJobID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return JobIDPrefix + string(b)
}

func randomSeed() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint32(b[:])
}

// keyPart makes an account id safe as a KV key token.
func keyPart(id string) string {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "x" + hex.EncodeToString([]byte(id))
		}
	}
	if id == "" {
		return "x"
	}
	return id
}

func idemKey(owner, key string) string {
	sum := sha256.Sum256([]byte(key))
	return keyPart(owner) + "." + hex.EncodeToString(sum[:20])
}

// postGeneration is POST /v1/vfx/generations.
func (s *Server) postGeneration(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p := principalOf(ctx)
	if err := s.limit(ctx, w, account.ClassWrite); err != nil {
		return err
	}
	body, err := s.readBody(w, r)
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
	var ikey string
	if g.IdempotencyKey != nil {
		ikey = idemKey(p.Account.ID, *g.IdempotencyKey)
		if job, found, err := s.existing(ctx, ikey, hash, p.Account.ID); err != nil || found {
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, job)
			return nil
		}
	}
	uploads, err := s.checkOwnedUploads(ctx, accountOwner(p.Account.ID), []namedURI{
		{"source", jr.SourceURI}, {"alpha", jr.AlphaURI}, {"reference_image", jr.ReferenceImageURI}})
	if err != nil {
		return err
	}
	jobID := newJobID()
	cleanup, err := s.storeInline(ctx, "jobs", jobID, &jr)
	if err != nil {
		return err
	}
	created := false
	defer func() {
		if !created {
			cleanup()
		}
	}()
	frames, err := s.checkMedia(ctx, jr)
	if err != nil {
		return err
	}
	if frames == 0 {
		frames = 1
		if jr.GenerationType == "video" {
			frames = DefaultVideoFramesEstimate
		}
	}
	if g.Seed != nil {
		jr.Seed = uint32(*g.Seed)
	} else {
		jr.Seed = randomSeed()
	}
	if ikey != "" {
		for {
			v, _ := json.Marshal(idemEntry{JobID: jobID, BodyHash: hash})
			if _, err := s.idem.Create(ctx, ikey, v); err == nil {
				break
			} else if !errors.Is(err, jetstream.ErrKeyExists) {
				return fmt.Errorf("api: idempotency key: %w", err)
			}
			job, found, err := s.existing(ctx, ikey, hash, p.Account.ID)
			if err != nil {
				return err
			}
			if found {
				writeJSON(w, http.StatusOK, job)
				return nil
			}
		}
	}
	job, err := s.create(ctx, p, jobID, jr, g, frames)
	if err != nil {
		if ikey != "" {
			_ = s.idem.Delete(context.WithoutCancel(ctx), ikey)
		}
		return err
	}
	created = true
	s.markUsed(ctx, uploads, jobID)
	writeJSON(w, http.StatusCreated, job)
	return nil
}

// existing looks up an idempotency key: found with the job when it names
// one with the same body; 409 when the body differs. A job still being
// created by another request is waited for (up to 15 s).
func (s *Server) existing(ctx context.Context, ikey, hash, owner string) (Job, bool, error) {
	deadline := time.Now().Add(s.idemWait)
	for {
		e, err := s.idem.Get(ctx, ikey)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return Job{}, false, nil
		}
		if err != nil {
			return Job{}, false, fmt.Errorf("api: idempotency key: %w", err)
		}
		var ie idemEntry
		if err := json.Unmarshal(e.Value(), &ie); err != nil {
			return Job{}, false, fmt.Errorf("api: idempotency key: %w", err)
		}
		if ie.BodyHash != hash {
			return Job{}, false, newError(CodeIdempotencyConflict,
				"idempotency_key already names job %s, submitted with a different body; use the same body, or a new key for a new job", ie.JobID)
		}
		rec, _, err := s.q.Get(ctx, ie.JobID)
		if err == nil && rec.Owner == owner {
			job, err := s.view(ctx, rec)
			return job, err == nil, err
		}
		if err != nil && !errors.Is(err, queue.ErrNotFound) {
			return Job{}, false, fmt.Errorf("api: job %s: %w", ie.JobID, err)
		}
		if time.Now().After(deadline) {
			return Job{}, false, unavailable(1,
				"a job with this idempotency_key is still being created; retry the same request")
		}
		if err := retry.Sleep(ctx, 20*time.Millisecond); err != nil {
			return Job{}, false, err
		}
	}
}

// create reserves the job's estimated cost, records it and submits it.
func (s *Server) create(ctx context.Context, p account.Principal, jobID string, jr job.JobRequest, g genRequest, frames int) (Job, error) {
	meter, cost := s.prices.Estimate(jr.GenerationType, jr.MaxResolution, frames)
	if err := s.acc.Reserve(ctx, p.Account, jobID, cost, p.Key.Kind == account.KindPersonal); err != nil {
		return Job{}, accountError(err)
	}
	release := func(err error) (Job, error) {
		if serr := s.acc.Settle(context.WithoutCancel(ctx), p.Account.ID, jobID, false, meter, 0, 0); serr != nil {
			s.log.Warn("release reservation", zap.String("job_id", jobID), zap.Error(serr))
		}
		return Job{}, err
	}
	now := s.now().UTC()
	m := genMeta{JobID: jobID, Owner: p.Account.ID, CallbackURL: str(g.CallbackURL), IdempotencyKey: str(g.IdempotencyKey),
		Meter: meter, EstFrames: frames, EstCost: cost, CreatedAt: now}
	if m.CallbackURL != "" {
		m.Webhook = &webhookState{Status: WebhookPending}
	}
	mv, _ := json.Marshal(m)
	if _, err := s.meta.Put(ctx, jobID, mv); err != nil {
		return release(fmt.Errorf("api: job meta: %w", err))
	}
	if err := s.indexAdd(ctx, p.Account.ID, now, jobID); err != nil {
		return release(fmt.Errorf("api: job index: %w", err))
	}
	reqJSON, _ := json.Marshal(jr)
	rec, err := s.submit(ctx, queue.Record{ID: jobID, Kind: queue.KindGeneration, Owner: p.Account.ID,
		Request: reqJSON, Seed: jr.Seed, CreatedAt: now, ModifiedAt: now})
	if err != nil {
		if !s.abandon(ctx, jobID, err) {
			// No record was written: the index entry would point at nothing.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if ierr := s.indexRemove(dctx, p.Account.ID, now, jobID); ierr != nil {
				s.log.Warn("job index: remove the entry of a job never queued", zap.String("job_id", jobID), zap.Error(ierr))
			}
			cancel()
		}
		return release(unavailable(1, "the job could not be queued (the job system is unreachable); resend the request"))
	}
	return s.viewWith(ctx, rec, &m)
}

// submit queues the record, trying again for up to Config.SubmitRetryFor while
// NATS fails: queue.Submit resumes a half-done submission (record created,
// publish lost or unconfirmed) without queueing the job twice.
func (s *Server) submit(ctx context.Context, rec queue.Record) (queue.Record, error) {
	deadline := time.Now().Add(s.cfg.SubmitRetryFor)
	var out queue.Record
	err := retry.Call(ctx, retry.Backoff{Initial: 100 * time.Millisecond, Max: time.Second},
		func(err error) bool {
			if errors.Is(err, queue.ErrInvalid) || time.Now().After(deadline) {
				return false
			}
			s.log.Warn("queue job; retrying", zap.String("job_id", rec.ID), zap.Error(err))
			return true
		},
		func(ctx context.Context) (err error) {
			out, _, err = s.q.Submit(ctx, rec)
			return err
		})
	if err != nil {
		return queue.Record{}, fmt.Errorf("api: submit: %w", err)
	}
	return out, nil
}

// abandon marks failed, best effort, a job whose submission gave up, so
// that it does not stay in_queue in the account's list with no message
// to run it (a message that did reach the stream finds the record
// terminal and is acknowledged without work).
//
// It reports whether a record may exist: false only when there is none.
func (s *Server) abandon(ctx context.Context, jobID string, cause error) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, err := s.q.Update(ctx, jobID, func(r *queue.Record) error {
		r.Status = queue.StatusFailed
		r.Error = CodeUnavailable + ": the job could not be queued"
		r.ErrorCode = CodeUnavailable
		return nil
	})
	s.log.Error("job abandoned: it could not be queued", zap.String("job_id", jobID), zap.NamedError("cause", cause),
		zap.NamedError("mark_failed", err))
	return !errors.Is(err, queue.ErrNotFound)
}

// getGeneration is GET /v1/vfx/generations/{job_id}.
func (s *Server) getGeneration(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	if err := s.limit(ctx, w, account.ClassRead); err != nil {
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
	writeJSON(w, http.StatusOK, job)
	return nil
}

// owned returns the caller's job, or 404 JOB_NOT_FOUND for a job that does
// not exist or is someone else's.
func (s *Server) owned(ctx context.Context, id string) (queue.Record, error) {
	notFound := newError(CodeJobNotFound, "job %q not found", trunc.String(id, 80))
	if !strings.HasPrefix(id, JobIDPrefix) || len(id) > 200 {
		return queue.Record{}, notFound
	}
	rec, _, err := s.q.Get(ctx, id)
	if errors.Is(err, queue.ErrNotFound) || errors.Is(err, queue.ErrInvalid) {
		return queue.Record{}, notFound
	}
	if err != nil {
		return queue.Record{}, fmt.Errorf("api: job %s: %w", id, err)
	}
	if rec.Owner != principalOf(ctx).Account.ID || rec.Kind != queue.KindGeneration {
		return queue.Record{}, notFound
	}
	return rec, nil
}

// view renders a record as the API's job, reading its meta.
func (s *Server) view(ctx context.Context, rec queue.Record) (Job, error) {
	m, err := s.getMeta(ctx, rec.ID)
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return Job{}, err
	}
	if err != nil {
		return s.viewWith(ctx, rec, nil)
	}
	return s.viewWith(ctx, rec, &m)
}

func (s *Server) getMeta(ctx context.Context, id string) (genMeta, error) {
	e, err := s.meta.Get(ctx, id)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return genMeta{}, err
		}
		return genMeta{}, fmt.Errorf("api: job meta %s: %w", id, err)
	}
	var m genMeta
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		return genMeta{}, fmt.Errorf("api: job meta %s: %w", id, err)
	}
	return m, nil
}

// viewWith renders a record with its meta (nil when it has none), signing
// fresh output URLs.
func (s *Server) viewWith(ctx context.Context, rec queue.Record, m *genMeta) (Job, error) {
	progress := rec.Progress
	if rec.Status == queue.StatusCompleted {
		progress = 100
	}
	v := Job{ID: rec.ID, Status: string(rec.Status), Progress: &progress, Seed: rec.Seed,
		CreatedAt: timeString(rec.CreatedAt), ModifiedAt: timeString(rec.ModifiedAt)}
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
		c := timeString(*rec.CompletedAt)
		v.CompletedAt = &c
	}
	switch rec.Status {
	case queue.StatusCompleted:
		v.Output = map[string]string{}
		for _, name := range []string{job.OutputRender, job.OutputSource, job.OutputAlpha, job.OutputForeground} {
			key, ok := rec.Outputs[name]
			if !ok {
				continue
			}
			u, err := s.st.PresignGet(ctx, key, OutputURLTTL)
			if err != nil {
				return Job{}, fmt.Errorf("api: sign %s of %s: %w", name, rec.ID, err)
			}
			v.Output[name] = u
		}
	case queue.StatusFailed:
		v.Error = rec.Error
		if v.Error == "" {
			v.Error = "INTERNAL_ERROR: the job failed"
		}
	}
	if m != nil && m.CallbackURL != "" {
		v.Webhook = m.Webhook
		if v.Webhook == nil {
			v.Webhook = &webhookState{Status: WebhookPending}
		}
	}
	return v, nil
}

// JobPage is the body of GET /v1/vfx/generations.
type JobPage struct {
	Jobs          []Job   `json:"jobs"`
	NextPageToken *string `json:"next_page_token"`
}

// listGenerations is GET /v1/vfx/generations: the caller's jobs, newest
// first, with opaque cursor tokens.
func (s *Server) listGenerations(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	if err := s.limit(ctx, w, account.ClassRead); err != nil {
		return err
	}
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return unprocessable([]any{"query", "limit"}, "Input should be a valid integer", "int_parsing")
		}
		if n < 1 || n > 100 {
			return unprocessable([]any{"query", "limit"}, "Input should be between 1 and 100", "limit_range")
		}
		limit = n
	}
	owner := principalOf(ctx).Account.ID
	acct := keyPart(owner)
	prefix := acct + "."
	after, startChunk := "", -1
	if v := q.Get("page_token"); v != "" {
		b, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil || !strings.HasPrefix(string(b), prefix) {
			return unprocessable([]any{"query", "page_token"}, "Invalid page token", "value_error")
		}
		startChunk, after = parsePageToken(string(b)[len(prefix):])
	}
	cur, err := s.indexScan(ctx, acct, after, startChunk)
	if err != nil {
		return err
	}
	page := JobPage{Jobs: []Job{}}
	var last indexEntry
	for len(page.Jobs) < limit {
		e, ok, err := cur.next(ctx)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		last = e
		id := e.jobID()
		rec, _, err := s.q.Get(ctx, id)
		if errors.Is(err, queue.ErrNotFound) {
			continue // indexed by a submission that failed
		}
		if err != nil {
			return fmt.Errorf("api: job %s: %w", id, err)
		}
		if rec.Owner != owner {
			continue
		}
		job, err := s.view(ctx, rec)
		if err != nil {
			return err
		}
		page.Jobs = append(page.Jobs, job)
	}
	if len(page.Jobs) == limit {
		// A token only when an entry follows the page's last one.
		if _, more, err := cur.next(ctx); err != nil {
			return err
		} else if more {
			tok := base64.RawURLEncoding.EncodeToString([]byte(pageToken(acct, last)))
			page.NextPageToken = &tok
		}
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}
