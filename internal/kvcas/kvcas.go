// Package kvcas is the one compare-and-swap loop on a NATS KV value:
// read, change, write back only if nobody wrote in between, else read
// again.
package kvcas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/internal/retry"
)

// ErrConflict is returned, wrapped, when every attempt lost its race.
var ErrConflict = errors.New("kvcas: too many conflicting writes")

// Options tune JSONWith. The zero value is JSON's defaults.
type Options struct {
	// MaxAttempts bounds the writes tried (0: 1000).
	MaxAttempts int
	// Backoff is the pause after a lost race (zero: full jitter, 1 ms
	// growing to 20 ms).
	Backoff retry.Backoff
}

// DefaultBackoff is the pause after a lost race when Options give none.
func DefaultBackoff() retry.Backoff {
	return retry.Backoff{Initial: time.Millisecond, Max: 20 * time.Millisecond, Jitter: true}
}

// JSON runs a read-modify-write loop on the JSON value at key: mutate gets
// a fresh decode of the current value (the zero value and exists=false
// when the key is absent) and says whether to write it back (an update at
// the revision read, or a create). A write that loses a race is retried,
// after a short random pause, with a fresh read; mutate may so run more
// than once and must be safe to repeat. An error from mutate ends the loop
// and is returned as it is. JSON returns the value as last seen or
// written.
func JSON[T any](ctx context.Context, kv jetstream.KeyValue, key string, mutate func(v *T, exists bool) (bool, error)) (T, error) {
	return JSONWith(ctx, Options{}, kv, key, mutate)
}

// JSONWith is JSON with options.
func JSONWith[T any](ctx context.Context, o Options, kv jetstream.KeyValue, key string, mutate func(v *T, exists bool) (bool, error)) (T, error) {
	var zero T
	attempts := o.MaxAttempts
	if attempts <= 0 {
		attempts = 1000
	}
	pause := o.Backoff
	if pause == (retry.Backoff{}) {
		pause = DefaultBackoff()
	}
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt > 0 {
			if err := retry.Sleep(ctx, pause.Pause()); err != nil {
				return zero, err
			}
		}
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		var v T
		var rev uint64
		exists := false
		e, err := kv.Get(ctx, key)
		switch {
		case err == nil:
			if err := json.Unmarshal(e.Value(), &v); err != nil {
				return zero, fmt.Errorf("decode %s: %w", key, err)
			}
			rev, exists = e.Revision(), true
		case errors.Is(err, jetstream.ErrKeyNotFound):
		default:
			return zero, err
		}
		write, err := mutate(&v, exists)
		if err != nil || !write {
			return v, err
		}
		data, err := json.Marshal(v)
		if err != nil {
			return zero, err
		}
		if exists {
			_, err = kv.Update(ctx, key, data, rev)
		} else {
			_, err = kv.Create(ctx, key, data)
		}
		if err == nil {
			return v, nil
		}
		if !Conflict(err) {
			return zero, err
		}
	}
	return zero, fmt.Errorf("%s: %w (%d attempts)", key, ErrConflict, attempts)
}

// Conflict reports an error of a KV write that lost a compare-and-swap
// race: an update at a revision that is no longer the last, or a create
// of a key that now exists.
func Conflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) ||
		errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}
