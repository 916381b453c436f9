package account

// In-flight reservations of generation jobs: Reserve, the release half of
// Settle, InFlight.
//
// Layout of the "inflight" bucket, per account:
//
//	<account>.job.<job id>  one entry per reserved job (reservation)
//	<account>.sum           the aggregate (inflightSum): the number of
//	                        reservations it counts and their estimated cost
//
// A submission writes its own entry and compare-and-sets the small aggregate,
// so the cost of a Reserve does not grow with the number of jobs in flight.
//
// The entry's state says which step of a change is under way, and the
// compare-and-set on the entry decides who performs the aggregate step:
//
//	Reserve:  create entry "pending" (kv.Create: one creator)
//	          -> aggregate +1 (limits checked in the same compare-and-set)
//	          -> entry "held" (update at the creation revision)
//	release:  entry "held" -> "releasing" (update at the read revision: one winner)
//	          -> aggregate -1 (only the winner)
//	          -> purge the entry (at the "releasing" revision)
//
// So the aggregate counts every "held" entry, no entry that is gone, and
// a "pending" or "releasing" entry only when its aggregate step is done.
// A process that dies inside a change leaves a "pending" or "releasing"
// entry behind, and nothing can tell whether its aggregate step happened.
// Such an entry is only ever trusted while it is fresh: once it is older
// than staleAfter its owner is taken for dead, the entry is purged and the
// aggregate is recounted from the entries (recount). A recount is exact when
// no entry is mid-change (see recount); it gives up otherwise and a later
// one tries again. Until then a crash costs the account at most the one
// reservation's cost and slot (an over-count: never an admission past a
// limit).
//
// Expired reservations (Config.ReservationTTL) leave lazily: the aggregate
// keeps a lower bound of the reservation times it counts (Oldest); when a
// reservation would be refused, or InFlight is asked, while that bound says
// one may have expired, the account's entries are scanned (sweep) and the
// expired ones released through the normal release path, so each is
// subtracted once. A refusal also sweeps at most once per sweepEvery to
// find the stale entries of dead processes.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/internal/kvcas"
	"github.com/vfxrender/vfx/internal/retry"
)

// States of a reservation entry.
const (
	resPending   = "pending"   // created; the aggregate may not count it yet
	resHeld      = "held"      // counted by the aggregate
	resReleasing = "releasing" // being released; the aggregate may still count it
)

const (
	// staleAfter is how long a "pending" or "releasing" entry is trusted to
	// have a live owner. A change takes a few KV round trips; an owner
	// stalled longer than this between two of them can make the aggregate
	// count its job once more (Reserve) or once less (release) until the
	// next recount.
	staleAfter = 10 * time.Minute
	// sweepEvery bounds how often refusals scan an account's entries for
	// stale ones when nothing can have expired.
	sweepEvery = time.Minute
	// maxSweep is the most entries a sweep examines; beyond it the scan is
	// incomplete: expired entries past it wait for a later sweep and the
	// aggregate is not recounted.
	maxSweep = 100_000
	// transitionWaits bounds how many times a call waits for another
	// call's change of the same entry (about 2.5 s in all).
	transitionWaits = 250
	// recountTries bounds the compare-and-set attempts of a recount.
	recountTries = 3
	// purgeMarkerTTL is how long the marker of a removed entry is kept.
	purgeMarkerTTL = 10 * time.Minute
)

// reservation is one job's entry ("<account>.job.<job id>").
type reservation struct {
	// Micros is the estimated cost in millionths of a dollar.
	Micros int64 `json:"micros"`
	// At is when the job was reserved (ReservationTTL counts from it).
	At time.Time `json:"at"`
	// State is resPending, resHeld or resReleasing.
	State string `json:"state"`
	// Since is when State was last changed (staleAfter counts from it).
	Since time.Time `json:"since"`
}

// inflightSum is an account's aggregate ("<account>.sum").
type inflightSum struct {
	// Count is the number of reservations counted.
	Count int `json:"count"`
	// Micros is their estimated cost in millionths of a dollar.
	Micros int64 `json:"micros"`
	// Oldest is at or before the reservation time of every counted
	// reservation (zero when Count is 0).
	Oldest time.Time `json:"oldest,omitzero"`
	// ScannedAt is when the last sweep started.
	ScannedAt time.Time `json:"scanned_at,omitzero"`
}

func entryKey(accountID, jobID string) string { return accountID + ".job." + jobID }
func sumKey(accountID string) string          { return accountID + ".sum" }
func toMicros(d float64) int64                { return int64(math.Round(d * 1e6)) }
func fromMicros(m int64) float64              { return float64(m) / 1e6 }

func (s *Service) stale(r reservation, now time.Time) bool { return now.Sub(r.Since) > staleAfter }

func (s *Service) expired(r reservation, now time.Time) bool {
	ttl := s.cfg.ReservationTTL
	return ttl > 0 && now.Sub(r.At) > ttl
}

// mayHoldExpired reports whether a counted reservation may have expired.
func (s *Service) mayHoldExpired(a inflightSum, now time.Time) bool {
	ttl := s.cfg.ReservationTTL
	return ttl > 0 && a.Count > 0 && (a.Oldest.IsZero() || now.Sub(a.Oldest) > ttl)
}

func (s *Service) getEntry(ctx context.Context, key string) (r reservation, rev uint64, found bool, err error) {
	e, err := s.inflight.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return reservation{}, 0, false, nil
	}
	if err != nil {
		return reservation{}, 0, false, err
	}
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return reservation{}, 0, false, fmt.Errorf("decode %s: %w", key, err)
	}
	return r, e.Revision(), true, nil
}

// putEntry creates the entry (rev 0) or updates it at revision rev.
func (s *Service) putEntry(ctx context.Context, key string, r reservation, rev uint64) (uint64, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	if rev == 0 {
		return s.inflight.Create(ctx, key, data)
	}
	return s.inflight.Update(ctx, key, data, rev)
}

// purgeEntry removes the entry if it is still at revision rev; a newer
// revision or a missing entry is not an error.
func (s *Service) purgeEntry(ctx context.Context, key string, rev uint64) error {
	err := s.inflight.Purge(ctx, key, jetstream.LastRevision(rev), jetstream.PurgeTTL(purgeMarkerTTL))
	if err == nil || errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	return fmt.Errorf("remove %s: %w", key, err)
}

func (s *Service) readSum(ctx context.Context, accountID string) (inflightSum, error) {
	return kvcas.JSON(ctx, s.inflight, sumKey(accountID), func(*inflightSum, bool) (bool, error) { return false, nil })
}

// Reserve admits a job at submission. The job gets its own entry and the
// account's small in-flight aggregate (count and sum of the estimated costs
// of the jobs in flight) is updated by compare-and-set, the limits being
// checked in the same compare-and-set, so concurrent submissions of an
// account are admitted one at a time against the same numbers. The
// account's current limits and balance are read from the store (acct
// supplies the id). In order:
//
//   - enforceConcurrency (personal keys): the jobs in flight must be fewer
//     than RateLimits.Concurrency, else a *LimitError with ErrConcurrencyLimit;
//   - always: the period's usage + the in-flight estimates + cost must not
//     exceed SpendingLimit, else ErrHardLimit (the error carries the numbers);
//   - prepaid accounts: PrepaidBalance must cover the in-flight estimates +
//     cost, else ErrInsufficientBalance.
//
// Reservations older than Config.ReservationTTL do not count: before
// refusing, Reserve releases them (see sweep). Reserving a jobID already in
// flight is a no-op; while another call is reserving or releasing the same
// jobID, Reserve waits for it (a few seconds at most). ErrNotFound for an
// unknown account, ErrInvalid for a malformed job id or a negative cost.
func (s *Service) Reserve(ctx context.Context, acct Account, jobID string, cost float64, enforceConcurrency bool) error {
	if !validID(jobID) {
		return fmt.Errorf("%w: job id %q", ErrInvalid, jobID)
	}
	if !validMoney(&cost) {
		return fmt.Errorf("%w: cost must be a non-negative number", ErrInvalid)
	}
	if !validID(acct.ID) {
		return fmt.Errorf("%w: account %q", ErrNotFound, acct.ID)
	}
	ar, err := s.getRecord(ctx, acct.ID)
	if err != nil {
		return err
	}
	key := entryKey(acct.ID, jobID)
	gaveUp, err := untilDone(ctx, kvcas.Options{MaxAttempts: transitionWaits}, key, func() (bool, error) {
		now := s.cfg.Now().UTC()
		r := reservation{Micros: toMicros(cost), At: now, State: resPending, Since: now}
		rev, err := s.putEntry(ctx, key, r, 0)
		if err == nil {
			return true, s.admit(ctx, ar, key, rev, r, cost, enforceConcurrency)
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return false, err
		}
		cur, crev, found, err := s.getEntry(ctx, key)
		switch {
		case err != nil:
			return false, err
		case !found:
			return false, nil // released meanwhile: create it again
		case cur.State == resHeld:
			return true, nil
		case s.stale(cur, now):
			return false, s.dropStale(ctx, acct.ID, key, crev)
		}
		return false, nil // another call is changing it: wait
	})
	if gaveUp {
		return fmt.Errorf("account: reserve: job %s: its reservation is still changing after %d attempts", jobID, transitionWaits)
	}
	return wrapOp("reserve", err)
}

// untilDone is kvcas.Retry (try until done) that tells its giving up
// (every try said "not yet": gaveUp, and a nil error) from a try's own
// error or the context's (err), which may wrap kvcas.ErrConflict too.
func untilDone(ctx context.Context, o kvcas.Options, key string, try func() (done bool, err error)) (gaveUp bool, err error) {
	var tryErr error
	err = kvcas.Retry(ctx, o, key, func() (bool, error) {
		done, err := try()
		tryErr = err
		return done, err
	})
	if err != nil && tryErr == nil && errors.Is(err, kvcas.ErrConflict) {
		return true, nil
	}
	return false, err
}

// admit counts the pending entry key (created at revision rev) in the
// aggregate if the limits allow it, then marks it held; a refusal removes
// the entry.
func (s *Service) admit(ctx context.Context, ar accountRecord, key string, rev uint64, r reservation, cost float64, enforceConcurrency bool) error {
	const eps = 1e-9
	swept := false
	for {
		var refusal error
		wrote := false
		a, err := kvcas.JSON(ctx, s.inflight, sumKey(ar.ID), func(a *inflightSum, _ bool) (bool, error) {
			refusal, wrote = nil, false
			if enforceConcurrency {
				maxJobs := ar.RateLimits.OrDefault().Concurrency
				if a.Count >= maxJobs {
					refusal = &LimitError{Err: ErrConcurrencyLimit, InFlight: a.Count, MaxInFlight: maxJobs, Cost: cost}
					return false, nil
				}
			}
			// Read the usage after the aggregate: a job settling
			// concurrently (usage counted, then the aggregate
			// decremented) is then counted twice, never zero times.
			start, _ := s.period(s.cfg.Now())
			u, err := s.readUsage(ctx, ar.ID, start)
			if err != nil {
				return false, err
			}
			reserved := fromMicros(a.Micros)
			if u.Usage+reserved+cost > ar.SpendingLimit+eps {
				refusal = &LimitError{Err: ErrHardLimit, Usage: u.Usage, Reserved: reserved, Cost: cost, Limit: ar.SpendingLimit, InFlight: a.Count}
				return false, nil
			}
			if ar.BillingType == BillingPrepaid && reserved+cost > ar.PrepaidBalance+eps {
				refusal = &LimitError{Err: ErrInsufficientBalance, Reserved: reserved, Cost: cost, Limit: ar.PrepaidBalance, InFlight: a.Count}
				return false, nil
			}
			a.Count++
			a.Micros += r.Micros
			if a.Oldest.IsZero() || r.At.Before(a.Oldest) {
				a.Oldest = r.At
			}
			wrote = true
			return true, nil
		})
		if err != nil {
			// When the last attempt wrote, the write may have landed
			// (a lost reply): keep the pending entry, which a recount
			// resolves once it is stale. Otherwise nothing was counted.
			if !wrote {
				err = errors.Join(err, s.purgeEntry(context.WithoutCancel(ctx), key, rev))
			}
			return err
		}
		if refusal == nil {
			break
		}
		if !swept && (s.mayHoldExpired(a, s.cfg.Now()) || s.cfg.Now().Sub(a.ScannedAt) >= sweepEvery) {
			swept = true
			if err := s.sweep(ctx, ar.ID, key); err != nil {
				return errors.Join(err, s.purgeEntry(context.WithoutCancel(ctx), key, rev))
			}
			continue
		}
		if err := s.purgeEntry(context.WithoutCancel(ctx), key, rev); err != nil {
			return errors.Join(refusal, err)
		}
		return refusal
	}
	r.State, r.Since = resHeld, s.cfg.Now().UTC()
	if _, err := s.putEntry(ctx, key, r, rev); err != nil {
		if cur, _, found, gerr := s.getEntry(ctx, key); gerr == nil && found && cur.State == resHeld {
			return nil // the update landed; its reply was lost
		}
		// The aggregate counts the job; the entry stays pending (or was
		// judged stale and removed): a recount settles it.
		return fmt.Errorf("mark %s held: %w", key, err)
	}
	return nil
}

// release takes a job's reservation out of the account's aggregate, once
// whatever the number of callers: the caller whose compare-and-set moves
// the entry from held to releasing does it. A job with no entry is a
// no-op; an entry another call is changing is waited for.
func (s *Service) release(ctx context.Context, accountID, jobID string) error {
	key := entryKey(accountID, jobID)
	gaveUp, err := s.untilReleased(ctx, accountID, key, func(r reservation, rev uint64) (bool, error) {
		if s.stale(r, s.cfg.Now()) {
			return false, s.dropStale(ctx, accountID, key, rev)
		}
		return false, nil // another call is changing it: wait
	})
	if gaveUp {
		return fmt.Errorf("job %s: its reservation is still changing after %d attempts", jobID, transitionWaits)
	}
	return err
}

// untilReleased reads the entry key until it is gone (done), for up to
// transitionWaits tries (gaveUp past them): a held entry is released
// (releaseHeld: the aggregate loses it once); an entry in another state is
// left to other, which says whether it is done, or returns an error. The
// shared loop of release and AbandonReservation.
func (s *Service) untilReleased(ctx context.Context, accountID, key string, other func(r reservation, rev uint64) (bool, error)) (gaveUp bool, err error) {
	return untilDone(ctx, kvcas.Options{MaxAttempts: transitionWaits}, key, func() (bool, error) {
		r, rev, found, err := s.getEntry(ctx, key)
		switch {
		case err != nil:
			return false, err
		case !found:
			return true, nil
		case r.State == resHeld:
			// Lost (won false): another call changed it first; look again.
			return s.releaseHeld(ctx, accountID, key, r, rev)
		}
		return other(r, rev)
	})
}

// releaseHeld moves the held entry key (read at revision rev) to releasing;
// if that compare-and-set wins it subtracts the reservation from the
// aggregate and removes the entry. won is false when another call changed
// the entry first.
func (s *Service) releaseHeld(ctx context.Context, accountID, key string, r reservation, rev uint64) (won bool, err error) {
	r.State, r.Since = resReleasing, s.cfg.Now().UTC()
	nrev, err := s.putEntry(ctx, key, r, rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	actx := context.WithoutCancel(ctx)
	_, err = kvcas.JSON(actx, s.inflight, sumKey(accountID), func(a *inflightSum, _ bool) (bool, error) {
		a.Count--
		a.Micros -= r.Micros
		// Never below zero, even after an owner stalled past staleAfter
		// (see staleAfter).
		a.Count, a.Micros = max(a.Count, 0), max(a.Micros, 0)
		if a.Count == 0 {
			a.Oldest = time.Time{}
		}
		return true, nil
	})
	if err != nil {
		return false, fmt.Errorf("subtract %s from the aggregate: %w", key, err)
	}
	// The reservation is released; an entry left behind by a failed purge
	// is removed once stale, and no longer counted by a recount.
	_ = s.purgeEntry(actx, key, nrev)
	return true, nil
}

// dropStale removes a stale pending or releasing entry (if still at
// revision rev) and recounts the account's aggregate.
func (s *Service) dropStale(ctx context.Context, accountID, key string, rev uint64) error {
	if err := s.purgeEntry(ctx, key, rev); err != nil {
		return err
	}
	return s.recount(ctx, accountID, "")
}

// scanned is one entry read by scan.
type scanned struct {
	key string
	rev uint64
	r   reservation
}

// scan reads the account's entries (at most maxSweep of them; complete is
// false when there were more).
func (s *Service) scan(ctx context.Context, accountID string) (out []scanned, complete bool, err error) {
	w, err := s.inflight.WatchFiltered(ctx, []string{entryKey(accountID, "*")}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, false, fmt.Errorf("scan reservations: %w", err)
	}
	defer func() { _ = w.Stop() }()
	complete = true
	for {
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, false, errors.New("scan reservations: watcher closed")
			}
			if e == nil { // all current entries delivered
				return out, complete, nil
			}
			if len(out) >= maxSweep {
				complete = false // keep reading: the watcher must be drained to the end
				continue
			}
			var r reservation
			if err := json.Unmarshal(e.Value(), &r); err != nil {
				return nil, false, fmt.Errorf("decode %s: %w", e.Key(), err)
			}
			out = append(out, scanned{key: e.Key(), rev: e.Revision(), r: r})
		}
	}
}

// sweep scans the account's entries: it releases the expired held ones
// (through releaseHeld, so each is subtracted once), removes the stale
// pending and releasing ones and then recounts, and refreshes the
// aggregate's Oldest bound and ScannedAt. own is the key of the caller's
// own pending entry, not counted by the aggregate (or "").
func (s *Service) sweep(ctx context.Context, accountID, own string) error {
	start := s.cfg.Now().UTC()
	entries, complete, err := s.scan(ctx, accountID)
	if err != nil {
		return err
	}
	oldest := start
	dropped := false
	for _, e := range entries {
		switch {
		case e.r.State == resHeld && s.expired(e.r, start):
			if _, err := s.releaseHeld(ctx, accountID, e.key, e.r, e.rev); err != nil {
				return err
			}
		case e.r.State != resHeld && s.stale(e.r, start):
			if err := s.purgeEntry(ctx, e.key, e.rev); err != nil {
				return err
			}
			dropped = true
		case e.r.At.Before(oldest):
			oldest = e.r.At
		}
	}
	if dropped {
		if err := s.recount(ctx, accountID, own); err != nil {
			return err
		}
	}
	// Entries the scan did not see were reserved after it started, so
	// min(oldest seen, start) bounds every counted reservation time.
	_, err = kvcas.JSON(ctx, s.inflight, sumKey(accountID), func(a *inflightSum, _ bool) (bool, error) {
		a.ScannedAt = start
		switch {
		case a.Count == 0:
			a.Oldest = time.Time{}
		case complete:
			a.Oldest = oldest
		}
		return true, nil
	})
	return err
}

// recount rewrites the aggregate from the entries. It reads the aggregate
// (revision R), then the entries, and writes the sum of the held entries
// at revision R. That is exact when every entry read is held: a held
// entry's aggregate step (+1) is done and its release (-1) has not begun,
// an absent entry is counted by nobody or was subtracted already, and any
// aggregate step of another call between the read of R and the write makes
// the write fail. A fresh pending or releasing entry makes it ambiguous, so
// recount then gives up (a later sweep tries again); stale ones are removed
// first. It also gives up after recountTries conflicting writes or on an
// incomplete scan. own is the key of the caller's own pending entry, which
// the caller knows is not counted (its aggregate step was refused, and is
// retried only after the recount), or "".
func (s *Service) recount(ctx context.Context, accountID, own string) error {
	_, err := s.recountOnce(ctx, accountID, own)
	return err
}

// recountOnce is recount, reporting whether the aggregate was rewritten
// (false: it gave up, ambiguous or contended).
func (s *Service) recountOnce(ctx context.Context, accountID, own string) (bool, error) {
	wrote := false
	_, err := kvcas.JSONWith(ctx, kvcas.Options{MaxAttempts: recountTries}, s.inflight, sumKey(accountID),
		func(next *inflightSum, _ bool) (bool, error) {
			wrote = false
			entries, complete, err := s.scan(ctx, accountID)
			if err != nil || !complete {
				return false, err
			}
			now := s.cfg.Now().UTC()
			*next = inflightSum{ScannedAt: next.ScannedAt}
			for _, en := range entries {
				if en.key == own {
					continue
				}
				if en.r.State != resHeld {
					if !s.stale(en.r, now) {
						return false, nil // mid-change: ambiguous
					}
					if err := s.purgeEntry(ctx, en.key, en.rev); err != nil {
						return false, err
					}
					continue
				}
				next.Count++
				next.Micros += en.r.Micros
				if next.Oldest.IsZero() || en.r.At.Before(next.Oldest) {
					next.Oldest = en.r.At
				}
			}
			wrote = true
			return true, nil
		})
	if errors.Is(err, kvcas.ErrConflict) {
		return false, nil // a later sweep tries again
	}
	return wrote && err == nil, err
}

// InFlight returns the number of the account's jobs reserved and not yet
// settled, leaving out expired reservations (it releases them first).
// ErrNotFound for an unknown account.
func (s *Service) InFlight(ctx context.Context, accountID string) (int, error) {
	if _, err := s.getRecord(ctx, accountID); err != nil {
		return 0, err
	}
	a, err := s.readSum(ctx, accountID)
	if err != nil {
		return 0, fmt.Errorf("account: in flight: %w", err)
	}
	if s.mayHoldExpired(a, s.cfg.Now()) {
		if err := s.sweep(ctx, accountID, ""); err != nil {
			return 0, fmt.Errorf("account: in flight: %w", err)
		}
		if a, err = s.readSum(ctx, accountID); err != nil {
			return 0, fmt.Errorf("account: in flight: %w", err)
		}
	}
	return a.Count, nil
}

// AbandonReservation releases the reservation of a job whose submission is
// known to be dead (its process crashed, or its idempotency claim was taken
// over): unlike Settle, an entry left "pending" or "releasing" by the dead
// call is not waited for until it is stale; it is removed at once and the
// account's aggregate recounted (see recount: exact unless another entry of
// the account is mid-change, in which case a later sweep recounts). A held
// entry is released as Settle releases it. A job with no entry is a no-op.
// The recount is tried for up to about 10 s while other reservations of
// the account are mid-change; if none is exact by then, a later sweep
// recounts (the aggregate may over-count by this job until then).
// ErrInvalid for a malformed job id.
func (s *Service) AbandonReservation(ctx context.Context, accountID, jobID string) error {
	if !validID(jobID) {
		return fmt.Errorf("%w: job id %q", ErrInvalid, jobID)
	}
	if !validID(accountID) {
		return fmt.Errorf("%w: account %q", ErrNotFound, accountID)
	}
	key := entryKey(accountID, jobID)
	gaveUp, err := s.untilReleased(ctx, accountID, key, func(_ reservation, rev uint64) (bool, error) {
		// Pending or releasing: whether the aggregate counts it cannot be
		// told, so the entry goes and the aggregate is recounted. Other
		// reservations of the account mid-change make a recount give up;
		// they last milliseconds (or are dead too, and abandoned by their
		// own recovery), so the recount is tried again for a while (past
		// that, giving up is no error: a later sweep recounts). Then the
		// entry is looked at again.
		if err := s.purgeEntry(ctx, key, rev); err != nil {
			return false, err
		}
		steady := retry.Backoff{Initial: abandonRecountPause, Max: abandonRecountPause}
		_, err := untilDone(ctx, kvcas.Options{MaxAttempts: abandonRecountTries, Backoff: steady}, sumKey(accountID), func() (bool, error) {
			return s.recountOnce(ctx, accountID, "")
		})
		return false, err
	})
	switch {
	case gaveUp:
		return fmt.Errorf("account: abandon reservation: job %s: its reservation is still changing after %d attempts", jobID, transitionWaits)
	case err != nil:
		return fmt.Errorf("account: abandon reservation: %w", err)
	}
	return nil
}

// abandonRecountTries and abandonRecountPause bound how long
// AbandonReservation tries to recount exactly (about 10 s); past that a
// later sweep recounts.
const (
	abandonRecountTries = 200
	abandonRecountPause = 50 * time.Millisecond
)
