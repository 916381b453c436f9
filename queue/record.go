package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/internal/kvcas"
	"github.com/vfxrender/vfx/internal/retry"
	"github.com/vfxrender/vfx/job"
)

// Sentinel errors callers branch on. Every error returned by this package
// wraps at most one of them (plus the underlying cause).
var (
	// ErrNotFound: no record with that id.
	ErrNotFound = errors.New("queue: job not found")
	// ErrExists: Create found the id taken.
	ErrExists = errors.New("queue: job already exists")
	// ErrTerminal: the record is completed or failed and never changes again.
	ErrTerminal = errors.New("queue: job is in a terminal state")
	// ErrIllegalTransition: the update asks for a status change the state
	// machine does not allow.
	ErrIllegalTransition = errors.New("queue: illegal status transition")
	// ErrConflict: Update lost the compare-and-swap race UpdateRetries
	// times in a row.
	ErrConflict = errors.New("queue: too many concurrent updates")
	// ErrInvalid: a record, event or name failed validation.
	ErrInvalid = errors.New("queue: invalid argument")
)

// Status is a job record's state.
type Status string

// Job states.
const (
	StatusInQueue    Status = "in_queue"
	StatusProcessing Status = "processing"
	StatusCompleted  Status = "completed"
	StatusFailed     Status = "failed"
)

// Terminal reports whether s is completed or failed.
func (s Status) Terminal() bool { return s == StatusCompleted || s == StatusFailed }

// Valid reports whether s is one of the four job states.
func (s Status) Valid() bool {
	switch s {
	case StatusInQueue, StatusProcessing, StatusCompleted, StatusFailed:
		return true
	}
	return false
}

// Job kinds.
const (
	KindGeneration = "generation"
	KindProduct    = "product"
)

// Record is a job as stored in the "jobs" bucket, as JSON.
type Record struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"` // KindGeneration or KindProduct
	Owner string `json:"owner"`
	// Request is the normalised request, opaque to the queue.
	Request  json.RawMessage `json:"request,omitempty"`
	Status   Status          `json:"status"`
	Progress int             `json:"progress"` // 0..100
	Seed     uint32          `json:"seed"`
	// Outputs maps an output name (render, source, alpha) to its object key.
	Outputs map[string]string `json:"outputs,omitempty"`
	// Frames is the number of frames the render of a completed job has (1
	// for an image); the product API prices a job by it.
	Frames int `json:"frames,omitempty"`
	// Error is the readable reason of a failed job, without its code (the
	// job APIs show job.FailureText(ErrorCode, Error)).
	Error string `json:"error,omitempty"`
	// ErrorCode is the machine-readable code of a failed job's error (for
	// example SOURCE_TOO_LARGE), "" when it has none (an internal failure).
	// Records written before this field carry the code only as the "CODE: "
	// prefix of Error, and records written before the prefix went carry it
	// both ways: UnmarshalJSON reads both as records of today.
	ErrorCode job.Code `json:"error_code,omitempty"`
	// LastError is the error of the latest retried attempt (Delivery.Retry);
	// it is informational and does not mean the job failed.
	LastError  string     `json:"last_error,omitempty"`
	Attempt    int        `json:"attempt"`
	Worker     string     `json:"worker,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	ModifiedAt time.Time  `json:"modified_at"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	// HeartbeatAt is when the worker running the claimed attempt last
	// said it was alive (Delivery.KeepAlive, every Config.RecordHeartbeat).
	HeartbeatAt *time.Time `json:"heartbeat_at,omitempty"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
}

// UnmarshalJSON decodes a record, migrating the error of one written by
// older code: a code found only as the "CODE: " prefix of Error moves to
// ErrorCode, and the prefix of ErrorCode's code leaves Error. (For
// records written by today's code it is plain decoding.)
func (r *Record) UnmarshalJSON(b []byte) error {
	type plain Record // without this method
	if err := json.Unmarshal(b, (*plain)(r)); err != nil {
		return err
	}
	if r.Error == "" {
		return nil
	}
	if r.ErrorCode == "" {
		r.ErrorCode = legacyCode(r.Error)
	}
	if r.ErrorCode != "" {
		r.Error = strings.TrimPrefix(r.Error, string(r.ErrorCode)+": ")
	}
	return nil
}

// legacyCode returns the code at the start of an error written with the
// "CODE: " prefix ("SOURCE_UNREACHABLE: …"), or "".
func legacyCode(s string) job.Code {
	code, _, ok := strings.Cut(s, ": ")
	if !ok || code == "" {
		return ""
	}
	for _, c := range code {
		if !(c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9') {
			return ""
		}
	}
	return job.Code(code)
}

// validID accepts 1..200 characters of [A-Za-z0-9_-]: the id is a KV key
// and a subject token, so dots, wildcards and spaces are out.
func validID(id string) error {
	if id == "" || len(id) > 200 {
		return fmt.Errorf("%w: job id must be 1..200 characters", ErrInvalid)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return fmt.Errorf("%w: job id %q may hold only letters, digits, '_' and '-'", ErrInvalid, id)
		}
	}
	return nil
}

func validKind(kind string) error {
	if kind != KindGeneration && kind != KindProduct {
		return fmt.Errorf("%w: job kind %q is not %q or %q", ErrInvalid, kind, KindGeneration, KindProduct)
	}
	return nil
}

// checkTransition enforces the state machine for a stored (non-terminal)
// status from and a requested status to.
func checkTransition(from, to Status) error {
	if from.Terminal() {
		return fmt.Errorf("%w (%s)", ErrTerminal, from)
	}
	ok := false
	switch from {
	case StatusInQueue:
		ok = to == StatusInQueue || to == StatusProcessing || to == StatusFailed
	case StatusProcessing:
		ok = to == StatusProcessing || to == StatusCompleted || to == StatusFailed
	}
	if !ok {
		return fmt.Errorf("%w: %s → %s", ErrIllegalTransition, from, to)
	}
	return nil
}

// Create stores a new record and returns its revision. An empty Status
// becomes in_queue and zero CreatedAt/ModifiedAt become now; a record must
// start in_queue. It returns ErrExists when the id is taken and ErrInvalid
// for a bad id, kind or status.
func (q *Queue) Create(ctx context.Context, rec Record) (uint64, error) {
	rec, err := prepareNew(rec)
	if err != nil {
		return 0, fmt.Errorf("queue: create %q: %w", rec.ID, err)
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return 0, fmt.Errorf("queue: create %s: encode: %w", rec.ID, err)
	}
	rev, err := q.kv.Create(ctx, rec.ID, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return 0, fmt.Errorf("queue: create %s: %w", rec.ID, ErrExists)
	}
	if err != nil {
		return 0, fmt.Errorf("queue: create %s: %w", rec.ID, err)
	}
	return rev, nil
}

func prepareNew(rec Record) (Record, error) {
	if err := validID(rec.ID); err != nil {
		return rec, err
	}
	if err := validKind(rec.Kind); err != nil {
		return rec, err
	}
	if rec.Status == "" {
		rec.Status = StatusInQueue
	}
	if rec.Status != StatusInQueue {
		return rec, fmt.Errorf("%w: a new record must be %s, not %q", ErrInvalid, StatusInQueue, rec.Status)
	}
	now := time.Now().UTC()
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = now
	}
	if rec.ModifiedAt.IsZero() {
		rec.ModifiedAt = rec.CreatedAt
	}
	return rec, nil
}

// Get returns the record and its revision, or ErrNotFound.
func (q *Queue) Get(ctx context.Context, id string) (Record, uint64, error) {
	rec, _, rev, err := q.get(ctx, id)
	return rec, rev, err
}

func (q *Queue) get(ctx context.Context, id string) (Record, []byte, uint64, error) {
	if err := validID(id); err != nil {
		return Record{}, nil, 0, fmt.Errorf("queue: get %q: %w", id, err)
	}
	e, err := q.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Record{}, nil, 0, fmt.Errorf("queue: get %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Record{}, nil, 0, fmt.Errorf("queue: get %s: %w", id, err)
	}
	var rec Record
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return Record{}, nil, 0, fmt.Errorf("queue: get %s: decode: %w", id, err)
	}
	return rec, e.Value(), e.Revision(), nil
}

// Update applies fn to the latest record and stores the result with a
// compare-and-swap on the revision it read, re-reading and re-applying fn
// (so fn must be safe to call more than once) when another writer got there
// first, up to Config.UpdateRetries times (then ErrConflict).
//
// Rules: a terminal record is never changed and fn is not called
// (ErrTerminal, with the stored record returned); the status may move only
// in_queue → in_queue|processing|failed and processing →
// processing|completed|failed (else ErrIllegalTransition); ID, Kind, Owner
// and CreatedAt keep their stored values whatever fn does; Progress is
// clamped to 0..100. ModifiedAt is set on every stored change, StartedAt
// when the record first enters processing, CompletedAt when it becomes
// terminal. When fn changes nothing, nothing is written. An error from fn
// aborts the update and is returned wrapped.
func (q *Queue) Update(ctx context.Context, id string, fn func(*Record) error) (Record, error) {
	if err := validID(id); err != nil {
		return Record{}, fmt.Errorf("queue: get %q: %w", id, err)
	}
	var cur Record   // the record as stored
	var mutErr error // the error of the last change, if any
	withCur := false // mutErr is returned with cur (terminal, fn, transition)
	refuse := func(keep bool, err error) (bool, error) {
		mutErr, withCur = err, keep
		return false, err
	}
	next, err := kvcas.JSONWith(ctx, kvcas.Options{MaxAttempts: q.cfg.UpdateRetries, Backoff: casBackoff()}, q.kv, id,
		func(next *Record, exists bool) (bool, error) {
			if !exists {
				return refuse(false, fmt.Errorf("queue: get %s: %w", id, ErrNotFound))
			}
			// cur is a deep copy: fn may change next's map and pointers.
			cur = Record{}
			if raw, err := json.Marshal(next); err != nil {
				return refuse(false, fmt.Errorf("queue: update %s: encode: %w", id, err))
			} else if err := json.Unmarshal(raw, &cur); err != nil {
				return refuse(false, fmt.Errorf("queue: update %s: decode: %w", id, err))
			}
			if cur.Status.Terminal() {
				return refuse(true, fmt.Errorf("queue: update %s: %w (%s)", id, ErrTerminal, cur.Status))
			}
			if err := fn(next); err != nil {
				return refuse(true, fmt.Errorf("queue: update %s: %w", id, err))
			}
			next.ID, next.Kind, next.Owner, next.CreatedAt = cur.ID, cur.Kind, cur.Owner, cur.CreatedAt
			if err := checkTransition(cur.Status, next.Status); err != nil {
				return refuse(true, fmt.Errorf("queue: update %s: %w", id, err))
			}
			next.Progress = min(max(next.Progress, 0), 100)
			next.ModifiedAt = cur.ModifiedAt
			unchanged, err := sameJSON(cur, *next)
			if err != nil {
				return refuse(false, fmt.Errorf("queue: update %s: encode: %w", id, err))
			}
			if unchanged {
				*next = cur
				return false, nil
			}
			now := time.Now().UTC()
			next.ModifiedAt = now
			if next.Status == StatusProcessing && next.StartedAt == nil {
				next.StartedAt = &now
			}
			if next.Status.Terminal() {
				next.CompletedAt = &now
			}
			return true, nil
		})
	switch {
	case err == nil:
		return next, nil
	case err == mutErr && withCur:
		return cur, err
	case err == mutErr:
		return Record{}, err
	case errors.Is(err, kvcas.ErrConflict):
		return Record{}, fmt.Errorf("queue: update %s: %w (%d attempts)", id, ErrConflict, q.cfg.UpdateRetries)
	}
	return Record{}, fmt.Errorf("queue: update %s: %w", id, err)
}

func sameJSON(a, b Record) (bool, error) {
	ja, err := json.Marshal(a)
	if err != nil {
		return false, err
	}
	jb, err := json.Marshal(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ja, jb), nil
}

// casBackoff is the pause before each retry of a compare-and-swap: full
// jitter, up to 2 ms, 4 ms, … capped at 100 ms.
func casBackoff() retry.Backoff {
	return retry.Backoff{Initial: 2 * time.Millisecond, Max: 100 * time.Millisecond, Jitter: true}
}
