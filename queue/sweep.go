package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/internal/retry"
)

// SweepStats is what one sweeper pass saw and did.
type SweepStats struct {
	// Messages and Records are how many VFX_JOBS messages and job records
	// the pass read.
	Messages, Records int
	// Exhausted counts jobs failed because their message used up
	// MaxDeliver while their record went stale (no advisory came).
	Exhausted int
	// Lost counts jobs failed because their record went stale while their
	// message was no longer in VFX_JOBS.
	Lost int
	// Cleaned counts messages of finished jobs deleted from VFX_JOBS.
	Cleaned int
	// Errors counts jobs the pass could not handle (logged; the next pass
	// tries again).
	Errors int
	// Unaccounted is, at the start of the pass, the number of VFX_JOBS
	// messages the workers consumer neither has yet to deliver nor has in
	// flight: messages the server gave up on and nobody has failed yet.
	Unaccounted int
}

// Sweeper fails the jobs the server gave up on without a MAX_DELIVERIES
// advisory (the server sends one only when a pull request is waiting) and
// the jobs whose message left VFX_JOBS while their record stayed
// non-terminal. Each pass reads up to Config.SweepBatch VFX_JOBS messages,
// delivered at least once, and up to SweepBatch job records, carrying on
// where the previous pass stopped and wrapping at the end, and:
//
//   - fails the job of a message whose record is non-terminal, claimed by
//     an attempt ≥ the consumer's MaxDeliver, and unchanged for
//     Config.StaleAfter ("worker: gave up after N delivery attempts (…)"):
//     the server delivers it no more, and no worker heartbeats it;
//   - deletes the message of a record finished more than AckWait ago (its
//     ack was lost), publishing again, within the duplicate window, the
//     failed event of a failed one;
//   - fails a non-terminal record unchanged for StaleAfter whose message is
//     not in VFX_JOBS ("queue: job message lost from VFX_JOBS; …").
//
// A job is failed as WatchMaxDeliveries fails it: dead-letter copy, record
// → failed by compare-and-swap (re-checking staleness inside it), the
// failed event published by the CAS winner, message deleted. Any number of
// sweepers and watchers may run at once. A job running normally has fresh
// heartbeats (Delivery.KeepAlive) and is never touched; nor is a queued
// job, whatever its age, nor one awaiting a redelivery.
//
// Known limit: a job whose every claim failed (the record never reached the
// last attempt) and whose message the server gave up on is not recognised
// as exhausted; it shows in Unaccounted.
//
// A Sweeper keeps its scan positions; its methods are safe for concurrent
// use (passes are serialised).
type Sweeper struct {
	q   *Queue
	log *zap.Logger

	mu       sync.Mutex
	jobsNext uint64 // next VFX_JOBS sequence to read; 0: the start
	recsNext uint64 // next KV_jobs sequence to read; 0: the start
}

// NewSweeper returns a sweeper of q's jobs logging to logger (nil: none).
func (q *Queue) NewSweeper(logger *zap.Logger) *Sweeper {
	if logger == nil {
		logger = zap.NewNop()
	}
	return &Sweeper{q: q, log: logger}
}

// Run sweeps every Config.SweepInterval (plus up to a tenth of jitter, so
// replicas drift apart) until ctx ends, then returns nil. A pass that
// fails is logged and the next one tries again. report, when not nil, gets
// each pass's stats (also of a pass that failed part way).
func (s *Sweeper) Run(ctx context.Context, report func(SweepStats)) error {
	every := s.q.cfg.SweepInterval
	for {
		jitter := time.Duration(rand.Int64N(int64(every/10) + 1))
		if retry.Sleep(ctx, every+jitter) != nil {
			return nil
		}
		st, err := s.Pass(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if report != nil {
			report(st)
		}
		if err != nil {
			s.log.Warn("sweep pass failed", zap.Error(err))
		}
		if st.Exhausted+st.Lost+st.Cleaned+st.Errors > 0 {
			s.log.Info("sweep pass", zap.Int("exhausted", st.Exhausted), zap.Int("lost", st.Lost),
				zap.Int("cleaned", st.Cleaned), zap.Int("errors", st.Errors),
				zap.Int("unaccounted", st.Unaccounted))
		}
	}
}

// Pass runs one bounded sweep (see Sweeper). It returns an error when the
// consumer or a stream cannot be read; errors on single jobs are logged
// and counted in Errors.
func (s *Sweeper) Pass(ctx context.Context) (SweepStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st SweepStats
	cons, err := s.q.js.Consumer(ctx, StreamJobs, ConsumerWorkers)
	if err != nil {
		return st, fmt.Errorf("queue: sweep: consumer %s: %w", ConsumerWorkers, err)
	}
	ci, err := cons.Info(ctx)
	if err != nil {
		return st, fmt.Errorf("queue: sweep: consumer %s: %w", ConsumerWorkers, err)
	}
	si, err := s.q.jobs.Info(ctx)
	if err != nil {
		return st, fmt.Errorf("queue: sweep: stream %s: %w", StreamJobs, err)
	}
	st.Unaccounted = max(0, int(si.State.Msgs)-int(ci.NumPending)-ci.NumAckPending)
	if err := s.sweepMessages(ctx, ci, &st); err != nil {
		return st, err
	}
	if err := s.sweepRecords(ctx, &st); err != nil {
		return st, err
	}
	return st, nil
}

// stale reports whether a record has been left unchanged for StaleAfter.
func (q *Queue) stale(r Record) bool {
	last := r.ModifiedAt
	if r.HeartbeatAt != nil && r.HeartbeatAt.After(last) {
		last = *r.HeartbeatAt
	}
	return time.Since(last) >= q.cfg.StaleAfter
}

// sweepMessages reads VFX_JOBS messages already delivered at least once.
func (s *Sweeper) sweepMessages(ctx context.Context, ci *jetstream.ConsumerInfo, st *SweepStats) error {
	maxDeliver := ci.Config.MaxDeliver
	delivered := ci.Delivered.Stream
	seq := max(s.jobsNext, 1)
	for range s.q.cfg.SweepBatch {
		if seq > delivered {
			s.jobsNext = 0
			return nil
		}
		raw, err := s.q.jobs.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(SubjectJobsPrefix+">"))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			s.jobsNext = 0
			return nil
		}
		if err != nil {
			s.jobsNext = seq
			return fmt.Errorf("queue: sweep: read %s from %d: %w", StreamJobs, seq, err)
		}
		if raw.Sequence > delivered {
			s.jobsNext = 0
			return nil
		}
		seq = raw.Sequence + 1
		st.Messages++
		if err := s.sweepMessage(ctx, raw, maxDeliver, st); err != nil {
			st.Errors++
			s.log.Warn("sweep: job message not handled", zap.Uint64("seq", raw.Sequence), zap.Error(err))
		}
	}
	s.jobsNext = seq
	return nil
}

func (s *Sweeper) sweepMessage(ctx context.Context, raw *jetstream.RawStreamMsg, maxDeliver int, st *SweepStats) error {
	q := s.q
	kind, id := jobOfMsg(raw)
	if validID(id) != nil {
		return nil // the next delivery dead-letters it (Consumer.Next)
	}
	rec, _, err := q.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil // the next delivery fails it (the worker finds no record)
	}
	if err != nil {
		return err
	}
	if rec.Status.Terminal() {
		// Finished, but its ack was lost (or the worker that settles it
		// died): the message would stay in a stream for ever once the
		// server gives up on it. AckWait lets a settlement in flight land.
		if rec.CompletedAt == nil || time.Since(*rec.CompletedAt) < q.cfg.AckWait {
			return nil
		}
		if rec.Status == StatusFailed && time.Since(*rec.CompletedAt) < q.cfg.DuplicateWindow-time.Minute {
			if err := q.publishFailed(ctx, rec); err != nil {
				return err
			}
		}
		if err := q.deleteJobMsg(ctx, id, raw.Sequence); err != nil {
			return err
		}
		st.Cleaned++
		return nil
	}
	exhausted := func(r Record) bool {
		return maxDeliver > 0 && r.Attempt >= maxDeliver && q.stale(r)
	}
	if !exhausted(rec) {
		return nil
	}
	failed, err := q.failStuck(ctx, stuckJob{
		id:       id,
		kind:     kind,
		subject:  raw.Subject,
		seq:      raw.Sequence,
		data:     raw.Data,
		attempts: rec.Attempt,
		reason:   gaveUpReason(rec.Attempt, rec),
		still:    exhausted,
	})
	if err != nil {
		return err
	}
	if failed {
		st.Exhausted++
		s.log.Warn("job failed: the server gave up on it without an advisory",
			zap.String("job", id), zap.Int("attempts", rec.Attempt))
	}
	return nil
}

// kvSubjects matches every key of the jobs bucket in its stream.
const kvSubjects = "$KV." + BucketJobs + ".>"

// sweepRecords reads job records from the bucket's stream (History 1: each
// key's latest revision only).
func (s *Sweeper) sweepRecords(ctx context.Context, st *SweepStats) error {
	seq := max(s.recsNext, 1)
	for range s.q.cfg.SweepBatch {
		raw, err := s.q.recs.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(kvSubjects))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			s.recsNext = 0
			return nil
		}
		if err != nil {
			s.recsNext = seq
			return fmt.Errorf("queue: sweep: read bucket %s from %d: %w", BucketJobs, seq, err)
		}
		seq = raw.Sequence + 1
		if raw.Header.Get("KV-Operation") != "" {
			continue // a delete or purge marker
		}
		st.Records++
		var rec Record
		if json.Unmarshal(raw.Data, &rec) != nil || rec.Status.Terminal() || !s.q.stale(rec) {
			continue
		}
		if err := s.sweepRecord(ctx, rec, st); err != nil {
			st.Errors++
			s.log.Warn("sweep: job record not handled", zap.String("job", rec.ID), zap.Error(err))
		}
	}
	s.recsNext = seq
	return nil
}

func (s *Sweeper) sweepRecord(ctx context.Context, rec Record, st *SweepStats) error {
	q := s.q
	if validID(rec.ID) != nil {
		return nil
	}
	queued, err := q.jobQueued(ctx, rec.Kind, rec.ID)
	if err != nil || queued {
		return err
	}
	last := rec.ModifiedAt
	if rec.HeartbeatAt != nil && rec.HeartbeatAt.After(last) {
		last = *rec.HeartbeatAt
	}
	reason := fmt.Sprintf("queue: job message lost from %s; the job was %s and nothing was heard of it since %s",
		StreamJobs, rec.Status, last.UTC().Format(time.RFC3339))
	failed, err := q.failStuck(ctx, stuckJob{
		id:       rec.ID,
		kind:     rec.Kind,
		attempts: rec.Attempt,
		reason:   reason,
		still:    func(r Record) bool { return q.stale(r) },
	})
	if err != nil {
		return err
	}
	if failed {
		st.Lost++
		s.log.Warn("job failed: its message left the queue", zap.String("job", rec.ID),
			zap.String("status", string(rec.Status)), zap.Time("last_seen", last))
	}
	return nil
}
