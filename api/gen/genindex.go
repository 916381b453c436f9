package gen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/internal/kvcas"
)

// The per-account job index (bucket gen_index) lists an account's
// generation jobs newest first, a page at a cost that grows with the page
// size, not with the account's job count.
//
// Every job has a sort key, its "suffix": the inverted creation time
// (19 digits) and the job id, so that ascending suffixes are newest first
// (ties by id). Suffixes are kept in numbered chunks of about
// DefaultIndexChunk entries; a higher chunk holds newer jobs, and every
// suffix of chunk c+1 sorts before every suffix of chunk c. Keys, with
// A = keyPart(account id):
//
//	A.head          {"chunk","count","floor","min"}: the newest chunk, how
//	                many entries it was given, the smallest suffix of the
//	                chunks below it (floor) and its own smallest suffix (min).
//	                Updated by compare-and-set.
//	A.c<N>.<suffix> an entry of chunk N; the value is the job id.
//	A.f.<N>         the floor of chunk N (the smallest suffix below it),
//	                written once when chunk N is started.
//
// A page lists the chunk of its cursor and, going down, the next chunks
// until it is full (ListKeysFiltered on A.c<N>.>, one chunk at a time),
// sorts each and keeps the suffixes after the cursor: ordering, filters
// and tokens are those of one sorted list of all the account's suffixes.
// Page tokens are base64url of the entry key A.c<N>.<suffix> of the last
// job of the page; tokens of the former layout (A.<suffix>) are still
// accepted (their page starts its search at the newest chunk).
//
// Entries of the former layout (A.<suffix>, one flat list listed whole on
// every page) are moved into chunks by migrateIndex when the Server
// starts; the move is idempotent and safe to run from several replicas.

// DefaultIndexChunk is the number of entries after which a new chunk of an
// account's job index is started.
const DefaultIndexChunk = 128

// indexHead is the value of A.head.
type indexHead struct {
	Chunk int    `json:"chunk"`
	Count int    `json:"count"`
	Floor string `json:"floor,omitempty"`
	Min   string `json:"min,omitempty"`
}

// indexSuffix is a job's sort key in its account's index.
func indexSuffix(created time.Time, jobID string) string {
	return fmt.Sprintf("%019d_%s", math.MaxInt64-created.UnixNano(), jobID)
}

func chunkToken(c int) string { return "c" + strconv.Itoa(c) }

// indexAdd adds a job to its account's index.
func (s *API) indexAdd(ctx context.Context, owner string, created time.Time, jobID string) error {
	return s.indexInsert(ctx, api.KeyPart(owner), indexSuffix(created, jobID), jobID)
}

// indexRemove deletes a job's entry from its account's index (whatever its
// chunk): for a submission that left no job record.
func (s *API) indexRemove(ctx context.Context, owner string, created time.Time, jobID string) error {
	acct := api.KeyPart(owner)
	lister, err := s.index.ListKeysFiltered(ctx, acct+".*."+indexSuffix(created, jobID))
	if err != nil {
		return fmt.Errorf("api: job index: %w", err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	for _, k := range keys {
		if err := s.index.Delete(ctx, k); err != nil {
			return fmt.Errorf("api: job index: %w", err)
		}
	}
	return nil
}

// indexInsert puts suffix into the chunk where it belongs: the newest
// chunk when it sorts before that chunk's floor (the common case: a new
// job is the newest), else the closed chunk c with
// floor(c) > suffix >= floor(c+1). Inserting a suffix already present
// writes the same key again.
func (s *API) indexInsert(ctx context.Context, acct, suffix, jobID string) error {
	headKey := acct + ".head"
	var closed *indexHead // the head, when suffix belongs to a closed chunk
	started := false      // the write started a new chunk
	nh, err := kvcas.JSONWith(ctx, kvcas.Options{MaxAttempts: 100}, s.index, headKey, func(h *indexHead, _ bool) (bool, error) {
		closed, started = nil, false
		if h.Floor != "" && suffix >= h.Floor {
			cur := *h
			closed = &cur
			return false, nil
		}
		if h.Count >= s.chunk && h.Min != "" && suffix < h.Min {
			*h, started = indexHead{Chunk: h.Chunk + 1, Count: 1, Floor: h.Min, Min: suffix}, true
		} else {
			h.Count++
			if h.Min == "" || suffix < h.Min {
				h.Min = suffix
			}
		}
		return true, nil
	})
	switch {
	case errors.Is(err, kvcas.ErrConflict):
		return errors.New("api: job index: head of " + acct + " kept changing")
	case err != nil:
		return fmt.Errorf("api: job index head: %w", err)
	case closed != nil:
		return s.indexInsertClosed(ctx, acct, *closed, suffix, jobID)
	}
	if started {
		if _, err := s.index.Put(ctx, acct+".f."+strconv.Itoa(nh.Chunk), []byte(nh.Floor)); err != nil {
			return fmt.Errorf("api: job index floor: %w", err)
		}
	}
	if _, err := s.index.Put(ctx, acct+"."+chunkToken(nh.Chunk)+"."+suffix, []byte(jobID)); err != nil {
		return fmt.Errorf("api: job index: %w", err)
	}
	return nil
}

// indexInsertClosed places a suffix that sorts at or after the newest
// chunk's floor (a job created earlier than jobs already indexed: clock
// skew between replicas, or a migrated entry) into the closed chunk where
// it belongs. Closed chunks' floors never change: a suffix placed in
// chunk c is at least floor(c+1) = the smallest suffix of c.
func (s *API) indexInsertClosed(ctx context.Context, acct string, h indexHead, suffix, jobID string) error {
	c := h.Chunk - 1
	for c > 0 {
		floor, err := s.indexFloor(ctx, acct, c)
		if err != nil {
			return err
		}
		if floor.str == "" || suffix < floor.str {
			break
		}
		c = floor.below
	}
	c = max(c, 0)
	if _, err := s.index.Put(ctx, acct+"."+chunkToken(c)+"."+suffix, []byte(jobID)); err != nil {
		return fmt.Errorf("api: job index: %w", err)
	}
	return nil
}

// chunkFloor is the floor of a chunk: the smallest suffix of the chunks
// below it (str, "" when they are empty), found in chunk below.
type chunkFloor struct {
	str   string
	below int
}

// indexFloor returns the floor of chunk c > 0: its A.f.<c> record, or,
// when that is missing (a crash between starting the chunk and writing
// it), the smallest suffix of the highest non-empty chunk below c.
func (s *API) indexFloor(ctx context.Context, acct string, c int) (chunkFloor, error) {
	e, err := s.index.Get(ctx, acct+".f."+strconv.Itoa(c))
	if err == nil && len(e.Value()) > 0 {
		return chunkFloor{str: string(e.Value()), below: c - 1}, nil
	}
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return chunkFloor{}, fmt.Errorf("api: job index floor: %w", err)
	}
	for b := c - 1; b >= 0; b-- {
		sfx, err := s.chunkSuffixes(ctx, acct, b)
		if err != nil {
			return chunkFloor{}, err
		}
		if len(sfx) > 0 {
			return chunkFloor{str: sfx[0], below: b}, nil
		}
	}
	return chunkFloor{below: 0}, nil
}

// chunkSuffixes returns the suffixes of chunk c of an account, sorted.
func (s *API) chunkSuffixes(ctx context.Context, acct string, c int) ([]string, error) {
	prefix := acct + "." + chunkToken(c) + "."
	kl, err := s.index.ListKeysFiltered(ctx, prefix+">")
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("api: job index: %w", err)
	}
	defer func() { _ = kl.Stop() }()
	var out []string
	for k := range kl.Keys() {
		if sfx, ok := strings.CutPrefix(k, prefix); ok {
			out = append(out, sfx)
		}
	}
	slices.Sort(out)
	return out, nil
}

// indexHeadOf returns an account's index head; ok is false for an account
// without jobs.
func (s *API) indexHeadOf(ctx context.Context, acct string) (indexHead, bool, error) {
	e, err := s.index.Get(ctx, acct+".head")
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return indexHead{}, false, nil
	}
	if err != nil {
		return indexHead{}, false, fmt.Errorf("api: job index head: %w", err)
	}
	var h indexHead
	if err := json.Unmarshal(e.Value(), &h); err != nil {
		return indexHead{}, false, fmt.Errorf("api: job index head %s: %w", acct, err)
	}
	return h, true, nil
}

// indexEntry is one job of an account's index, in order.
type indexEntry struct {
	chunk  int
	suffix string
}

func (e indexEntry) jobID() string {
	_, id, _ := strings.Cut(e.suffix, "_")
	return id
}

// indexCursor walks an account's index newest first from after a cursor,
// listing one chunk at a time.
type indexCursor struct {
	s     *API
	acct  string
	after string // suffixes <= after are skipped
	chunk int    // next chunk to list; -1 when done
	buf   []string
	bufC  int
}

// indexScan starts a walk at chunk start (clamped to the account's chunks)
// skipping the suffixes up to after.
func (s *API) indexScan(ctx context.Context, acct, after string, start int) (*indexCursor, error) {
	h, ok, err := s.indexHeadOf(ctx, acct)
	if err != nil {
		return nil, err
	}
	cur := &indexCursor{s: s, acct: acct, after: after, chunk: -1}
	if ok {
		cur.chunk = h.Chunk
		if start >= 0 && start < h.Chunk {
			cur.chunk = start
		}
	}
	return cur, nil
}

// next returns the next entry; ok is false at the end.
func (c *indexCursor) next(ctx context.Context) (indexEntry, bool, error) {
	for len(c.buf) == 0 {
		if c.chunk < 0 {
			return indexEntry{}, false, nil
		}
		sfx, err := c.s.chunkSuffixes(ctx, c.acct, c.chunk)
		if err != nil {
			return indexEntry{}, false, err
		}
		if c.after != "" {
			i, found := slices.BinarySearch(sfx, c.after)
			if found {
				i++
			}
			sfx = sfx[i:]
		}
		c.buf, c.bufC = sfx, c.chunk
		c.chunk--
	}
	e := indexEntry{chunk: c.bufC, suffix: c.buf[0]}
	c.buf = c.buf[1:]
	return e, true, nil
}

// pageToken is the token naming entry e as the last of a page.
func pageToken(acct string, e indexEntry) string {
	return acct + "." + chunkToken(e.chunk) + "." + e.suffix
}

// parsePageToken splits a decoded page token (without its "A." prefix)
// into the chunk to start at (-1: the newest) and the suffix to list
// after. Tokens of the former flat layout carry no chunk.
func parsePageToken(rest string) (int, string) {
	if tok, sfx, ok := strings.Cut(rest, "."); ok && strings.HasPrefix(tok, "c") {
		if c, err := strconv.Atoi(tok[1:]); err == nil && c >= 0 {
			return c, sfx
		}
	}
	return -1, rest
}

// migrateIndex moves the entries of the former flat layout (A.<suffix>)
// into chunks: per account, oldest first, each is inserted and then
// deleted. A crash midway leaves the rest for the next start; an entry
// inserted twice lands on the same key.
func (s *API) migrateIndex(ctx context.Context) (int, error) {
	kl, err := s.index.ListKeysFiltered(ctx, "*.*")
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return 0, nil
		}
		return 0, fmt.Errorf("api: job index migration: %w", err)
	}
	legacy := map[string][]string{}
	for k := range kl.Keys() {
		acct, sfx, _ := strings.Cut(k, ".")
		if sfx != "" && sfx[0] >= '0' && sfx[0] <= '9' && strings.Contains(sfx, "_") {
			legacy[acct] = append(legacy[acct], sfx)
		}
	}
	_ = kl.Stop()
	n := 0
	for acct, sfxs := range legacy {
		slices.Sort(sfxs)
		slices.Reverse(sfxs) // oldest first: each insert is the newest so far
		for _, sfx := range sfxs {
			_, id, _ := strings.Cut(sfx, "_")
			if err := s.indexInsert(ctx, acct, sfx, id); err != nil {
				return n, err
			}
			if err := s.index.Delete(ctx, acct+"."+sfx); err != nil {
				return n, fmt.Errorf("api: job index migration: %w", err)
			}
			n++
		}
	}
	return n, nil
}
