package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/internal/retry"
)

// ErrPermanent marks a handler error that retrying cannot fix (bad input):
// Run fails the job at once instead of retrying it. Wrap with Permanent.
var ErrPermanent = errors.New("queue: permanent failure")

// Permanent marks err as permanent for Run. The error text (what the job
// record's Error will say) is err's own; errors.Is(p, err) still holds.
// Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

type permanentError struct{ err error }

func (p permanentError) Error() string   { return p.err.Error() }
func (p permanentError) Unwrap() []error { return []error{p.err, ErrPermanent} }

// Handler does one job. Its ctx ends when Run's drain deadline passes.
// What it returns decides how Run settles the delivery:
//
//   - nil: Done (the handler must have made the record terminal);
//   - an error wrapping ErrTerminal: Done (the job had already finished);
//   - an error wrapping ErrPermanent (see Permanent): Fail;
//   - any other error, or a panic: Retry.
//
// A handler may settle the delivery itself (Done, Retry, Fail, Release);
// Run then leaves it alone. Run keeps the delivery alive while the handler
// runs; the handler need not call KeepAlive.
type Handler func(ctx context.Context, d *Delivery) error

// RunConfig configures Consumer.Run.
type RunConfig struct {
	// Slots is how many jobs run at once (at least 1).
	Slots int
	// Drain is how long Run waits, after its ctx ends, for running handlers
	// to finish before it cancels them and releases their jobs to other
	// workers. Zero releases them at once.
	Drain time.Duration
	// Logger receives pull and settlement errors. Nil logs nothing.
	Logger *zap.Logger
}

// Run works jobs until ctx ends: it pulls one job each time a slot is free
// (never more than Slots in flight, nothing buffered), runs handler on it
// with a heartbeat, and settles it from the handler's result (see
// Handler). Pull errors are logged and retried with a backoff. When ctx
// ends Run stops pulling, waits up to cfg.Drain for running handlers, then
// cancels their ctx and releases (Nak without delay) the jobs still
// running, so another worker takes them; it returns once every handler has
// returned, so handlers must honour their ctx. Run returns nil after a
// shutdown by ctx, or an error when the connection is closed for good.
func (c *Consumer) Run(ctx context.Context, cfg RunConfig, handler Handler) error {
	if cfg.Slots < 1 {
		return fmt.Errorf("queue: run: %w: slots must be at least 1", ErrInvalid)
	}
	if handler == nil {
		return fmt.Errorf("queue: run: %w: nil handler", ErrInvalid)
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}

	// Handlers outlive ctx by up to cfg.Drain.
	hctx, hcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hcancel()

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		inFlight = make(map[*Delivery]struct{})
	)
	slots := make(chan struct{}, cfg.Slots)
	var runErr error
	backoff := retry.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second}

pull:
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			break pull
		}
		d, err := c.Next(ctx)
		if err != nil {
			<-slots
			if ctx.Err() != nil {
				break pull
			}
			if errors.Is(err, nats.ErrConnectionClosed) {
				runErr = fmt.Errorf("queue: run: %w", err)
				break pull
			}
			pause := backoff.Pause()
			log.Warn("pull failed", zap.Error(err), zap.Duration("retry_in", pause))
			if retry.Sleep(ctx, pause) != nil {
				break pull
			}
			continue
		}
		backoff.Reset()
		if ctx.Err() != nil {
			// Pulled while shutting down: give it straight back.
			if err := d.Release(hctx); err != nil {
				log.Warn("release failed", zap.String("job", d.JobID), zap.Error(err))
			}
			<-slots
			break pull
		}
		mu.Lock()
		inFlight[d] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			c.work(hctx, d, handler, log)
			mu.Lock()
			delete(inFlight, d)
			mu.Unlock()
		}()
	}

	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	drain := time.NewTimer(cfg.Drain)
	defer drain.Stop()
	select {
	case <-finished:
		return runErr
	case <-drain.C:
	}
	// Release first, then cancel: a handler that sees its ctx end before its
	// job is released would settle it as a delayed retry instead.
	mu.Lock()
	left := make([]*Delivery, 0, len(inFlight))
	for d := range inFlight {
		left = append(left, d)
	}
	mu.Unlock()
	defer hcancel()
	for _, d := range left {
		if err := d.Release(context.Background()); err != nil && !errors.Is(err, ErrSettled) {
			log.Warn("release failed", zap.String("job", d.JobID), zap.Error(err))
		} else if err == nil {
			log.Info("released unfinished job", zap.String("job", d.JobID), zap.Int("attempt", d.Attempt))
		}
	}
	hcancel()
	<-finished
	return runErr
}

// work runs the handler on one delivery and settles it.
func (c *Consumer) work(ctx context.Context, d *Delivery, handler Handler, log *zap.Logger) {
	stop := d.KeepAlive(ctx)
	err := callHandler(ctx, d, handler)
	stop()
	if d.Settled() {
		return
	}
	// Settle even when ctx was cancelled meanwhile (a released delivery is
	// already settled and skipped above).
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var serr error
	switch {
	case err == nil || errors.Is(err, ErrTerminal):
		serr = d.Done(sctx)
	case errors.Is(err, ErrPermanent):
		serr = d.Fail(sctx, err)
	default:
		log.Info("job will be retried", zap.String("job", d.JobID), zap.Int("attempt", d.Attempt), zap.Error(err))
		serr = d.Retry(sctx, err)
	}
	if serr != nil && !errors.Is(serr, ErrSettled) {
		log.Error("settle failed; the job comes back after AckWait",
			zap.String("job", d.JobID), zap.Int("attempt", d.Attempt), zap.Error(serr))
	}
}

// callHandler turns a handler panic into a retryable error.
func callHandler(ctx context.Context, d *Delivery, handler Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("queue: handler panic: %v", r)
		}
	}()
	return handler(ctx, d)
}
