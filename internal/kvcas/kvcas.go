// Package kvcas is the one compare-and-swap loop on a NATS KV value:
// read, change, write back only if nobody wrote in between, else read
// again (JSON for JSON values, Bytes for values stored as they are), and
// the bounded, paced loop under it (Retry) for changes of several keys.
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

// Options tune JSONWith, BytesWith and Retry. The zero value is JSON's
// defaults.
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
	return change(ctx, o, kv, key,
		func(data []byte, v *T) error { return json.Unmarshal(data, v) },
		func(v *T) ([]byte, error) { return json.Marshal(v) },
		mutate)
}

// Bytes is JSON on a value stored as it is, not as JSON: mutate gets a
// copy of the stored bytes (nil and exists=false when the key is absent).
// A get-or-create is a mutate that keeps an existing value and otherwise
// sets one and says to write it.
func Bytes(ctx context.Context, kv jetstream.KeyValue, key string, mutate func(v *[]byte, exists bool) (bool, error)) ([]byte, error) {
	return BytesWith(ctx, Options{}, kv, key, mutate)
}

// BytesWith is Bytes with options.
func BytesWith(ctx context.Context, o Options, kv jetstream.KeyValue, key string, mutate func(v *[]byte, exists bool) (bool, error)) ([]byte, error) {
	return change(ctx, o, kv, key,
		func(data []byte, v *[]byte) error { *v = append([]byte{}, data...); return nil },
		func(v *[]byte) ([]byte, error) { return *v, nil },
		mutate)
}

// change is the read-modify-write loop of JSONWith and BytesWith, with
// the value's decoding and encoding.
func change[T any](ctx context.Context, o Options, kv jetstream.KeyValue, key string,
	decode func([]byte, *T) error, encode func(*T) ([]byte, error),
	mutate func(v *T, exists bool) (bool, error)) (T, error) {
	var out T // set only where the loop ends with a value
	err := Retry(ctx, o, key, func() (bool, error) {
		var v T
		var rev uint64
		exists := false
		e, err := kv.Get(ctx, key)
		switch {
		case err == nil:
			if err := decode(e.Value(), &v); err != nil {
				return false, fmt.Errorf("decode %s: %w", key, err)
			}
			rev, exists = e.Revision(), true
		case errors.Is(err, jetstream.ErrKeyNotFound):
		default:
			return false, err
		}
		write, err := mutate(&v, exists)
		if err != nil || !write {
			out = v
			return true, err
		}
		data, err := encode(&v)
		if err != nil {
			return false, err
		}
		if exists {
			_, err = kv.Update(ctx, key, data, rev)
		} else {
			_, err = kv.Create(ctx, key, data)
		}
		switch {
		case err == nil:
			out = v
			return true, nil
		case Conflict(err):
			return false, nil // lost the race: read again
		default:
			return false, err
		}
	})
	return out, err
}

// Retry is the loop under JSON and Bytes, for changes that a
// read-modify-write of one value does not fit (several keys in turn, or a
// wait for another writer to finish its change): it calls try until try
// says it is done or fails, at most o.MaxAttempts times (0: 1000),
// pausing o.Backoff (zero: DefaultBackoff) before each call but the
// first. try's error ends the loop and is returned as it is, as is ctx's
// error when ctx ends first; when every try said "not yet", Retry returns
// ErrConflict, wrapped with key (what the loop was about).
func Retry(ctx context.Context, o Options, key string, try func() (done bool, err error)) error {
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
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		done, err := try()
		if err != nil || done {
			return err
		}
	}
	return fmt.Errorf("%s: %w (%d attempts)", key, ErrConflict, attempts)
}

// Conflict reports an error of a KV write that lost a compare-and-swap
// race: an update at a revision that is no longer the last, or a create
// of a key that now exists.
func Conflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) ||
		errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}
