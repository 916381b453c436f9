package account

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/internal/kvcas"
)

// ErrBudgetExceeded: the organisation's credit balance, the team's budget
// or the job's max_credits does not cover a reservation. Refusals are
// *BudgetError values that unwrap to it.
var ErrBudgetExceeded = errors.New("account: credit budget exceeded")

// Budget scopes of a BudgetError.
const (
	ScopeBalance    = "balance"
	ScopeTeamBudget = "team_budget"
	ScopeMaxCredits = "max_credits"
)

// BudgetError says which credit limit refused a reservation.
type BudgetError struct {
	Scope     string // ScopeBalance, ScopeTeamBudget or ScopeMaxCredits
	Need      int64  // credits asked for
	Available int64  // credits the scope still allows
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("account: credit budget exceeded: %s allows %d credits, %d needed", e.Scope, e.Available, e.Need)
}

// Unwrap returns ErrBudgetExceeded.
func (e *BudgetError) Unwrap() error { return ErrBudgetExceeded }

// OrgCredits is an organisation's credit aggregate. The ledger keeps
// Credited = Balance + Reserved + Charged at every step.
type OrgCredits struct {
	OrgID string `json:"org_id"`
	// Credited is every credit ever added (AddCredits).
	Credited int64 `json:"credited"`
	// Balance is what new reservations can take.
	Balance int64 `json:"balance"`
	// Reserved is held by jobs not yet settled.
	Reserved int64 `json:"reserved"`
	// Charged is what settled jobs cost.
	Charged int64 `json:"charged"`
}

// TeamCredits is a team's share of its organisation's credits, checked
// against the team's BudgetCredits.
type TeamCredits struct {
	TeamID   string `json:"team_id"`
	Reserved int64  `json:"reserved"`
	Charged  int64  `json:"charged"`
}

// LedgerState is the state of a job's ledger entry.
type LedgerState string

// Ledger entry states; every state but LedgerReserved is final.
const (
	LedgerReserved       LedgerState = "reserved"
	LedgerCharged        LedgerState = "charged"
	LedgerRefunded       LedgerState = "refunded"
	LedgerCreditRequired LedgerState = "credit_required"
)

// LedgerEntry is one product job's credits: reserved at submission, then
// charged, refunded, or refunded as credit_required.
type LedgerEntry struct {
	JobID    string      `json:"job_id"`
	OrgID    string      `json:"org_id"`
	TeamID   string      `json:"team_id,omitempty"`
	Reserved int64       `json:"reserved"`
	Charged  int64       `json:"charged"`
	State    LedgerState `json:"state"`
	// Cost is the settled cost asked for (it exceeds Reserved in
	// credit_required).
	Cost int64 `json:"cost,omitempty"`
	// Applied is set once the reservation is counted in every aggregate;
	// an entry in LedgerReserved without it is still being reserved.
	Applied bool `json:"applied"`
	// OrgStage and TeamStage are the stages (1 reserved, 2 final) the
	// organisation's and the team's aggregates have applied for this job
	// (see ledger.go).
	OrgStage  uint8      `json:"org_stage,omitempty"`
	TeamStage uint8      `json:"team_stage,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	SettledAt *time.Time `json:"settled_at,omitempty"`
}

// Refunded reports whether the entry gave its reservation back.
func (e LedgerEntry) Refunded() bool {
	return e.State == LedgerRefunded || e.State == LedgerCreditRequired
}

// Credit bounds of AddCredits.
const (
	// MaxCreditAmount is the most credits one AddCredits may add.
	MaxCreditAmount int64 = 1_000_000_000_000
	// MaxCreditBalance is the largest balance AddCredits may leave.
	MaxCreditBalance int64 = 1_000_000_000_000_000
)

// AddCredits adds amount (> 0) credits to an organisation's balance and
// returns the new aggregate. ErrNotFound for an unknown organisation,
// ErrInvalid for amount <= 0.
func (s *Service) AddCredits(ctx context.Context, orgID string, amount int64) (OrgCredits, error) {
	if amount <= 0 || amount > MaxCreditAmount {
		return OrgCredits{}, fmt.Errorf("%w: amount must be 1 to %d credits", ErrInvalid, MaxCreditAmount)
	}
	if _, err := s.GetOrg(ctx, orgID); err != nil {
		return OrgCredits{}, err
	}
	c, err := kvcas.JSON(ctx, s.credits, "org."+orgID, func(c *orgAggregate, _ bool) (bool, error) {
		c.OrgID = orgID
		if c.Balance > MaxCreditBalance-amount || c.Credited > math.MaxInt64-amount {
			return false, fmt.Errorf("%w: the balance would exceed %d credits", ErrInvalid, MaxCreditBalance)
		}
		c.Credited += amount
		c.Balance += amount
		return true, nil
	})
	return c.OrgCredits, wrapOp("add credits", err)
}

// Credits returns an organisation's credit aggregate (zero when it never
// had credits). ErrNotFound for an unknown organisation.
func (s *Service) Credits(ctx context.Context, orgID string) (OrgCredits, error) {
	if _, err := s.GetOrg(ctx, orgID); err != nil {
		return OrgCredits{}, err
	}
	c := OrgCredits{OrgID: orgID}
	e, err := s.credits.Get(ctx, "org."+orgID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return c, nil
	}
	if err != nil {
		return OrgCredits{}, fmt.Errorf("account: credits %s: %w", orgID, err)
	}
	if err := json.Unmarshal(e.Value(), &c); err != nil {
		return OrgCredits{}, fmt.Errorf("account: credits %s: decode: %w", orgID, err)
	}
	return c, nil
}

// TeamCreditsOf returns a team's reserved and charged credits.
func (s *Service) TeamCreditsOf(ctx context.Context, teamID string) (TeamCredits, error) {
	c := TeamCredits{TeamID: teamID}
	if !validID(teamID) {
		return c, fmt.Errorf("%w: team %q", ErrNotFound, teamID)
	}
	e, err := s.credits.Get(ctx, "team."+teamID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("account: team credits %s: %w", teamID, err)
	}
	if err := json.Unmarshal(e.Value(), &c); err != nil {
		return c, fmt.Errorf("account: team credits %s: decode: %w", teamID, err)
	}
	return c, nil
}

// Ledger returns a job's ledger entry, or ErrNotFound (also for a void
// reservation being rolled back).
func (s *Service) Ledger(ctx context.Context, jobID string) (LedgerEntry, error) {
	var e LedgerEntry
	if err := s.getJSON(ctx, s.credits, "job.", jobID, "ledger entry", &e); err != nil {
		return LedgerEntry{}, err
	}
	if e.State == LedgerVoid {
		return LedgerEntry{}, fmt.Errorf("%w: ledger entry %q", ErrNotFound, jobID)
	}
	e.normalize()
	return e, nil
}

// ReserveCredits reserves amount (>= 0) credits of orgID (and of teamID's
// budget when teamID is set) for jobID. The job's own ledger entry is
// created first (ErrExists when the job already has one), then the team
// aggregate and the organisation aggregate are each updated by
// compare-and-swap: concurrent submissions of one organisation contend
// only on the small aggregate value, never on a list of jobs. A refusal is
// a *BudgetError (ScopeTeamBudget or ScopeBalance) and leaves nothing
// behind. A process that dies part-way leaves a reservation that
// ReconcileCredits rolls back after its grace period (see ledger.go).
func (s *Service) ReserveCredits(ctx context.Context, jobID, orgID, teamID string, amount int64) (LedgerEntry, error) {
	if amount < 0 || !validID(jobID) || !validID(orgID) {
		return LedgerEntry{}, fmt.Errorf("%w: reservation of %d credits for job %q", ErrInvalid, amount, jobID)
	}
	var budget *int64
	if teamID != "" {
		t, err := s.GetTeam(ctx, teamID)
		if err != nil {
			return LedgerEntry{}, err
		}
		if t.OrgID != orgID {
			return LedgerEntry{}, fmt.Errorf("%w: team %s is not a team of %s", ErrInvalid, teamID, orgID)
		}
		budget = t.BudgetCredits
	}
	now := s.cfg.Now().UTC()
	entry := LedgerEntry{JobID: jobID, OrgID: orgID, TeamID: teamID, Reserved: amount, State: LedgerReserved, CreatedAt: now}
	// The index key first, so that an entry never exists unindexed.
	ledgerStep(ctx, "reserve:index")
	idx, _ := json.Marshal(openIndex{JobID: jobID, OrgID: orgID, CreatedAt: now})
	if _, err := s.credits.Put(ctx, openKey(orgID, jobID), idx); err != nil {
		return LedgerEntry{}, fmt.Errorf("account: reserve credits: index: %w", err)
	}
	ledgerStep(ctx, "reserve:entry")
	data, _ := json.Marshal(entry)
	if _, err := s.credits.Create(ctx, "job."+jobID, data); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return LedgerEntry{}, fmt.Errorf("%w: ledger entry of job %s", ErrExists, jobID)
		}
		return LedgerEntry{}, fmt.Errorf("account: reserve credits: %w", err)
	}
	abort := func(err error) (LedgerEntry, error) {
		if _, verr := s.voidEntry(context.WithoutCancel(ctx), jobID); verr != nil && !errors.Is(verr, errEntryGone) {
			err = errors.Join(err, verr)
		}
		return LedgerEntry{}, wrapOp("reserve credits", err)
	}
	for _, k := range entry.kinds() {
		ledgerStep(ctx, "reserve:"+k.String())
		st, err := s.stepAggregate(ctx, k, jobID, k.key(entry), true, budget)
		if err == nil && st != stageReserved || errors.Is(err, errEntryGone) {
			err = fmt.Errorf("job %s: %w", jobID, errRolledBack)
		}
		if err != nil {
			return abort(err)
		}
	}
	ledgerStep(ctx, "reserve:confirm")
	entry, err := kvcas.JSON(ctx, s.credits, "job."+jobID, func(e *LedgerEntry, exists bool) (bool, error) {
		if !exists || !e.reserving() {
			return false, fmt.Errorf("job %s: %w", jobID, errRolledBack)
		}
		e.Applied, e.OrgStage = true, stageReserved
		if e.TeamID != "" {
			e.TeamStage = stageReserved
		}
		return true, nil
	})
	if err != nil {
		return abort(err)
	}
	// The reservation holds from here on. What follows is bookkeeping that
	// ReconcileCredits finishes should it fail, so its errors are not the
	// caller's.
	for _, k := range entry.kinds() {
		ledgerStep(ctx, "reserve:clean-"+k.String())
		if err := s.cleanAggregate(ctx, k, jobID, k.key(entry)); err != nil {
			break
		}
	}
	return entry, nil
}

// SettleCredits settles a job that succeeded at cost credits: when cost
// fits in the reservation the entry becomes LedgerCharged (cost charged,
// the rest of the reservation back to the balance); when it does not, the
// whole reservation is refunded and the entry becomes
// LedgerCreditRequired. A final entry is returned unchanged, so settling
// twice is harmless; a settlement that a crash interrupted is finished by
// the next call. ErrNotFound when the job has no entry; ErrInvalid when
// its reservation is still being made.
func (s *Service) SettleCredits(ctx context.Context, jobID string, cost int64) (LedgerEntry, error) {
	if cost < 0 {
		return LedgerEntry{}, fmt.Errorf("%w: negative cost", ErrInvalid)
	}
	e, _, err := s.finish(ctx, jobID, func(e *LedgerEntry) {
		e.Cost = cost
		if cost <= e.Reserved {
			e.State, e.Charged = LedgerCharged, cost
		} else {
			e.State, e.Charged = LedgerCreditRequired, 0
		}
	})
	return e, err
}

// RefundCredits gives a failed or cancelled job's reservation back
// (LedgerRefunded). A final entry is returned unchanged (an interrupted
// settlement is finished); a reservation still being made is rolled back
// and reported as ErrNotFound.
func (s *Service) RefundCredits(ctx context.Context, jobID string) (LedgerEntry, error) {
	e, _, err := s.finish(ctx, jobID, nil)
	return e, err
}

func refund(e *LedgerEntry) { e.State, e.Charged = LedgerRefunded, 0 }

// finish moves a reserved entry to its final state by compare-and-swap
// (only one caller wins; won reports it); fn nil means a refund, which
// also rolls back a reservation still being made. It then brings the
// aggregates to the final state (drive), which also finishes what an
// earlier, interrupted call left.
func (s *Service) finish(ctx context.Context, jobID string, fn func(*LedgerEntry)) (LedgerEntry, bool, error) {
	isRefund := fn == nil
	if isRefund {
		fn = refund
	}
	if !validID(jobID) {
		return LedgerEntry{}, false, fmt.Errorf("%w: ledger entry of job %q", ErrNotFound, jobID)
	}
	won := false
	ledgerStep(ctx, "finish")
	e, err := kvcas.JSON(ctx, s.credits, "job."+jobID, func(e *LedgerEntry, exists bool) (bool, error) {
		won = false
		if !exists || e.State == LedgerVoid {
			return false, fmt.Errorf("%w: ledger entry of job %s", ErrNotFound, jobID)
		}
		e.normalize()
		if e.reserving() {
			if isRefund {
				return false, nil // rolled back below
			}
			return false, fmt.Errorf("%w: the reservation of job %s is not complete", ErrInvalid, jobID)
		}
		if e.State != LedgerReserved {
			return false, nil
		}
		fn(e)
		now := s.cfg.Now().UTC()
		e.SettledAt = &now
		won = true
		return true, nil
	})
	if err != nil {
		return e, false, wrapOp("settle credits", err)
	}
	e.normalize()
	if e.reserving() {
		if _, err := s.voidEntry(context.WithoutCancel(ctx), jobID); err != nil && !errors.Is(err, errEntryGone) {
			return LedgerEntry{}, false, wrapOp("settle credits", err)
		}
		return LedgerEntry{}, false, fmt.Errorf("%w: ledger entry of job %s (rolled back)", ErrNotFound, jobID)
	}
	if e.complete() {
		return e, won, nil
	}
	e, err = s.drive(context.WithoutCancel(ctx), e)
	return e, won, wrapOp("settle credits", err)
}
