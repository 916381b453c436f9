package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Stats is a snapshot of the queue for operators (Queue.Stats).
type Stats struct {
	// Pending is the number of job messages the workers consumer has yet
	// to deliver (queue depth).
	Pending uint64 `json:"pending"`
	// InFlight is the number delivered to a worker and not yet settled.
	InFlight int `json:"in_flight"`
	// Redelivered is the number in flight on a second or later attempt.
	Redelivered int `json:"redelivered"`
	// WaitingPulls is the number of waiting pull requests: worker slots
	// that are free right now.
	WaitingPulls int `json:"waiting_pulls"`
	// Messages is the number of messages in VFX_JOBS.
	Messages uint64 `json:"messages"`
	// DeadLetters is the number of copies in VFX_DLQ.
	DeadLetters uint64 `json:"dead_letters"`
	// Running are the jobs in hand, from their records: which worker runs
	// them and when it last said it was alive. At most the maxRunning
	// Stats was given.
	Running []RunningJob `json:"running"`
	// RecentDead are the newest dead letters first, without their
	// original message body. At most the maxDead Stats was given.
	RecentDead []DeadLetter `json:"recent_dead"`
}

// RunningJob is a job a worker has claimed (status processing).
type RunningJob struct {
	JobID       string     `json:"job_id"`
	Worker      string     `json:"worker"`
	Attempt     int        `json:"attempt"`
	Progress    int        `json:"progress"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	HeartbeatAt *time.Time `json:"heartbeat_at,omitempty"`
}

// maxStatsScan bounds the VFX_JOBS messages one Stats call reads.
const maxStatsScan = 1000

// Stats reads the queue depth and the workers consumer's counters, the
// claimed jobs among the first VFX_JOBS messages (up to maxRunning of
// them, reading at most 1000 messages) and the newest maxDead dead
// letters. ctx bounds the reads; errors name the asset that failed.
func (q *Queue) Stats(ctx context.Context, maxRunning, maxDead int) (Stats, error) {
	st := Stats{Running: []RunningJob{}, RecentDead: []DeadLetter{}}
	cons, err := q.jobs.Consumer(ctx, ConsumerWorkers)
	if err != nil {
		return st, fmt.Errorf("queue: stats: consumer %s: %w", ConsumerWorkers, err)
	}
	ci, err := cons.Info(ctx)
	if err != nil {
		return st, fmt.Errorf("queue: stats: consumer %s: %w", ConsumerWorkers, err)
	}
	st.Pending, st.InFlight, st.Redelivered, st.WaitingPulls = ci.NumPending, ci.NumAckPending, ci.NumRedelivered, ci.NumWaiting
	si, err := q.jobs.Info(ctx)
	if err != nil {
		return st, fmt.Errorf("queue: stats: stream %s: %w", StreamJobs, err)
	}
	st.Messages = si.State.Msgs
	seq := si.State.FirstSeq
	for n := 0; n < maxStatsScan && len(st.Running) < maxRunning && seq <= si.State.LastSeq && si.State.Msgs > 0; n++ {
		raw, err := q.jobs.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(SubjectJobsPrefix+">"))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return st, fmt.Errorf("queue: stats: stream %s: %w", StreamJobs, err)
		}
		seq = raw.Sequence + 1
		_, id := parseJobSubject(raw.Subject)
		if id == "" {
			continue
		}
		rec, _, err := q.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return st, fmt.Errorf("queue: stats: %w", err)
		}
		if rec.Status == StatusProcessing {
			st.Running = append(st.Running, RunningJob{JobID: rec.ID, Worker: rec.Worker, Attempt: rec.Attempt, Progress: rec.Progress,
				StartedAt: rec.StartedAt, HeartbeatAt: rec.HeartbeatAt})
		}
	}
	dlq, err := q.js.Stream(ctx, StreamDLQ)
	if err != nil {
		return st, fmt.Errorf("queue: stats: stream %s: %w", StreamDLQ, err)
	}
	di, err := dlq.Info(ctx)
	if err != nil {
		return st, fmt.Errorf("queue: stats: stream %s: %w", StreamDLQ, err)
	}
	st.DeadLetters = di.State.Msgs
	for seq := di.State.LastSeq; seq >= di.State.FirstSeq && seq > 0 && len(st.RecentDead) < maxDead; seq-- {
		raw, err := dlq.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return st, fmt.Errorf("queue: stats: stream %s: %w", StreamDLQ, err)
		}
		var dl DeadLetter
		if err := json.Unmarshal(raw.Data, &dl); err != nil {
			continue // not ours to show
		}
		dl.Data = nil
		st.RecentDead = append(st.RecentDead, dl)
	}
	return st, nil
}
