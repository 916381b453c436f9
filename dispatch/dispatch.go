// Package dispatch does what follows a finished job: it charges (or
// releases) what the job's API reserved for it, and delivers the job's
// webhook to its callback_url, signed (Standard Webhooks), with retries.
//
// It runs as two durable consumers of the queue's job events
// (ConsumerBilling and ConsumerWebhooks, on queue.EventConsumer), started
// by the command's wiring beside the HTTP API, not by it. The jobs are the
// APIs': each job API (one per job kind: queue.KindGeneration,
// queue.KindProduct) hands its part in through the API interface, so this
// package knows no HTTP route and no API's records.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/store"
)

// Durable consumer names on the job events stream.
const (
	ConsumerBilling  = "api-billing"
	ConsumerWebhooks = "webhooks"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds one webhook attempt (10 seconds).
	DefaultTimeout = 10 * time.Second
	// DefaultWorkers is how many webhook deliveries run at once.
	DefaultWorkers = 8
)

// DefaultRetryDelays are the pauses before webhook attempts 2..5 (1 s,
// 5 s, 30 s, 2 min; docs/api.md, Webhooks).
func DefaultRetryDelays() []time.Duration {
	return []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute}
}

// API is one job API's part in billing and webhooks (for the jobs of one
// kind).
type API interface {
	// Settle charges or releases what the API reserved for the finished
	// job rec. A job is settled once, so a redelivered event charges
	// nothing twice; nil when the API holds nothing for the job.
	Settle(ctx context.Context, rec queue.Record) error
	// Hook reads the job's webhook as the API keeps it beside the job;
	// ok is false when the API holds no record of the job.
	Hook(ctx context.Context, jobID string) (h Hook, ok bool, err error)
	// Message is the webhook of the finished job rec: its status word (the
	// webhook id is rec.ID + "_" + status), its body, and the secret that
	// signs it.
	Message(ctx context.Context, rec queue.Record, h Hook) (status string, body []byte, secret string, err error)
	// SaveHook stores h back after an attempt changed h.State, unless the
	// job's record changed since Hook read it (compare-and-swap on
	// h.Revision).
	SaveHook(ctx context.Context, jobID string, h Hook) error
}

// Hook is a job's webhook: where it goes and how far its delivery is.
type Hook struct {
	// URL is the callback URL ("" when the job has none).
	URL string
	// State is the delivery state (nil when the job has no webhook). An
	// attempt updates it in place.
	State *State
	// Record is the API's record that holds State, and Revision the
	// revision it was read at; dispatch hands both back unread.
	Record   any
	Revision uint64
}

// Config configures a Dispatcher. Queue and APIs are required.
type Config struct {
	// Queue holds the job records and the job events.
	Queue *queue.Queue
	// APIs are the job APIs by the kind of job they submit
	// (queue.KindGeneration, queue.KindProduct).
	APIs map[string]API
	// RetryDelays are the pauses before webhook attempts 2, 3, …; the
	// number of attempts is len+1. Nil means DefaultRetryDelays.
	RetryDelays []time.Duration
	// Timeout bounds one attempt; 0 means DefaultTimeout.
	Timeout time.Duration
	// Workers is how many deliveries run at once; 0 means DefaultWorkers.
	Workers int
	// AllowPrivateNetworks lets webhooks reach loopback, private and
	// link-local addresses (tests, development).
	AllowPrivateNetworks bool
	// Logger receives the attempts and failures; nil logs nothing.
	Logger *zap.Logger
	// Now is the clock of the webhook timestamps; nil means time.Now.
	Now func() time.Time
}

// Dispatcher runs billing and webhook delivery. Create it with New.
type Dispatcher struct {
	cfg    Config
	log    *zap.Logger
	q      *queue.Queue
	client *http.Client
	delays []time.Duration
	now    func() time.Time
}

// New checks cfg and fills in its defaults.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Queue == nil || len(cfg.APIs) == 0 {
		return nil, errors.New("dispatch: Queue and APIs are required")
	}
	d := &Dispatcher{cfg: cfg, log: cfg.Logger, q: cfg.Queue, delays: cfg.RetryDelays, now: cfg.Now}
	if d.log == nil {
		d.log = zap.NewNop()
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.delays == nil {
		d.delays = DefaultRetryDelays()
	}
	if d.cfg.Timeout <= 0 {
		d.cfg.Timeout = DefaultTimeout
	}
	if d.cfg.Workers <= 0 {
		d.cfg.Workers = DefaultWorkers
	}
	var allow []string
	if cfg.AllowPrivateNetworks {
		allow = []string{"0.0.0.0/0", "::/0"}
	}
	d.client = newClient(&store.AddressGuard{AllowHosts: allow}, d.cfg.Timeout)
	return d, nil
}

// Run charges finished jobs (durable consumer ConsumerBilling) and
// delivers their webhooks (ConsumerWebhooks, Config.Workers at once) until
// ctx ends. It returns when all have stopped, nil after a shutdown by ctx.
func (d *Dispatcher) Run(ctx context.Context) error {
	billing, err := d.q.Events(ctx, ConsumerBilling)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: a shutdown, not a failure
		}
		return fmt.Errorf("dispatch: billing consumer: %w", err)
	}
	hooks, err := d.q.Events(ctx, ConsumerWebhooks)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("dispatch: webhooks consumer: %w", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { d.runBilling(ctx, billing) })
	for range d.cfg.Workers {
		wg.Go(func() { d.runWebhooks(ctx, hooks) })
	}
	wg.Wait()
	return nil
}

// finished returns the record of ev's job and the API that submitted it
// when ev reports a job that finished (ok false otherwise, or when the
// job no longer exists).
func (d *Dispatcher) finished(ctx context.Context, ev queue.Event) (queue.Record, API, bool, error) {
	a := d.cfg.APIs[ev.Kind]
	if a == nil || !ev.Status.Terminal() {
		return queue.Record{}, nil, false, nil
	}
	rec, _, err := d.q.Get(ctx, ev.JobID)
	if errors.Is(err, queue.ErrNotFound) {
		return queue.Record{}, nil, false, nil
	}
	if err != nil {
		return queue.Record{}, nil, false, fmt.Errorf("dispatch: job: %w", err)
	}
	return rec, a, true, nil
}

// runBilling settles every finished job until ctx ends.
func (d *Dispatcher) runBilling(ctx context.Context, ec *queue.EventConsumer) {
	log := d.log.Named("billing")
	ec.Consume(ctx, log, func(ctx context.Context, del *queue.EventDelivery) time.Duration {
		if err := d.settle(ctx, del.Event); err != nil {
			if ctx.Err() == nil {
				log.Warn("settle job; retrying", zap.String("job_id", del.Event.JobID), zap.Error(err))
			}
			return min(time.Duration(del.Attempt)*time.Second, 30*time.Second)
		}
		return 0
	})
}

// settle charges or releases the job of one finished-job event.
func (d *Dispatcher) settle(ctx context.Context, ev queue.Event) error {
	rec, a, ok, err := d.finished(ctx, ev)
	if err != nil || !ok {
		return err
	}
	return a.Settle(ctx, rec)
}
