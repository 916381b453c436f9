package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/internal/retry"
	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/job"
)

// ErrSettled is returned by Done, Retry, Fail and Release when the delivery
// was already settled by one of them.
var ErrSettled = errors.New("queue: delivery already settled")

// Consumer pulls jobs for a worker from the shared durable consumer
// "workers". It is safe for concurrent use: each Next holds one pull
// request of its own.
type Consumer struct {
	q *Queue
	c jetstream.Consumer
}

// Consumer binds to the durable "workers" consumer that Open created.
func (q *Queue) Consumer(ctx context.Context) (*Consumer, error) {
	c, err := q.js.Consumer(ctx, StreamJobs, ConsumerWorkers)
	if err != nil {
		return nil, fmt.Errorf("queue: consumer %s: %w", ConsumerWorkers, err)
	}
	return &Consumer{q: q, c: c}, nil
}

// Next pulls exactly one job, waiting until one is available or ctx ends
// (then it returns ctx's error, wrapped). Nothing is pulled or buffered
// ahead of the call, so a worker holds only the jobs it is working on. A
// message that names no valid job id is copied to the DLQ and terminated,
// and Next goes on waiting. Other errors (connection closed, consumer
// deleted) are returned; the caller decides whether to try again.
//
// A cancelled Next can, rarely, lose the race with a message the server
// already sent: that delivery counts as an attempt and the job comes back
// after AckWait.
func (c *Consumer) Next(ctx context.Context) (*Delivery, error) {
	for {
		msg, err := pullOne(ctx, c.c, c.q.cfg.PollWait)
		if err != nil {
			return nil, fmt.Errorf("queue: next job: %w", err)
		}
		d, err := c.q.newDelivery(msg)
		if err == nil {
			return d, nil
		}
		if errors.Is(err, ErrInvalid) {
			if err := c.q.dropMalformed(ctx, msg, err); err != nil {
				return nil, fmt.Errorf("queue: next job: %w", err)
			}
			continue
		}
		return nil, fmt.Errorf("queue: next job: %w", err)
	}
}

// pullOne asks the server for one message at a time, each request waiting
// at most wait, until a message arrives or ctx ends.
func pullOne(ctx context.Context, c jetstream.Consumer, wait time.Duration) (jetstream.Msg, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// FetchContext refuses a deadline that has passed, which a timer
		// not yet fired can still hide from ctx.Err.
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 2*time.Millisecond {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		pctx, cancel := context.WithTimeout(ctx, wait)
		msg, err := c.Next(jetstream.FetchContext(pctx))
		cancel()
		if err == nil {
			return msg, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
			errors.Is(err, jetstream.ErrNoMessages) {
			continue
		}
		return nil, err
	}
}

// Delivery is one delivery of one job to this worker. Settle it exactly
// once with Done, Retry, Fail or Release; until then, or until
// MaxJobDuration, KeepAlive stops the server from handing it to someone else.
type Delivery struct {
	// JobID is the job's id (the record key).
	JobID string
	// Kind is the job kind from the subject (generation or product).
	Kind string
	// Attempt is the delivery count, 1 on the first delivery.
	Attempt int
	// StreamSeq is the message's sequence in VFX_JOBS.
	StreamSeq uint64
	// Received is when this process received the delivery.
	Received time.Time

	q       *Queue
	msg     jetstream.Msg
	settled atomic.Bool
}

func (q *Queue) newDelivery(msg jetstream.Msg) (*Delivery, error) {
	meta, err := msg.Metadata()
	if err != nil {
		return nil, fmt.Errorf("message metadata: %w", err)
	}
	kind, subjID := parseJobSubject(msg.Subject())
	id := strings.TrimSpace(string(msg.Data()))
	if id == "" {
		id = subjID
	}
	if err := validID(id); err != nil {
		return nil, err
	}
	if subjID != "" && subjID != id {
		return nil, fmt.Errorf("%w: subject %s names another job than its body %q", ErrInvalid, msg.Subject(), id)
	}
	return &Delivery{
		JobID:     id,
		Kind:      kind,
		Attempt:   int(meta.NumDelivered),
		StreamSeq: meta.Sequence.Stream,
		Received:  time.Now(),
		q:         q,
		msg:       msg,
	}, nil
}

// parseJobSubject splits vfx.jobs.<kind>[.<id>].
func parseJobSubject(subject string) (kind, id string) {
	rest, ok := strings.CutPrefix(subject, SubjectJobsPrefix)
	if !ok {
		return "", ""
	}
	kind, id, _ = strings.Cut(rest, ".")
	return kind, id
}

// dropMalformed dead-letters a message that names no job, then terminates it.
func (q *Queue) dropMalformed(ctx context.Context, msg jetstream.Msg, cause error) error {
	dl := DeadLetter{
		Subject: msg.Subject(),
		Reason:  "queue: malformed job message: " + cause.Error(),
		Data:    msg.Data(),
	}
	if meta, err := msg.Metadata(); err == nil {
		dl.StreamSeq = meta.Sequence.Stream
		dl.Attempts = int(meta.NumDelivered)
	}
	if err := q.deadLetter(ctx, dl); err != nil {
		return err
	}
	if err := msg.TermWithReason("malformed job message"); err != nil {
		return fmt.Errorf("terminate malformed message: %w", err)
	}
	return nil
}

func (d *Delivery) settle() bool { return d.settled.CompareAndSwap(false, true) }

// Settled reports whether Done, Retry, Fail or Release was called.
func (d *Delivery) Settled() bool { return d.settled.Load() }

// KeepAlive starts a goroutine that tells the server every AckWait/3 that
// the job is still being worked on (msg.InProgress), so it is not
// redelivered, and one that stamps the record's HeartbeatAt every
// Config.RecordHeartbeat while the record is processing this attempt, so
// the sweeper (see Sweeper) leaves the job alone. Both stop when stop is
// called, ctx ends, the delivery is settled, or MaxJobDuration has passed
// since the delivery was received; after that last one the server
// redelivers the job AckWait later, which is how a stuck worker loses its
// job. stop waits for the goroutines and may be called more than once. Run
// calls KeepAlive itself.
func (d *Delivery) KeepAlive(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	beatDone := make(chan struct{})
	interval := max(d.q.cfg.AckWait/3, 10*time.Millisecond)
	limit := time.Until(d.Received.Add(d.q.cfg.MaxJobDuration))
	go func() {
		defer close(beatDone)
		d.recordHeartbeats(ctx, limit)
	}()
	go func() {
		defer close(done)
		capT := time.NewTimer(limit)
		defer capT.Stop()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-capT.C:
				return
			case <-tick.C:
				if d.settled.Load() {
					return
				}
				// Fire and forget: a lost heartbeat costs at worst a
				// redelivery, which the record's CAS makes harmless.
				_ = d.msg.InProgress()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			<-beatDone
		})
	}
}

// errNotThisAttempt aborts a heartbeat of a record another attempt owns.
var errNotThisAttempt = errors.New("record is not processing this attempt")

// recordHeartbeats stamps HeartbeatAt every RecordHeartbeat, while the
// record is processing this attempt, until ctx ends, limit passes, the
// delivery is settled, or the record is terminal or gone. A failed stamp is
// tried again at the next tick.
func (d *Delivery) recordHeartbeats(ctx context.Context, limit time.Duration) {
	capT := time.NewTimer(limit)
	defer capT.Stop()
	tick := time.NewTicker(d.q.cfg.RecordHeartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-capT.C:
			return
		case <-tick.C:
		}
		if d.settled.Load() {
			return
		}
		uctx, ucancel := context.WithTimeout(ctx, d.q.cfg.RecordHeartbeat)
		_, err := d.q.Update(uctx, d.JobID, func(r *Record) error {
			if r.Status != StatusProcessing || r.Attempt != d.Attempt {
				return errNotThisAttempt
			}
			now := time.Now().UTC()
			r.HeartbeatAt = &now
			return nil
		})
		ucancel()
		// errNotThisAttempt: not claimed yet, or taken over; nothing written.
		if errors.Is(err, ErrTerminal) || errors.Is(err, ErrNotFound) {
			return
		}
	}
}

// Claim marks the record processing by this worker for this attempt
// (in_queue → processing, or processing → processing when the job was
// redelivered). ErrTerminal means the job already finished: settle the
// delivery with Done (Run does this for a handler error wrapping
// ErrTerminal).
func (d *Delivery) Claim(ctx context.Context, worker string) (Record, error) {
	return d.q.Update(ctx, d.JobID, func(r *Record) error {
		r.Status = StatusProcessing
		r.Attempt = d.Attempt
		r.Worker = worker
		return nil
	})
}

// Done acknowledges the job and waits for the server to confirm
// (DoubleAck), so the message leaves VFX_JOBS. Call it after the record is
// terminal. While the server is unreachable or its JetStream not ready (a
// restart, a leader election) the ack is tried again, each try bounded by
// ackTryTimeout, until ctx ends: an ack lost there would cost a needless
// redelivery after AckWait. Returns ErrSettled on a second settlement.
func (d *Delivery) Done(ctx context.Context) error {
	if !d.settle() {
		return fmt.Errorf("queue: done %s: %w", d.JobID, ErrSettled)
	}
	err := retry.Call(ctx, retry.Backoff{Initial: 50 * time.Millisecond, Max: time.Second}, transientNATS,
		func(ctx context.Context) error {
			actx, cancel := context.WithTimeout(ctx, ackTryTimeout)
			defer cancel()
			return d.msg.DoubleAck(actx)
		})
	if err != nil {
		return fmt.Errorf("queue: done %s: %w", d.JobID, err)
	}
	return nil
}

// ackTryTimeout bounds one acknowledgement round trip in Done.
const ackTryTimeout = 5 * time.Second

// transientNATS reports an error that a NATS restart or a JetStream leader
// election causes and that trying again shortly can clear.
func transientNATS(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, nats.ErrDisconnected)
}

// Retry gives the job back for a later attempt: the cause is stored as the
// record's LastError (unless the record is terminal or gone), then the
// message is Nak'd with the delay Config.RetryDelays gives for this attempt.
// After MaxDeliver attempts the server gives up and WatchMaxDeliveries or
// the Sweeper fails the job. Returns ErrSettled on a second settlement.
func (d *Delivery) Retry(ctx context.Context, cause error) error {
	if !d.settle() {
		return fmt.Errorf("queue: retry %s: %w", d.JobID, ErrSettled)
	}
	var errs []error
	text := errorText(cause)
	_, err := d.q.Update(ctx, d.JobID, func(r *Record) error {
		r.LastError = text
		return nil
	})
	if err != nil && !errors.Is(err, ErrTerminal) && !errors.Is(err, ErrNotFound) {
		errs = append(errs, err)
	}
	if err := d.msg.NakWithDelay(d.q.retryDelay(d.Attempt)); err != nil {
		errs = append(errs, fmt.Errorf("queue: retry %s: nak: %w", d.JobID, err))
	}
	return errors.Join(errs...)
}

// Fail ends the job for good: a copy goes to the DLQ first (with reason's
// whole text), then the record becomes failed with reason's code and text
// apart (job.Failure: the code of its *job.InputError as ErrorCode, the
// text without that code as Error; a record already terminal is left as
// it is), then the message is terminated (which
// deletes it from VFX_JOBS). When a step fails the message is left
// unsettled on the server and comes back after AckWait, and the error says
// which step failed. Returns ErrSettled on a second settlement.
func (d *Delivery) Fail(ctx context.Context, reason error) error {
	if !d.settle() {
		return fmt.Errorf("queue: fail %s: %w", d.JobID, ErrSettled)
	}
	text := errorText(reason)
	err := d.q.deadLetter(ctx, DeadLetter{
		JobID:     d.JobID,
		Kind:      d.Kind,
		Subject:   d.msg.Subject(),
		StreamSeq: d.StreamSeq,
		Attempts:  d.Attempt,
		Reason:    text,
		Data:      d.msg.Data(),
	})
	if err != nil {
		return fmt.Errorf("queue: fail %s: %w", d.JobID, err)
	}
	_, err = d.q.Update(ctx, d.JobID, func(r *Record) error {
		r.Status = StatusFailed
		r.ErrorCode, r.Error = job.Failure(reason)
		if reason == nil {
			r.Error = text
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrTerminal) && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("queue: fail %s: %w", d.JobID, err)
	}
	if err := d.msg.TermWithReason(trunc.String(text, 256)); err != nil {
		return fmt.Errorf("queue: fail %s: terminate: %w", d.JobID, err)
	}
	return nil
}

// Release hands the job back at once (Nak without delay) so another worker
// takes it, as on shutdown. It costs the job one of its MaxDeliver attempts.
// Returns ErrSettled on a second settlement.
func (d *Delivery) Release(ctx context.Context) error {
	if !d.settle() {
		return fmt.Errorf("queue: release %s: %w", d.JobID, ErrSettled)
	}
	if err := d.msg.NakWithDelay(0); err != nil {
		return fmt.Errorf("queue: release %s: %w", d.JobID, err)
	}
	return nil
}

func errorText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

// DeadLetter is the JSON body of a message in VFX_DLQ (subject
// vfx.dlq.jobs). Headers repeat JobID, Attempts, Reason and StreamSeq as
// Vfx-Job-Id, Vfx-Attempt, Vfx-Reason and Vfx-Stream-Seq.
type DeadLetter struct {
	JobID     string    `json:"job_id"`
	Kind      string    `json:"kind,omitempty"`
	Subject   string    `json:"subject"`
	StreamSeq uint64    `json:"stream_seq"`
	Attempts  int       `json:"attempts"`
	Reason    string    `json:"reason"`
	At        time.Time `json:"at"`
	// Data is the original message body.
	Data []byte `json:"data,omitempty"`
}

// deadLetter publishes a dead-letter copy; its Nats-Msg-Id names the job
// message (id and stream sequence), so Fail and WatchMaxDeliveries racing
// on one message store one copy.
func (q *Queue) deadLetter(ctx context.Context, dl DeadLetter) error {
	if dl.At.IsZero() {
		dl.At = time.Now().UTC()
	}
	body, err := json.Marshal(dl)
	if err != nil {
		return fmt.Errorf("dead-letter: encode: %w", err)
	}
	msg := &nats.Msg{Subject: SubjectDLQJobs, Data: body, Header: nats.Header{}}
	msg.Header.Set(HeaderJobID, dl.JobID)
	msg.Header.Set(HeaderAttempt, strconv.Itoa(dl.Attempts))
	msg.Header.Set(HeaderReason, trunc.String(strings.Map(headerRune, dl.Reason), 1024))
	msg.Header.Set(HeaderStreamSeq, strconv.FormatUint(dl.StreamSeq, 10))
	msgID := fmt.Sprintf("%s:%d", dl.JobID, dl.StreamSeq)
	if _, err := q.js.PublishMsg(ctx, msg, jetstream.WithMsgID(msgID), jetstream.WithExpectStream(StreamDLQ)); err != nil {
		return fmt.Errorf("dead-letter: publish: %w", err)
	}
	return nil
}

// headerRune keeps header values on one line.
func headerRune(r rune) rune {
	if r == '\r' || r == '\n' {
		return ' '
	}
	return r
}
