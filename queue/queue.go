package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Names of the JetStream assets the queue creates.
const (
	// StreamJobs is the work-queue stream holding one message per queued job.
	StreamJobs = "VFX_JOBS"
	// StreamEvents holds job lifecycle events (limits retention, 7 days).
	StreamEvents = "VFX_EVENTS"
	// StreamDLQ holds dead-letter copies of jobs that failed for good
	// (limits retention, 30 days).
	StreamDLQ = "VFX_DLQ"
	// StreamAdvisories captures the server's MAX_DELIVERIES advisories for
	// VFX_JOBS consumers, so none is lost while no watcher listens.
	StreamAdvisories = "VFX_ADVISORIES"
	// BucketJobs is the key-value bucket of job records, keyed by job id.
	BucketJobs = "jobs"
	// ConsumerWorkers is the durable pull consumer all workers share.
	ConsumerWorkers = "workers"
	// ConsumerMaxDeliveries is the durable consumer of VFX_ADVISORIES used
	// by WatchMaxDeliveries.
	ConsumerMaxDeliveries = "max-deliveries"

	// SubjectJobsPrefix prefixes job messages: vfx.jobs.<kind>.<id>.
	SubjectJobsPrefix = "vfx.jobs."
	// SubjectJobFinished is the subject of job-finished events.
	SubjectJobFinished = "vfx.events.job.finished"
	// SubjectDLQJobs is the subject of dead-letter copies of jobs.
	SubjectDLQJobs = "vfx.dlq.jobs"
	// SubjectMaxDeliveries is the advisory subject VFX_ADVISORIES captures.
	SubjectMaxDeliveries = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + StreamJobs + ".>"
)

// Headers set on dead-letter messages.
const (
	HeaderJobID     = "Vfx-Job-Id"
	HeaderAttempt   = "Vfx-Attempt"
	HeaderReason    = "Vfx-Reason"
	HeaderStreamSeq = "Vfx-Stream-Seq"
)

// Config tunes the queue. The zero value gives production defaults.
type Config struct {
	// AckWait is how long a delivered job may go without a heartbeat before
	// the server redelivers it. Default 60 s. Tests use 1–2 s.
	AckWait time.Duration
	// MaxDeliver is how many times a job is delivered before the server
	// gives up on it (and WatchMaxDeliveries fails it). Default 5.
	MaxDeliver int
	// MaxAckPending caps the jobs in flight across the whole fleet (it is
	// per consumer, not per worker). Default 10000.
	MaxAckPending int
	// MaxWaiting caps the outstanding pull requests on the workers consumer;
	// each free worker slot holds one while it waits. Default 1024. The server
	// may refuse to change it on an existing consumer.
	MaxWaiting int
	// MaxJobDuration caps how long KeepAlive extends one delivery; after it
	// the heartbeats stop and a stuck job is redelivered. Default 30 min.
	MaxJobDuration time.Duration
	// RetryDelays is the NakWithDelay schedule of Delivery.Retry, indexed by
	// attempt-1 and capped at the last entry. Default 1 s, 5 s, 30 s, 2 min.
	RetryDelays []time.Duration
	// PollWait is how long one pull request waits on the server; Next keeps
	// asking until a message comes or its ctx ends. Default 5 s.
	PollWait time.Duration
	// UpdateRetries bounds Update's read-modify-CAS loop. Default 10.
	UpdateRetries int
	// DuplicateWindow is the Nats-Msg-Id deduplication window of the jobs,
	// events and DLQ streams. Default 10 min.
	DuplicateWindow time.Duration
	// EventAckWait is the AckWait of event consumers. Default 30 s.
	EventAckWait time.Duration
	// Replicas of every stream and the bucket. Default 1.
	Replicas int

	// RecordHeartbeat is how often Delivery.KeepAlive stamps the claimed
	// record's HeartbeatAt, so the sweeper can tell a running job from a
	// dead one. Default 30 s.
	RecordHeartbeat time.Duration
	// StaleAfter is how long a non-terminal record may go unchanged (no
	// claim, progress or heartbeat) before the sweeper may fail it — only
	// when its message used up MaxDeliver or left VFX_JOBS. It must be at
	// least 2×RecordHeartbeat (Open refuses less). Default the larger of
	// 5 min and 4×RecordHeartbeat.
	StaleAfter time.Duration
	// SweepInterval is the pause between two sweeper passes (jittered by up
	// to a tenth). Default 1 min.
	SweepInterval time.Duration
	// SweepBatch caps the job messages, and separately the job records, one
	// sweeper pass reads; a longer stream is covered over several passes.
	// Default 1000.
	SweepBatch int
}

func (c Config) withDefaults() Config {
	if c.AckWait <= 0 {
		c.AckWait = 60 * time.Second
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 5
	}
	if c.MaxAckPending <= 0 {
		c.MaxAckPending = 10000
	}
	if c.MaxWaiting <= 0 {
		c.MaxWaiting = 1024
	}
	if c.MaxJobDuration <= 0 {
		c.MaxJobDuration = 30 * time.Minute
	}
	if len(c.RetryDelays) == 0 {
		c.RetryDelays = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute}
	} else {
		c.RetryDelays = append([]time.Duration(nil), c.RetryDelays...)
	}
	if c.PollWait <= 0 {
		c.PollWait = 5 * time.Second
	}
	if c.UpdateRetries <= 0 {
		c.UpdateRetries = 10
	}
	if c.DuplicateWindow <= 0 {
		c.DuplicateWindow = 10 * time.Minute
	}
	if c.EventAckWait <= 0 {
		c.EventAckWait = 30 * time.Second
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if c.RecordHeartbeat <= 0 {
		c.RecordHeartbeat = 30 * time.Second
	}
	if c.StaleAfter <= 0 {
		c.StaleAfter = max(5*time.Minute, 4*c.RecordHeartbeat)
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = time.Minute
	}
	if c.SweepBatch <= 0 {
		c.SweepBatch = 1000
	}
	return c
}

// Queue is vfx's handle on JetStream: streams, the workers consumer and the
// job records. It is safe for concurrent use.
type Queue struct {
	js   jetstream.JetStream
	kv   jetstream.KeyValue
	jobs jetstream.Stream
	recs jetstream.Stream // the bucket's stream, KV_jobs
	cfg  Config
}

// Open creates or updates, idempotently, the streams VFX_JOBS, VFX_EVENTS,
// VFX_DLQ and VFX_ADVISORIES, the "jobs" bucket and the durable consumers
// "workers" (VFX_JOBS) and "max-deliveries" (VFX_ADVISORIES). The connection
// stays the caller's to close. Errors name the asset that failed; a config
// the server will not apply to an existing asset (such as changing a
// stream's retention) is an error.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Queue, error) {
	if nc == nil {
		return nil, errors.New("queue: open: nil connection")
	}
	cfg = cfg.withDefaults()
	if cfg.StaleAfter < 2*cfg.RecordHeartbeat {
		return nil, fmt.Errorf("queue: open: %w: StaleAfter %v must be at least twice RecordHeartbeat %v",
			ErrInvalid, cfg.StaleAfter, cfg.RecordHeartbeat)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("queue: open: %w", err)
	}
	q := &Queue{js: js, cfg: cfg}

	streams := []jetstream.StreamConfig{
		{
			Name:        StreamJobs,
			Description: "vfx jobs waiting for a worker (one message per job id)",
			Subjects:    []string{"vfx.jobs.>"},
			Retention:   jetstream.WorkQueuePolicy,
			Storage:     jetstream.FileStorage,
			Duplicates:  cfg.DuplicateWindow,
			Replicas:    cfg.Replicas,
		},
		{
			Name:        StreamEvents,
			Description: "vfx job lifecycle events",
			Subjects:    []string{"vfx.events.>"},
			Retention:   jetstream.LimitsPolicy,
			Storage:     jetstream.FileStorage,
			MaxAge:      7 * 24 * time.Hour,
			Duplicates:  cfg.DuplicateWindow,
			Replicas:    cfg.Replicas,
		},
		{
			Name:        StreamDLQ,
			Description: "dead-letter copies of vfx jobs that failed for good",
			Subjects:    []string{"vfx.dlq.>"},
			Retention:   jetstream.LimitsPolicy,
			Storage:     jetstream.FileStorage,
			MaxAge:      30 * 24 * time.Hour,
			Duplicates:  cfg.DuplicateWindow,
			Replicas:    cfg.Replicas,
		},
		{
			Name:        StreamAdvisories,
			Description: "MAX_DELIVERIES advisories of VFX_JOBS consumers",
			Subjects:    []string{SubjectMaxDeliveries},
			Retention:   jetstream.LimitsPolicy,
			Storage:     jetstream.FileStorage,
			MaxAge:      30 * 24 * time.Hour,
			Replicas:    cfg.Replicas,
		},
	}
	for _, sc := range streams {
		s, err := js.CreateOrUpdateStream(ctx, sc)
		if err != nil {
			return nil, fmt.Errorf("queue: open: stream %s: %w", sc.Name, err)
		}
		if sc.Name == StreamJobs {
			q.jobs = s
		}
	}

	q.kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      BucketJobs,
		Description: "vfx job records",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: open: bucket %s: %w", BucketJobs, err)
	}
	q.recs, err = js.Stream(ctx, "KV_"+BucketJobs)
	if err != nil {
		return nil, fmt.Errorf("queue: open: bucket %s stream: %w", BucketJobs, err)
	}

	// No BackOff on purpose: the server replaces AckWait with BackOff[0]
	// and would also apply the schedule to heartbeat timeouts. Retries set
	// their delay with NakWithDelay instead (Nak() ignores BackOff anyway).
	_, err = js.CreateOrUpdateConsumer(ctx, StreamJobs, jetstream.ConsumerConfig{
		Durable:       ConsumerWorkers,
		Description:   "vfx workers",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    cfg.MaxDeliver,
		MaxAckPending: cfg.MaxAckPending,
		MaxWaiting:    cfg.MaxWaiting,
		Replicas:      cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: open: consumer %s: %w", ConsumerWorkers, err)
	}

	_, err = js.CreateOrUpdateConsumer(ctx, StreamAdvisories, jetstream.ConsumerConfig{
		Durable:       ConsumerMaxDeliveries,
		Description:   "vfx max-deliveries watcher",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       30 * time.Second,
		MaxDeliver:    -1,
		Replicas:      cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("queue: open: consumer %s: %w", ConsumerMaxDeliveries, err)
	}
	return q, nil
}

// Config returns the effective configuration (defaults filled in).
func (q *Queue) Config() Config {
	c := q.cfg
	c.RetryDelays = append([]time.Duration(nil), c.RetryDelays...)
	return c
}

// retryDelay is the NakWithDelay delay after the given (1-based) attempt.
func (q *Queue) retryDelay(attempt int) time.Duration {
	i := attempt - 1
	if i < 0 {
		i = 0
	}
	if i >= len(q.cfg.RetryDelays) {
		i = len(q.cfg.RetryDelays) - 1
	}
	return q.cfg.RetryDelays[i]
}

// jobSubject is the subject a job is published on.
func jobSubject(kind, id string) string { return SubjectJobsPrefix + kind + "." + id }
