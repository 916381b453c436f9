package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/internal/retry"
	"github.com/vfxrender/vfx/queue"
)

// JobIDPrefix starts every generation job id.
const JobIDPrefix = "vfx_"

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
	Webhook        *dispatch.State   `json:"webhook,omitempty"`
}

func TimeString(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// NewJobID returns "vfx_" and 24 random letters and digits.
func NewJobID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return JobIDPrefix + string(b)
}

func RandomSeed() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint32(b[:])
}

// keyPart makes an account id safe as a KV key token.
func KeyPart(id string) string {
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

func IdemKey(owner, key string) string {
	sum := sha256.Sum256([]byte(key))
	return KeyPart(owner) + "." + hex.EncodeToString(sum[:20])
}

// jobExists reports whether the queue holds a record of jobID.
func (s *Server) jobExists(ctx context.Context, jobID string) (bool, error) {
	_, _, err := s.Queue.Get(ctx, jobID)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, queue.ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("api: job %s: %w", jobID, err)
}

// ResumeQueued re-submits a job record still in_queue, which publishes its
// message again if it is missing from the stream (best effort: the queue's
// sweeper fails a job whose message is lost).
func (s *Server) ResumeQueued(ctx context.Context, rec queue.Record) queue.Record {
	if rec.Status != queue.StatusInQueue {
		return rec
	}
	out, _, err := s.Queue.Submit(ctx, rec)
	if err != nil {
		s.Log.Warn("resume a queued job", zap.String("job_id", rec.ID), zap.Error(err))
		return rec
	}
	return out
}

// recoverDead gives back what the dead submission of a taken-over claim
// held (recoverSubmission); what fails is left to the sweeper.
func (s *Server) recoverDead(ctx context.Context, jobID string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := s.recoverSubmission(rctx, jobID); err != nil {
		s.Log.Warn("recover a dead submission; the sweeper retries", zap.String("job_id", jobID), zap.Error(err))
	}
}

// idemError maps an acquire error: a claim of another body is 409
// IDEMPOTENCY_CONFLICT with msg (%s: the job id).
func idemError(err error, msg string) error {
	var ce *idemConflictError
	if errors.As(err, &ce) {
		return NewError(CodeIdempotencyConflict, msg, ce.JobID)
	}
	return err
}

// Submit queues the record, trying again for up to Config.SubmitRetryFor while
// NATS fails: queue.Submit resumes a half-done submission (record created,
// publish lost or unconfirmed) without queueing the job twice.
func (s *Server) Submit(ctx context.Context, rec queue.Record) (queue.Record, error) {
	deadline := time.Now().Add(s.Cfg.SubmitRetryFor)
	var out queue.Record
	err := retry.Call(ctx, retry.Backoff{Initial: 100 * time.Millisecond, Max: time.Second},
		func(err error) bool {
			if errors.Is(err, queue.ErrInvalid) || time.Now().After(deadline) {
				return false
			}
			s.Log.Warn("queue job; retrying", zap.String("job_id", rec.ID), zap.Error(err))
			return true
		},
		func(ctx context.Context) (err error) {
			out, _, err = s.Queue.Submit(ctx, rec)
			return err
		})
	if err != nil {
		return queue.Record{}, fmt.Errorf("api: submit: %w", err)
	}
	return out, nil
}

// Abandon marks failed, best effort, a job whose submission gave up, so
// that it does not stay in_queue in the account's list with no message
// to run it (a message that did reach the stream finds the record
// terminal and is acknowledged without work).
//
// It reports whether a record may exist: false only when there is none.
func (s *Server) Abandon(ctx context.Context, jobID string, cause error) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, err := s.Queue.Update(ctx, jobID, func(r *queue.Record) error {
		r.Status = queue.StatusFailed
		r.ErrorCode, r.Error = CodeUnavailable, "the job could not be queued"
		return nil
	})
	s.Log.Error("job abandoned: it could not be queued", zap.String("job_id", jobID), zap.NamedError("cause", cause),
		zap.NamedError("mark_failed", err))
	return !errors.Is(err, queue.ErrNotFound)
}

// GetJSON reads the JSON value of id in kv (what names it in errors); a
// key that is not there is jetstream.ErrKeyNotFound, as it is.
func GetJSON[T any](ctx context.Context, kv jetstream.KeyValue, id, what string) (T, error) {
	var zero T
	e, err := kv.Get(ctx, id)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return zero, err
		}
		return zero, fmt.Errorf("api: %s %s: %w", what, id, err)
	}
	var v T
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return zero, fmt.Errorf("api: %s %s: %w", what, id, err)
	}
	return v, nil
}

// JobPage is the body of GET /v1/vfx/generations.
type JobPage struct {
	Jobs          []Job   `json:"jobs"`
	NextPageToken *string `json:"next_page_token"`
}
