// Package retry holds the one way this module waits and tries again: Sleep
// (a pause that ends with its context), Backoff (a growing pause, with or
// without jitter) and Call (call a function until it succeeds, fails for
// good, or its context ends). It is modelled on go-cloud's internal/retry.
package retry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Sleep pauses for d, or until ctx ends: then it returns ctx's error. A
// d of 0 or less returns at once (ctx's error, if it has ended).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Backoff is a growing pause: Initial, then Multiplier times the previous
// one (2 when 0), never more than Max (no cap when 0). With Jitter, each
// pause is drawn uniformly from (0, that pause] (full jitter: writers that
// lost the same race spread out). A Backoff keeps its state: set the
// fields, call Pause before each wait, and Reset after a success. Not
// safe for concurrent use.
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	Jitter     bool

	cur time.Duration
}

// Pause returns the next pause and grows the following one.
func (b *Backoff) Pause() time.Duration {
	if b.cur == 0 {
		b.cur = max(b.Initial, 1)
	}
	d := b.cur
	if b.Max > 0 {
		d = min(d, b.Max)
	}
	m := b.Multiplier
	if m == 0 {
		m = 2
	}
	next := time.Duration(float64(b.cur) * m)
	if b.Max > 0 && next > b.Max || next < b.cur {
		next = max(b.Max, b.cur) // also guards against overflow
	}
	b.cur = next
	if b.Jitter {
		d = time.Duration(rand.Int64N(int64(d))) + 1
	}
	return d
}

// Reset starts the pauses over from Initial.
func (b *Backoff) Reset() { b.cur = 0 }

// ContextError is Call's error when ctx ended before f succeeded: it
// wraps both, so errors.Is finds ctx's error and f's last one.
type ContextError struct {
	CtxErr  error // ctx.Err()
	FuncErr error // f's last error; nil when f never ran
}

func (e *ContextError) Error() string {
	if e.FuncErr == nil {
		return e.CtxErr.Error()
	}
	return fmt.Sprintf("%v (last error: %v)", e.CtxErr, e.FuncErr)
}

// Unwrap returns both errors.
func (e *ContextError) Unwrap() []error {
	if e.FuncErr == nil {
		return []error{e.CtxErr}
	}
	return []error{e.CtxErr, e.FuncErr}
}

// Call calls f until it returns nil (Call returns nil), or an error that
// retryable rejects (Call returns it as it is), or ctx ends (Call returns a
// *ContextError). Between two calls it waits b.Pause(). retryable is
// called once for each failure, so it may log it or count attempts; a nil
// retryable retries every error.
func Call(ctx context.Context, b Backoff, retryable func(error) bool, f func(context.Context) error) error {
	var last error
	for {
		if err := ctx.Err(); err != nil {
			return &ContextError{CtxErr: err, FuncErr: last}
		}
		err := f(ctx)
		if err == nil {
			return nil
		}
		last = err
		if ctx.Err() == nil && retryable != nil && !retryable(err) {
			return err
		}
		if serr := Sleep(ctx, b.Pause()); serr != nil {
			return &ContextError{CtxErr: serr, FuncErr: last}
		}
	}
}
