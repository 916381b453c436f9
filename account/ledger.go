package account

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/internal/kvcas"
)

// Crash-safe credit ledger.
//
// A job's ledger entry ("job.<id>") and the two aggregates it counts in
// (the organisation's "org.<id>" and, when the job has a team, the team's
// "team.<id>") live under different keys, and NATS key-value has no
// transaction over several keys. Every change therefore goes in small
// steps, each one compare-and-swap on one key, and each step can be
// re-run after a crash without counting anything twice:
//
//   - A job counts in an aggregate in stages: 0 (nothing), 1 (the
//     reservation: Balance -= R, Reserved += R) and 2 (final: the
//     reservation taken back and the charge C counted: Reserved -= R,
//     Balance += R-C, Charged += C). A void or refunded entry has C = 0,
//     so stage 2 of a job whose stage 1 never happened is no change at
//     all ("jump").
//   - An aggregate that applies a stage for a job records it in its own
//     Pending map (job → stage) in the same write. The entry then records
//     the stage in OrgStage/TeamStage, and only after that the aggregate
//     forgets the job. At every instant the stage an aggregate has applied
//     for a job is max(entry marker, aggregate Pending[job]).
//   - A step on an aggregate reads the aggregate, then reads the entry,
//     then writes the aggregate at the revision it read. The entry's
//     markers only grow, so the stage computed is exact whenever the write
//     succeeds: a process working from a stale read loses its CAS and
//     re-reads.
//   - An index key "open.<org>.<job>" is written before the entry and
//     deleted once the entry is final and fully applied (a void entry is
//     deleted too). Reconcile walks these keys: their number is the jobs
//     in progress, not every job ever.
//
// The Pending maps stay small: a job is in one only between the write of a
// stage and the cleanup that follows it, or after a crash until Reconcile.

// Ledger stages of a job in an aggregate.
const (
	stageNone     uint8 = 0
	stageReserved uint8 = 1
	stageFinal    uint8 = 2
)

// LedgerVoid is the state of a reservation that never completed (refused,
// or abandoned by a process that died while reserving): whatever part of
// it reached an aggregate is taken back, and the entry is then deleted.
// Ledger reports a void entry as ErrNotFound.
const LedgerVoid LedgerState = "void"

// Defaults of ReconcileOptions.
const (
	// DefaultReconcileGrace is how old a reservation must be before
	// Reconcile gives it up: a reservation still being made, or one whose
	// job record does not exist.
	DefaultReconcileGrace = 15 * time.Minute
	// DefaultReconcileLimit is how many open entries one Reconcile pass
	// examines.
	DefaultReconcileLimit = 256
)

// orgAggregate is the stored form of an organisation's aggregate.
type orgAggregate struct {
	OrgCredits
	Pending map[string]uint8 `json:"pending,omitempty"`
}

// teamAggregate is the stored form of a team's aggregate.
type teamAggregate struct {
	TeamCredits
	Pending map[string]uint8 `json:"pending,omitempty"`
}

// openIndex is the value of an "open.<org>.<job>" key.
type openIndex struct {
	JobID     string    `json:"job_id"`
	OrgID     string    `json:"org_id"`
	CreatedAt time.Time `json:"created_at"`
}

func openKey(orgID, jobID string) string { return "open." + orgID + "." + jobID }

// crashHookKey carries, in tests only, a function called before every
// write of the ledger with the step's name; a test panics in it to stop
// the operation at that point, as a killed process would.
type crashHookKey struct{}

func ledgerStep(ctx context.Context, step string) {
	if h, ok := ctx.Value(crashHookKey{}).(func(string)); ok {
		h(step)
	}
}

// reserving reports whether the entry's reservation is still being made.
func (e LedgerEntry) reserving() bool { return e.State == LedgerReserved && !e.Applied }

// final reports whether the entry's outcome is decided.
func (e LedgerEntry) final() bool { return e.State != LedgerReserved }

// complete reports whether every aggregate of the entry has applied its
// final stage.
func (e LedgerEntry) complete() bool {
	return e.OrgStage == stageFinal && (e.TeamID == "" || e.TeamStage == stageFinal)
}

// normalize gives entries written before the stage markers existed the
// markers their Applied flag stood for.
func (e *LedgerEntry) normalize() {
	if !e.Applied || e.OrgStage != stageNone {
		return
	}
	st := stageFinal
	if e.State == LedgerReserved {
		st = stageReserved
	}
	e.OrgStage = st
	if e.TeamID != "" {
		e.TeamStage = st
	}
}

// readEntry reads a job's ledger entry; found is false when it does not
// exist.
func (s *Service) readEntry(ctx context.Context, jobID string) (e LedgerEntry, found bool, err error) {
	kv, err := s.credits.Get(ctx, "job."+jobID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return LedgerEntry{}, false, nil
	}
	if err != nil {
		return LedgerEntry{}, false, fmt.Errorf("ledger entry %s: %w", jobID, err)
	}
	if err := json.Unmarshal(kv.Value(), &e); err != nil {
		return LedgerEntry{}, false, fmt.Errorf("ledger entry %s: decode: %w", jobID, err)
	}
	e.normalize()
	return e, true, nil
}

// aggKind names one of the two aggregates of an entry.
type aggKind int

const (
	aggTeam aggKind = iota
	aggOrg
)

func (k aggKind) String() string {
	if k == aggTeam {
		return "team"
	}
	return "org"
}

func (k aggKind) key(e LedgerEntry) string {
	if k == aggTeam {
		return "team." + e.TeamID
	}
	return "org." + e.OrgID
}

func (k aggKind) marker(e LedgerEntry) uint8 {
	if k == aggTeam {
		return e.TeamStage
	}
	return e.OrgStage
}

// kinds lists the aggregates an entry counts in, team first.
func (e LedgerEntry) kinds() []aggKind {
	if e.TeamID == "" {
		return []aggKind{aggOrg}
	}
	return []aggKind{aggTeam, aggOrg}
}

// errRolledBack: a reservation being made was rolled back meanwhile by
// ReconcileCredits (in a process that took it for abandoned).
var errRolledBack = errors.New("reservation rolled back meanwhile")

// errEntryGone: the entry vanished under a step (it was void and has been
// rolled back and deleted by another process).
var errEntryGone = errors.New("ledger entry gone")

// stepAggregate brings one aggregate of jobID's entry to the stage the
// entry asks for, in one CAS write at most, and returns the stage the
// aggregate has applied afterwards. A reservation (stage 0 → 1) is made
// only when reserve is set (by ReserveCredits itself); it checks budget
// (the team's, when kind is aggTeam and budget is set) or the balance,
// and a refusal is a *BudgetError.
func (s *Service) stepAggregate(ctx context.Context, kind aggKind, jobID, key string, reserve bool, budget *int64) (uint8, error) {
	var stage uint8
	step := func(pending *map[string]uint8, apply func(e LedgerEntry, from, to uint8) error) (bool, error) {
		e, found, err := s.readEntry(ctx, jobID)
		if err != nil {
			return false, err
		}
		if !found {
			return false, errEntryGone
		}
		applied := max(kind.marker(e), (*pending)[jobID])
		target := applied
		switch {
		case e.final():
			target = stageFinal
		case e.reserving():
			if reserve {
				target = max(applied, stageReserved)
			}
		default: // reserved
			target = max(applied, stageReserved)
		}
		stage = applied
		if applied >= target {
			return false, nil
		}
		if err := apply(e, applied, target); err != nil {
			return false, err
		}
		if *pending == nil {
			*pending = map[string]uint8{}
		}
		(*pending)[jobID] = target
		stage = target
		return true, nil
	}
	var err error
	if kind == aggTeam {
		_, err = kvcas.JSON(ctx, s.credits, key, func(a *teamAggregate, _ bool) (bool, error) {
			return step(&a.Pending, func(e LedgerEntry, from, to uint8) error {
				a.TeamID = e.TeamID
				switch {
				case from == stageNone && to == stageReserved:
					if budget != nil && a.Reserved+a.Charged+e.Reserved > *budget {
						return &BudgetError{Scope: ScopeTeamBudget, Need: e.Reserved, Available: max(0, *budget-a.Reserved-a.Charged)}
					}
					a.Reserved += e.Reserved
				case from == stageReserved && to == stageFinal:
					a.Reserved -= e.Reserved
					a.Charged += e.Charged
				}
				return nil
			})
		})
	} else {
		_, err = kvcas.JSON(ctx, s.credits, key, func(a *orgAggregate, _ bool) (bool, error) {
			return step(&a.Pending, func(e LedgerEntry, from, to uint8) error {
				a.OrgID = e.OrgID
				switch {
				case from == stageNone && to == stageReserved:
					if a.Balance < e.Reserved {
						return &BudgetError{Scope: ScopeBalance, Need: e.Reserved, Available: a.Balance}
					}
					a.Balance -= e.Reserved
					a.Reserved += e.Reserved
				case from == stageReserved && to == stageFinal:
					a.Reserved -= e.Reserved
					a.Charged += e.Charged
					a.Balance += e.Reserved - e.Charged
				}
				return nil
			})
		})
	}
	if err != nil {
		return stage, fmt.Errorf("%s aggregate: %w", kind, err)
	}
	return stage, nil
}

// cleanAggregate forgets jobID in an aggregate's Pending map once the
// entry's marker covers it. It writes nothing when there is nothing to
// forget.
func (s *Service) cleanAggregate(ctx context.Context, kind aggKind, jobID, key string) error {
	clean := func(pending map[string]uint8) (bool, error) {
		p, ok := pending[jobID]
		if !ok {
			return false, nil
		}
		e, found, err := s.readEntry(ctx, jobID)
		if err != nil || !found || kind.marker(e) < p {
			return false, err
		}
		delete(pending, jobID)
		return true, nil
	}
	var err error
	if kind == aggTeam {
		_, err = kvcas.JSON(ctx, s.credits, key, func(a *teamAggregate, exists bool) (bool, error) {
			return clean(a.Pending)
		})
	} else {
		_, err = kvcas.JSON(ctx, s.credits, key, func(a *orgAggregate, exists bool) (bool, error) {
			return clean(a.Pending)
		})
	}
	if err != nil {
		return fmt.Errorf("clean %s aggregate: %w", kind, err)
	}
	return nil
}

// markEntry raises the entry's markers to the stages the aggregates have
// applied (never lowers them) and returns the entry.
func (s *Service) markEntry(ctx context.Context, jobID string, stages map[aggKind]uint8) (LedgerEntry, error) {
	e, err := kvcas.JSON(ctx, s.credits, "job."+jobID, func(e *LedgerEntry, exists bool) (bool, error) {
		if !exists {
			return false, errEntryGone
		}
		e.normalize()
		write := false
		if st := stages[aggOrg]; st > e.OrgStage {
			e.OrgStage, write = st, true
		}
		if st := stages[aggTeam]; e.TeamID != "" && st > e.TeamStage {
			e.TeamStage, write = st, true
		}
		return write, nil
	})
	return e, err
}

// drive finishes a final (or void) entry: every aggregate applies its
// final stage, the entry records it, the aggregates forget the job, and
// the index key goes (with the entry itself when void). Each step is
// idempotent, so drive may run any number of times, concurrently too.
func (s *Service) drive(ctx context.Context, e LedgerEntry) (LedgerEntry, error) {
	stages := map[aggKind]uint8{}
	for _, k := range e.kinds() {
		ledgerStep(ctx, "drive:"+k.String())
		st, err := s.stepAggregate(ctx, k, e.JobID, k.key(e), false, nil)
		if err != nil {
			if errors.Is(err, errEntryGone) {
				return e, nil
			}
			return e, err
		}
		stages[k] = st
	}
	ledgerStep(ctx, "drive:mark")
	next, err := s.markEntry(ctx, e.JobID, stages)
	if err != nil {
		if errors.Is(err, errEntryGone) {
			return e, nil
		}
		return e, err
	}
	e = next
	e.normalize()
	for _, k := range e.kinds() {
		ledgerStep(ctx, "drive:clean-"+k.String())
		if err := s.cleanAggregate(ctx, k, e.JobID, k.key(e)); err != nil {
			return e, err
		}
	}
	if !e.final() || !e.complete() {
		return e, nil
	}
	return e, s.close(ctx, e)
}

// close deletes a complete entry's index key, and the entry itself when
// it is void.
func (s *Service) close(ctx context.Context, e LedgerEntry) error {
	if e.State == LedgerVoid {
		ledgerStep(ctx, "close:entry")
		if err := s.credits.Delete(ctx, "job."+e.JobID); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("delete void entry: %w", err)
		}
	}
	ledgerStep(ctx, "close:index")
	if err := s.credits.Delete(ctx, openKey(e.OrgID, e.JobID)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("delete index: %w", err)
	}
	return nil
}

// voidEntry turns a reservation still being made into LedgerVoid and rolls
// back what of it reached the aggregates. It fails when the reservation
// completed meanwhile.
func (s *Service) voidEntry(ctx context.Context, jobID string) (LedgerEntry, error) {
	ledgerStep(ctx, "void")
	e, err := kvcas.JSON(ctx, s.credits, "job."+jobID, func(e *LedgerEntry, exists bool) (bool, error) {
		if !exists {
			return false, errEntryGone
		}
		e.normalize()
		switch {
		case e.State == LedgerVoid:
			return false, nil
		case !e.reserving():
			return false, fmt.Errorf("%w: reservation of job %s completed", ErrExists, jobID)
		}
		e.State = LedgerVoid
		now := s.cfg.Now().UTC()
		e.SettledAt = &now
		return true, nil
	})
	if err != nil {
		return e, err
	}
	e.normalize()
	return s.drive(ctx, e)
}

// ReconcileOptions bound and direct one Reconcile pass.
type ReconcileOptions struct {
	// Grace is how old a reservation must be before it is given up; 0
	// means DefaultReconcileGrace.
	Grace time.Duration
	// Limit is how many open entries the pass examines; 0 means
	// DefaultReconcileLimit.
	Limit int
	// After resumes a walk: the pass starts after this index revision
	// (ReconcileReport.Next of the previous pass). 0 starts at the
	// beginning.
	After uint64
	// JobExists reports whether a job record exists. A reservation older
	// than Grace whose job does not exist is refunded (the process that
	// made it died before submitting the job). Nil means reservations are
	// never expired.
	JobExists func(ctx context.Context, jobID string) (bool, error)
}

// ReconcileReport says what one Reconcile pass did.
type ReconcileReport struct {
	// Examined is the number of open entries looked at.
	Examined int `json:"examined"`
	// Finished counts final entries whose aggregates or bookkeeping an
	// interrupted settlement had left unfinished, now finished.
	Finished int `json:"finished"`
	// Voided counts reservations abandoned while being made, rolled back.
	Voided int `json:"voided"`
	// Expired counts reservations whose job record does not exist,
	// refunded.
	Expired int `json:"expired"`
	// Cleaned counts open reservations whose aggregates still listed them
	// after a crash, cleaned.
	Cleaned int `json:"cleaned"`
	// Orphans counts index keys without an entry, deleted.
	Orphans int `json:"orphans"`
	// Next is the cursor of the next pass (ReconcileOptions.After), 0 when
	// this pass reached the end.
	Next uint64 `json:"next"`
}

// ReconcileCredits runs one bounded pass over the open ledger entries of
// orgID ("" means every organisation): it finishes settlements and
// rollbacks that a crash interrupted, rolls back reservations that were
// abandoned while being made, cleans aggregates, and refunds reservations
// older than opts.Grace whose job does not exist (opts.JobExists). Every
// action is idempotent: passes may overlap, and may run in several
// processes at once. It examines at most opts.Limit entries and returns
// where to resume in ReconcileReport.Next. Errors on single entries do
// not stop the pass; they are joined in the returned error.
func (s *Service) ReconcileCredits(ctx context.Context, orgID string, opts ReconcileOptions) (ReconcileReport, error) {
	var rep ReconcileReport
	if opts.Grace <= 0 {
		opts.Grace = DefaultReconcileGrace
	}
	if opts.Limit <= 0 {
		opts.Limit = DefaultReconcileLimit
	}
	filter := "open.>"
	if orgID != "" {
		if !validID(orgID) {
			return rep, fmt.Errorf("%w: organization %q", ErrInvalid, orgID)
		}
		filter = "open." + orgID + ".>"
	}
	wopts := []jetstream.WatchOpt{jetstream.IgnoreDeletes()}
	if opts.After > 0 {
		wopts = append(wopts, jetstream.ResumeFromRevision(opts.After+1))
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.credits.WatchFiltered(wctx, []string{filter}, wopts...)
	if err != nil {
		return rep, fmt.Errorf("account: reconcile credits: %w", err)
	}
	defer func() { _ = w.Stop() }()
	cache := map[string]map[string]uint8{}
	var errs []error
	for {
		var kv jetstream.KeyValueEntry
		var ok bool
		select {
		case <-ctx.Done():
			return rep, errors.Join(append(errs, ctx.Err())...)
		case kv, ok = <-w.Updates():
		}
		if !ok || kv == nil {
			rep.Next = 0
			return rep, errors.Join(errs...)
		}
		if kv.Revision() <= opts.After || kv.Operation() != jetstream.KeyValuePut {
			continue
		}
		if rep.Examined == opts.Limit {
			return rep, errors.Join(errs...)
		}
		rep.Examined++
		rep.Next = kv.Revision()
		if err := s.reconcileOne(ctx, kv, opts, &rep, cache); err != nil {
			errs = append(errs, fmt.Errorf("account: reconcile %s: %w", kv.Key(), err))
		}
	}
}

// reconcileOne handles one index key of a Reconcile pass.
func (s *Service) reconcileOne(ctx context.Context, kv jetstream.KeyValueEntry, opts ReconcileOptions, rep *ReconcileReport, cache map[string]map[string]uint8) error {
	var idx openIndex
	if err := json.Unmarshal(kv.Value(), &idx); err != nil || !validID(idx.JobID) {
		return fmt.Errorf("index value %q: %v", kv.Value(), err)
	}
	now := s.cfg.Now()
	stale := func(t time.Time) bool { return now.Sub(t) >= opts.Grace }
	e, found, err := s.readEntry(ctx, idx.JobID)
	if err != nil {
		return err
	}
	switch {
	case !found || e.OrgID != idx.OrgID:
		// The process died between the index key and the entry (or the
		// key came from a reservation refused as a duplicate job id).
		if !stale(idx.CreatedAt) {
			return nil
		}
		err := s.credits.Delete(ctx, kv.Key(), jetstream.LastRevision(kv.Revision()))
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil // deleted meanwhile, by the entry's own close
		}
		if err != nil {
			return err
		}
		rep.Orphans++
		return nil
	case e.reserving():
		if !stale(e.CreatedAt) {
			return nil
		}
		if _, err := s.voidEntry(ctx, e.JobID); err != nil {
			if errors.Is(err, ErrExists) || errors.Is(err, errEntryGone) {
				return nil // completed, or rolled back, meanwhile
			}
			return err
		}
		rep.Voided++
		return nil
	case e.final():
		if _, err := s.drive(ctx, e); err != nil {
			return err
		}
		rep.Finished++
		return nil
	}
	// An open reservation: clean aggregates a crash left listing it, then
	// expire it when its job never made it into the queue.
	for _, k := range e.kinds() {
		key := k.key(e)
		pending, ok := cache[key]
		if !ok {
			if pending, err = s.aggregatePending(ctx, key); err != nil {
				return err
			}
			cache[key] = pending
		}
		if _, listed := pending[e.JobID]; listed {
			if err := s.cleanAggregate(ctx, k, e.JobID, key); err != nil {
				return err
			}
			rep.Cleaned++
		}
	}
	if opts.JobExists == nil || !stale(e.CreatedAt) {
		return nil
	}
	exists, err := opts.JobExists(ctx, e.JobID)
	if err != nil || exists {
		return err
	}
	_, won, err := s.finish(ctx, e.JobID, nil)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	if won {
		rep.Expired++
	}
	return nil
}

// aggregatePending reads an aggregate's Pending map.
func (s *Service) aggregatePending(ctx context.Context, key string) (map[string]uint8, error) {
	kv, err := s.credits.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var a struct {
		Pending map[string]uint8 `json:"pending"`
	}
	if err := json.Unmarshal(kv.Value(), &a); err != nil {
		return nil, fmt.Errorf("%s: decode: %w", key, err)
	}
	return a.Pending, nil
}
