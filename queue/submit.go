package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Submit creates the job record (in_queue) and publishes the job id on
// vfx.jobs.<kind>.<id> with Nats-Msg-Id set to the id. It returns the stored
// record and created=true, or, when the id already names a record, that
// record and created=false. When the existing record is still in_queue but
// its message is not in VFX_JOBS (the process that created it died before
// publishing), Submit publishes it again; the stream's deduplication makes
// concurrent republishing safe. An error after the record was created
// leaves it in_queue: submitting the same id again finishes the job.
// Errors: ErrInvalid (bad id, kind or status), or the failing step.
func (q *Queue) Submit(ctx context.Context, rec Record) (Record, bool, error) {
	rec, err := prepareNew(rec)
	if err != nil {
		return Record{}, false, fmt.Errorf("queue: submit %q: %w", rec.ID, err)
	}
	if _, err := q.Create(ctx, rec); err == nil {
		if err := q.publishJob(ctx, rec.Kind, rec.ID); err != nil {
			return Record{}, false, fmt.Errorf("queue: submit %s: %w", rec.ID, err)
		}
		return rec, true, nil
	} else if !errors.Is(err, ErrExists) {
		return Record{}, false, err
	}

	existing, _, err := q.Get(ctx, rec.ID)
	if err != nil {
		return Record{}, false, err
	}
	if existing.Status != StatusInQueue {
		return existing, false, nil
	}
	queued, err := q.jobQueued(ctx, existing.Kind, existing.ID)
	if err != nil {
		return Record{}, false, fmt.Errorf("queue: submit %s: %w", rec.ID, err)
	}
	if !queued {
		if err := q.publishJob(ctx, existing.Kind, existing.ID); err != nil {
			return Record{}, false, fmt.Errorf("queue: submit %s: republish: %w", rec.ID, err)
		}
	}
	return existing, false, nil
}

// publishJob publishes a job id, deduplicated by Nats-Msg-Id.
func (q *Queue) publishJob(ctx context.Context, kind, id string) error {
	msg := &nats.Msg{Subject: jobSubject(kind, id), Data: []byte(id), Header: nats.Header{}}
	_, err := q.js.PublishMsg(ctx, msg, jetstream.WithMsgID(id), jetstream.WithExpectStream(StreamJobs))
	if err != nil {
		return fmt.Errorf("publish job: %w", err)
	}
	return nil
}

// jobQueued reports whether VFX_JOBS still holds the message of a job.
func (q *Queue) jobQueued(ctx context.Context, kind, id string) (bool, error) {
	_, err := q.jobs.GetLastMsgForSubject(ctx, jobSubject(kind, id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up job message: %w", err)
	}
	return true, nil
}
