// Package retry holds the one way this module waits and tries again: Sleep
// (a pause that ends with its context), Backoff (a growing pause, with or
// without jitter) and Call and Do (call a function until it succeeds,
// fails for good, runs out of attempts, or its context ends). It is
// modelled on go-cloud's internal/retry.
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
	o := Options{Backoff: b}
	if retryable != nil {
		o.Retryable = func(err error) (bool, time.Duration) { return retryable(err), 0 }
	}
	return Do(ctx, o, f)
}

// Options say how Do retries. The zero value retries every error, with no
// bound but ctx, after pauses growing from 1 ns.
type Options struct {
	// Backoff gives the pause before each call but the first.
	Backoff Backoff
	// Attempts bounds the calls of f; 0 or less: no bound.
	Attempts int
	// MaxPause caps each pause, one that Retryable asks for included; 0:
	// no cap.
	MaxPause time.Duration
	// Retryable is called once for each failure of f while ctx lives, so
	// it may log it or count it. It says whether to call f again and may
	// ask for the pause before that call (0: Backoff's next; Backoff grows
	// either way). nil retries every error after Backoff's pause.
	Retryable func(err error) (again bool, pause time.Duration)
	// Sleep waits between calls; nil means Sleep (tests may shorten it).
	Sleep func(ctx context.Context, d time.Duration) error
}

// Do calls f until it returns nil (Do returns nil), or an error that
// o.Retryable rejects or the o.Attempts-th error (Do returns it as it
// is), or ctx ends (Do returns a *ContextError).
func Do(ctx context.Context, o Options, f func(context.Context) error) error {
	sleep := o.Sleep
	if sleep == nil {
		sleep = Sleep
	}
	var last error
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return &ContextError{CtxErr: err, FuncErr: last}
		}
		err := f(ctx)
		if err == nil {
			return nil
		}
		last = err
		if ctx.Err() != nil {
			continue // reported at the top
		}
		again, pause := true, time.Duration(0)
		if o.Retryable != nil {
			again, pause = o.Retryable(err)
		}
		if !again || o.Attempts > 0 && attempt >= o.Attempts {
			return err
		}
		if next := o.Backoff.Pause(); pause <= 0 {
			pause = next
		}
		if o.MaxPause > 0 {
			pause = min(pause, o.MaxPause)
		}
		if serr := sleep(ctx, pause); serr != nil {
			return &ContextError{CtxErr: serr, FuncErr: last}
		}
	}
}
