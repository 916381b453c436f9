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

	"github.com/vfxrender/vfx/internal/retry"
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
// was Nak'd) only when a pull request is waiting on the workers consumer,
// i.e. when some worker has a free slot; the Sweeper catches the jobs whose
// advisory never came. Both fail a job the same way (failStuck) and the
// record's compare-and-swap lets only one of them publish the event.
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
	backoff := retry.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second}
	for {
		msg, err := pullOne(ctx, cons, q.cfg.PollWait)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, nats.ErrConnectionClosed) {
				return fmt.Errorf("queue: watch max deliveries: %w", err)
			}
			pause := backoff.Pause()
			log.Warn("advisory pull failed", zap.Error(err), zap.Duration("retry_in", pause))
			if retry.Sleep(ctx, pause) != nil {
				return nil
			}
			continue
		}
		backoff.Reset()
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
	kind, id := jobOfMsg(raw)
	deliveries := int(adv.Deliveries)
	if deliveries <= 0 {
		deliveries = q.cfg.MaxDeliver
	}
	j := stuckJob{
		id:       id,
		kind:     kind,
		subject:  raw.Subject,
		seq:      raw.Sequence,
		data:     raw.Data,
		attempts: deliveries,
	}
	if validID(id) == nil {
		rec, _, err := q.Get(ctx, id)
		switch {
		case err == nil && rec.Status == StatusCompleted:
			// Finished after all (its ack was lost): nothing to dead-letter.
			return q.deleteJobMsg(ctx, id, raw.Sequence)
		case err == nil:
			j.reason = gaveUpReason(deliveries, rec)
		case errors.Is(err, ErrNotFound):
			j.reason = gaveUpReason(deliveries, Record{})
		default:
			return fmt.Errorf("queue: max deliveries: %w", err)
		}
	} else {
		j.reason = gaveUpReason(deliveries, Record{})
	}
	failed, err := q.failStuck(ctx, j)
	if err != nil {
		return fmt.Errorf("queue: max deliveries: %w", err)
	}
	if failed {
		log.Info("job failed after max deliveries", zap.String("job", id), zap.Int("deliveries", deliveries))
	}
	return nil
}

// gaveUpReason is the Error of a job whose message used up its deliveries.
func gaveUpReason(deliveries int, rec Record) string {
	reason := fmt.Sprintf("worker: gave up after %d delivery attempts", deliveries)
	switch {
	case rec.ID == "":
	case rec.LastError != "":
		reason += " (last error: " + rec.LastError + ")"
	case rec.Worker != "":
		reason += fmt.Sprintf(" (no error reported; last worker %s stopped responding)", rec.Worker)
	default:
		reason += " (no error reported; the job timed out)"
	}
	return reason
}

// stuckJob is a job the server will not deliver again (or whose message is
// gone) and that WatchMaxDeliveries or the Sweeper fails.
type stuckJob struct {
	id, kind, subject string
	// seq is the message's sequence in VFX_JOBS; 0 when it is gone.
	seq      uint64
	data     []byte
	attempts int
	reason   string
	// still, when set, is checked again on the record inside the CAS; false
	// leaves the job alone (it came back to life meanwhile).
	still func(Record) bool
}

// errNotStuck aborts the CAS of a job that is no longer stuck.
var errNotStuck = errors.New("job is no longer stuck")

// failStuck fails a stuck job the one way every path shares: a dead-letter
// copy first (its Nats-Msg-Id, id and sequence, stores one copy however
// many callers race), then the record → failed by compare-and-swap, whose
// single winner publishes the failed event (a loser finding the record
// failed within the duplicate window publishes it again, which the event's
// Nats-Msg-Id makes a no-op, so an event lost to a failed publish is
// recovered on the next try), then the message is deleted from VFX_JOBS.
// failed reports whether this call moved the record to failed.
func (q *Queue) failStuck(ctx context.Context, j stuckJob) (failed bool, err error) {
	valid := validID(j.id) == nil
	if valid && j.still != nil {
		// Checked before the dead-letter copy too, so a job that revived
		// since the caller looked gets no copy.
		rec, _, err := q.Get(ctx, j.id)
		if err != nil {
			return false, err
		}
		if rec.Status.Terminal() || !j.still(rec) {
			return false, nil
		}
	}
	if j.subject == "" {
		j.subject = jobSubject(j.kind, j.id)
	}
	data := j.data
	if data == nil {
		data = []byte(j.id)
	}
	err = q.deadLetter(ctx, DeadLetter{
		JobID:     j.id,
		Kind:      j.kind,
		Subject:   j.subject,
		StreamSeq: j.seq,
		Attempts:  j.attempts,
		Reason:    j.reason,
		Data:      data,
	})
	if err != nil {
		return false, fmt.Errorf("%s: %w", j.id, err)
	}
	if valid {
		rec, err := q.Update(ctx, j.id, func(r *Record) error {
			if j.still != nil && !j.still(*r) {
				return errNotStuck
			}
			r.Status = StatusFailed
			r.Error = j.reason
			return nil
		})
		switch {
		case errors.Is(err, errNotStuck):
			return false, nil
		case err == nil:
			failed = true
			if err := q.publishFailed(ctx, rec); err != nil {
				return true, err
			}
		case errors.Is(err, ErrTerminal):
			if rec.Status == StatusFailed && rec.CompletedAt != nil &&
				time.Since(*rec.CompletedAt) < q.cfg.DuplicateWindow-time.Minute {
				if err := q.publishFailed(ctx, rec); err != nil {
					return false, err
				}
			}
		case errors.Is(err, ErrNotFound):
		default:
			return false, err
		}
	}
	if j.seq > 0 {
		if err := q.deleteJobMsg(ctx, j.id, j.seq); err != nil {
			return failed, err
		}
	}
	return failed, nil
}

// publishFailed publishes the failed event of a failed record (webhooks,
// refunds and billing hang on it).
func (q *Queue) publishFailed(ctx context.Context, rec Record) error {
	ev := Event{JobID: rec.ID, Kind: rec.Kind, Status: StatusFailed}
	if rec.CompletedAt != nil {
		ev.At = *rec.CompletedAt
	}
	return q.PublishEvent(ctx, ev)
}

// jobOfMsg is the kind and job id a VFX_JOBS message names (the body, else
// the subject's last token).
func jobOfMsg(raw *jetstream.RawStreamMsg) (kind, id string) {
	kind, subjID := parseJobSubject(raw.Subject)
	id = strings.TrimSpace(string(raw.Data))
	if id == "" {
		id = subjID
	}
	return kind, id
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
