package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/internal/retry"
)

// Event says a job reached a state; the webhook dispatcher turns it into a
// callback.
type Event struct {
	JobID  string    `json:"job_id"`
	Kind   string    `json:"kind"`
	Status Status    `json:"status"`
	At     time.Time `json:"at"`
}

// PublishEvent publishes ev on vfx.events.job.finished with Nats-Msg-Id
// "<job id>:<status>", so publishing the same outcome twice (a worker
// redoing a finished job's last step) stores it once within the duplicate
// window. A zero At becomes now. Errors: ErrInvalid for a bad id or
// status, else the publish error.
func (q *Queue) PublishEvent(ctx context.Context, ev Event) error {
	if err := validID(ev.JobID); err != nil {
		return fmt.Errorf("queue: publish event: %w", err)
	}
	if !ev.Status.Valid() {
		return fmt.Errorf("queue: publish event %s: %w: status %q", ev.JobID, ErrInvalid, ev.Status)
	}
	if ev.At.IsZero() {
		ev.At = time.Now().UTC()
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("queue: publish event %s: encode: %w", ev.JobID, err)
	}
	msg := &nats.Msg{Subject: SubjectJobFinished, Data: body}
	_, err = q.js.PublishMsg(ctx, msg,
		jetstream.WithMsgID(ev.JobID+":"+string(ev.Status)),
		jetstream.WithExpectStream(StreamEvents))
	if err != nil {
		return fmt.Errorf("queue: publish event %s: %w", ev.JobID, err)
	}
	return nil
}

// EventConsumer pulls events from VFX_EVENTS through one durable consumer;
// processes sharing the durable name share the work.
type EventConsumer struct {
	q *Queue
	c jetstream.Consumer
}

// Events creates or updates the durable pull consumer named durable on
// VFX_EVENTS (explicit acks, AckWait Config.EventAckWait, unlimited
// deliveries: the dispatcher decides when to give up, using Attempt). A new
// durable starts at the oldest stored event. Errors: ErrInvalid for a name
// with '.', '*', '>' or whitespace, else the server's error.
func (q *Queue) Events(ctx context.Context, durable string) (*EventConsumer, error) {
	if durable == "" || strings.ContainsAny(durable, ".*> \t\r\n") {
		return nil, fmt.Errorf("queue: events: %w: durable name %q", ErrInvalid, durable)
	}
	c, err := q.js.CreateOrUpdateConsumer(ctx, StreamEvents, jetstream.ConsumerConfig{
		Durable:       durable,
		Description:   "vfx event dispatcher",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       q.cfg.EventAckWait,
		MaxDeliver:    -1,
		Replicas:      q.cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: events %s: %w", durable, err)
	}
	return &EventConsumer{q: q, c: c}, nil
}

// EventDelivery is one delivery of one event. Settle it once with Ack, Nak
// or Term; an unsettled delivery comes back after EventAckWait.
type EventDelivery struct {
	Event Event
	// Attempt is the delivery count, 1 on the first delivery.
	Attempt int
	msg     jetstream.Msg
}

// Next pulls exactly one event, waiting until one is available or ctx
// ends (then it returns ctx's error, wrapped). An event whose body does not
// decode is terminated and skipped.
func (e *EventConsumer) Next(ctx context.Context) (*EventDelivery, error) {
	for {
		msg, err := pullOne(ctx, e.c, e.q.cfg.PollWait)
		if err != nil {
			return nil, fmt.Errorf("queue: next event: %w", err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			return nil, fmt.Errorf("queue: next event: metadata: %w", err)
		}
		var ev Event
		if err := json.Unmarshal(msg.Data(), &ev); err != nil || ev.JobID == "" {
			if err := msg.TermWithReason("malformed event"); err != nil {
				return nil, fmt.Errorf("queue: next event: terminate malformed: %w", err)
			}
			continue
		}
		return &EventDelivery{Event: ev, Attempt: int(meta.NumDelivered), msg: msg}, nil
	}
}

// Consume hands the consumer's events to handle, one at a time, until ctx
// ends: the one event-consumer loop of the API's billing and webhook
// dispatch. handle returns how long to wait before the event is offered
// again: 0 acknowledges it, more is a Nak with that delay (sent even while
// ctx ends, so that a shutdown does not hold the event for the ack wait).
// A failed pull is logged on log and tried again a second later.
func (e *EventConsumer) Consume(ctx context.Context, log *zap.Logger, handle func(context.Context, *EventDelivery) time.Duration) {
	for {
		d, err := e.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn("pull event", zap.Error(err))
			if retry.Sleep(ctx, time.Second) != nil {
				return
			}
			continue
		}
		if again := handle(ctx, d); again > 0 {
			_ = d.Nak(context.WithoutCancel(ctx), again)
		} else {
			_ = d.Ack(context.WithoutCancel(ctx))
		}
	}
}

// Ack acknowledges the event and waits for the server to confirm.
func (d *EventDelivery) Ack(ctx context.Context) error {
	if err := d.msg.DoubleAck(ctx); err != nil {
		return fmt.Errorf("queue: ack event %s: %w", d.Event.JobID, err)
	}
	return nil
}

// Nak asks for the event again after delay (0: at once).
func (d *EventDelivery) Nak(ctx context.Context, delay time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("queue: nak event %s: %w", d.Event.JobID, err)
	}
	if err := d.msg.NakWithDelay(delay); err != nil {
		return fmt.Errorf("queue: nak event %s: %w", d.Event.JobID, err)
	}
	return nil
}

// Term drops the event for good (the dispatcher gave up on it).
func (d *EventDelivery) Term(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("queue: term event %s: %w", d.Event.JobID, err)
	}
	if err := d.msg.Term(); err != nil {
		return fmt.Errorf("queue: term event %s: %w", d.Event.JobID, err)
	}
	return nil
}

// InProgress resets the event's ack timer while a slow callback runs.
func (d *EventDelivery) InProgress(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("queue: event in progress %s: %w", d.Event.JobID, err)
	}
	if err := d.msg.InProgress(); err != nil {
		return fmt.Errorf("queue: event in progress %s: %w", d.Event.JobID, err)
	}
	return nil
}
