package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/internal/kvcas"
	"github.com/vfxrender/vfx/queue"
)

// Submissions in progress (bucket api_pending, keyed by job id).
//
// Every submission writes its record here before it holds anything
// (reservation, credits, stored inline inputs, meta, index entry), adds
// each inline input's store key before storing it, and deletes the record
// once the job record exists (the job then owns all that) or once it has
// given everything back. A record left behind is a submission that died
// (its process crashed): recoverSubmission gives back what it held, as
// soon as its idempotency claim is taken over (see idem.go) or, for a
// submission without a key or whose key is never resent, when the sweeper
// (SweepPending, run with the upload sweeper) finds the record older than
// Config.PendingGrace with no job record.

// BucketPending is the KV bucket of submissions in progress.
const BucketPending = "api_pending"

// DefaultPendingGrace is how old a submission's record must be before the
// sweeper takes the submission for dead (Config.PendingGrace).
const DefaultPendingGrace = 5 * time.Minute

// Kinds of pending submissions.
const (
	PendingGeneration = "generation"
	PendingProduct    = "product"
)

// PendingSub is the record of a submission in progress.
type PendingSub struct {
	JobID string `json:"job_id"`
	// Kind is pendingGeneration or pendingProduct.
	Kind string `json:"kind"`
	// Owner is the account (generation) or organisation (product).
	Owner string `json:"owner"`
	// CreatedAt is the job's created_at (its index entry's sort key).
	CreatedAt time.Time `json:"created_at"`
	// Inputs are the store keys of the inline inputs it stores.
	Inputs []string `json:"inputs,omitempty"`
}

// BeginPending records a submission before it holds anything.
func (s *Server) BeginPending(ctx context.Context, ps PendingSub) error {
	v, _ := json.Marshal(ps)
	if _, err := s.pending.Put(ctx, ps.JobID, v); err != nil {
		return fmt.Errorf("api: pending submission: %w", err)
	}
	return nil
}

// PendingInput adds an inline input's store key to the submission's record,
// before the object is stored.
func (s *Server) PendingInput(ctx context.Context, jobID, key string) error {
	_, err := kvcas.JSON(ctx, s.pending, jobID, func(ps *PendingSub, exists bool) (bool, error) {
		if !exists {
			ps.JobID = jobID
		}
		if slices.Contains(ps.Inputs, key) {
			return false, nil
		}
		ps.Inputs = append(ps.Inputs, key)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("api: pending submission: %w", err)
	}
	return nil
}

// EndPending deletes a submission's record: its job exists, or it gave
// back what it held.
func (s *Server) EndPending(ctx context.Context, jobID string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.pending.Delete(dctx, jobID); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		s.Log.Warn("pending submission: delete record", zap.String("job_id", jobID), zap.Error(err))
	}
}

// GetPending reads a submission's record.
func (s *Server) GetPending(ctx context.Context, jobID string) (PendingSub, jetstream.KeyValueEntry, error) {
	e, err := s.pending.Get(ctx, jobID)
	if err != nil {
		return PendingSub{}, nil, err
	}
	var ps PendingSub
	if err := json.Unmarshal(e.Value(), &ps); err != nil {
		return PendingSub{}, nil, fmt.Errorf("api: pending submission %s: %w", jobID, err)
	}
	return ps, e, nil
}

// recoverSubmission gives back what the dead submission of jobID held:
// its in-flight reservation (generation) or credits (product), its stored
// inline inputs, its meta and index entries, then deletes its record. A
// submission whose job record exists is not dead: only its record goes.
// A submission without a record held nothing. It reports whether a dead
// submission was recovered.
func (s *Server) recoverSubmission(ctx context.Context, jobID string) (bool, error) {
	ps, e, err := s.GetPending(ctx, jobID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, _, err = s.Queue.Get(ctx, jobID)
	switch {
	case err == nil:
		return false, s.deletePending(ctx, jobID, e.Revision())
	case !errors.Is(err, queue.ErrNotFound):
		return false, fmt.Errorf("api: job %s: %w", jobID, err)
	}
	var errs []error
	if give := s.giveBack[ps.Kind]; give != nil {
		errs = append(errs, give(ctx, jobID, ps))
	}
	for _, k := range ps.Inputs {
		if err := s.Store.Delete(ctx, k); err != nil {
			errs = append(errs, fmt.Errorf("api: delete inline input %s: %w", k, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return false, err // the record stays: the sweeper tries again
	}
	s.Log.Info("dead submission recovered", zap.String("job_id", jobID), zap.String("kind", ps.Kind),
		zap.String("owner", ps.Owner), zap.Int("inline_inputs", len(ps.Inputs)))
	return true, s.deletePending(ctx, jobID, e.Revision())
}

// AddGiveBack adds what gives back the holdings of a dead submission of
// another API (kind: the PendingSub's Kind) when its job record does not
// exist; the inline inputs are deleted here. Call it before serving.
func (s *Server) AddGiveBack(kind string, give func(ctx context.Context, jobID string, ps PendingSub) error) {
	s.giveBack[kind] = give
}

// deletePending deletes a record if it is still at revision rev.
func (s *Server) deletePending(ctx context.Context, jobID string, rev uint64) error {
	err := s.pending.Delete(ctx, jobID, jetstream.LastRevision(rev))
	if err != nil && !kvcas.Conflict(err) && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("api: pending submission %s: %w", jobID, err)
	}
	return nil
}

// SweepPending recovers the submissions whose record is older than
// Config.PendingGrace and whose job record does not exist (their process
// died; see recoverSubmission), deletes the records of submissions whose
// job exists, and returns how many dead submissions it recovered.
func (s *Server) SweepPending(ctx context.Context) (int, error) {
	lister, err := s.pending.ListKeys(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return 0, nil
		}
		return 0, fmt.Errorf("api: pending submissions: %w", err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	n := 0
	var errs []error
	for _, k := range keys {
		e, err := s.pending.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("api: pending submissions: %w", err)
		}
		if time.Since(e.Created()) < s.Cfg.PendingGrace {
			continue
		}
		ok, err := s.recoverSubmission(ctx, k)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			n++
		}
	}
	return n, errors.Join(errs...)
}
