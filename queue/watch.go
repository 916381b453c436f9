package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// maxDeliveriesAdvisory is the part of the server's
// io.nats.jetstream.advisory.v1.max_deliver advisory the watcher reads.
type maxDeliveriesAdvisory struct {
	Type       string `json:"type"`
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// WatchMaxDeliveries fails the jobs the server gave up on. For each
// MAX_DELIVERIES advisory stored in VFX_ADVISORIES it reads the job message
// from VFX_JOBS by stream sequence, copies it to the DLQ, marks the record
// failed with "worker: gave up after N delivery attempts (last error: …)"
// unless it is already terminal, deletes the message from VFX_JOBS (where
// the server would otherwise leave it for ever) and acks the advisory. A
// job whose record is completed (its ack was lost) is not dead-lettered,
// only deleted. An advisory whose message is already gone was handled
// before and is just acked. Any number of watchers may run: they share one
// durable consumer, and each step is idempotent. Errors are logged and the
// advisory is retried a second later. Returns nil when ctx ends, or an
// error when the connection is closed for good.
//
// The server sends the advisory for a last delivery that timed out (or
// was Nak'd with a delay) only when a pull request is waiting on the
// workers consumer, i.e. when some worker has a free slot.
func (q *Queue) WatchMaxDeliveries(ctx context.Context, logger *zap.Logger) error {
	log := logger
	if log == nil {
		log = zap.NewNop()
	}
	cons, err := q.js.Consumer(ctx, StreamAdvisories, ConsumerMaxDeliveries)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("queue: watch max deliveries: %w", err)
	}
	backoff := time.Duration(0)
	for {
		msg, err := pullOne(ctx, cons, q.cfg.PollWait)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, nats.ErrConnectionClosed) {
				return fmt.Errorf("queue: watch max deliveries: %w", err)
			}
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			log.Warn("advisory pull failed", zap.Error(err), zap.Duration("retry_in", backoff))
			if sleepCtx(ctx, backoff) != nil {
				return nil
			}
			continue
		}
		backoff = 0
		if err := q.handleMaxDeliveries(ctx, msg, log); err != nil {
			log.Error("max-deliveries advisory not handled; retrying later", zap.Error(err))
			if err := msg.NakWithDelay(time.Second); err != nil {
				log.Warn("nak advisory", zap.Error(err))
			}
			continue
		}
		if err := msg.DoubleAck(ctx); err != nil && ctx.Err() == nil {
			// Harmless: the advisory comes back and finds its job handled.
			log.Warn("ack advisory", zap.Error(err))
		}
	}
}

func (q *Queue) handleMaxDeliveries(ctx context.Context, msg jetstream.Msg, log *zap.Logger) error {
	var adv maxDeliveriesAdvisory
	if err := json.Unmarshal(msg.Data(), &adv); err != nil || adv.StreamSeq == 0 {
		log.Warn("ignoring malformed max-deliveries advisory", zap.ByteString("body", msg.Data()))
		return nil
	}
	if adv.Stream != StreamJobs {
		return nil
	}
	raw, err := q.jobs.GetMsg(ctx, adv.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil // handled already (by another watcher, or terminated)
	}
	if err != nil {
		return fmt.Errorf("queue: max deliveries: get message %d: %w", adv.StreamSeq, err)
	}
	kind, subjID := parseJobSubject(raw.Subject)
	id := strings.TrimSpace(string(raw.Data))
	if id == "" {
		id = subjID
	}
	deliveries := int(adv.Deliveries)
	if deliveries <= 0 {
		deliveries = q.cfg.MaxDeliver
	}
	reason := fmt.Sprintf("worker: gave up after %d delivery attempts", deliveries)

	valid := validID(id) == nil
	if valid {
		rec, _, err := q.Get(ctx, id)
		switch {
		case err == nil && rec.Status == StatusCompleted:
			// Finished after all (its ack was lost): nothing to dead-letter.
			return q.deleteJobMsg(ctx, id, raw.Sequence)
		case err == nil && rec.LastError != "":
			reason += " (last error: " + rec.LastError + ")"
		case err == nil && rec.Worker != "":
			reason += fmt.Sprintf(" (no error reported; last worker %s stopped responding)", rec.Worker)
		case err == nil:
			reason += " (no error reported; the job timed out)"
		case !errors.Is(err, ErrNotFound):
			return fmt.Errorf("queue: max deliveries: %w", err)
		}
	}

	err = q.deadLetter(ctx, DeadLetter{
		JobID:     id,
		Kind:      kind,
		Subject:   raw.Subject,
		StreamSeq: raw.Sequence,
		Attempts:  deliveries,
		Reason:    reason,
		Data:      raw.Data,
	})
	if err != nil {
		return fmt.Errorf("queue: max deliveries %s: %w", id, err)
	}
	if valid {
		rec, err := q.Update(ctx, id, func(r *Record) error {
			r.Status = StatusFailed
			r.Error = reason
			return nil
		})
		if err != nil && !errors.Is(err, ErrTerminal) && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("queue: max deliveries: %w", err)
		}
		// The job's end is an event like any other (webhooks hang on it);
		// the event's message id makes a second watcher's copy a no-op.
		if err == nil && rec.Status == StatusFailed {
			if err := q.PublishEvent(ctx, Event{JobID: id, Kind: kind, Status: StatusFailed}); err != nil {
				return fmt.Errorf("queue: max deliveries: %w", err)
			}
		}
	}
	if err := q.deleteJobMsg(ctx, id, raw.Sequence); err != nil {
		return err
	}
	log.Info("job failed after max deliveries", zap.String("job", id), zap.Int("deliveries", deliveries))
	return nil
}

// deleteJobMsg deletes a job message; one already gone counts as deleted
// (the server answers a second delete with a generic "no message found"
// error, not ErrMsgNotFound, so absence is checked with a read).
func (q *Queue) deleteJobMsg(ctx context.Context, id string, seq uint64) error {
	err := q.jobs.DeleteMsg(ctx, seq)
	if err == nil {
		return nil
	}
	if _, gerr := q.jobs.GetMsg(ctx, seq); errors.Is(gerr, jetstream.ErrMsgNotFound) {
		return nil
	}
	return fmt.Errorf("queue: max deliveries %s: delete message %d: %w", id, seq, err)
}
