package account

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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
	// Applied is set once the reservation is counted in the aggregates.
	Applied   bool       `json:"applied"`
	CreatedAt time.Time  `json:"created_at"`
	SettledAt *time.Time `json:"settled_at,omitempty"`
}

// Refunded reports whether the entry gave its reservation back.
func (e LedgerEntry) Refunded() bool {
	return e.State == LedgerRefunded || e.State == LedgerCreditRequired
}

// AddCredits adds amount (> 0) credits to an organisation's balance and
// returns the new aggregate. ErrNotFound for an unknown organisation,
// ErrInvalid for amount <= 0.
func (s *Service) AddCredits(ctx context.Context, orgID string, amount int64) (OrgCredits, error) {
	if amount <= 0 {
		return OrgCredits{}, fmt.Errorf("%w: amount must be a positive number of credits", ErrInvalid)
	}
	if _, err := s.GetOrg(ctx, orgID); err != nil {
		return OrgCredits{}, err
	}
	c, err := casJSON(ctx, s.credits, "org."+orgID, func(c *OrgCredits, _ bool) (bool, error) {
		c.OrgID = orgID
		c.Credited += amount
		c.Balance += amount
		return true, nil
	})
	return c, wrapOp("add credits", err)
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

// Ledger returns a job's ledger entry, or ErrNotFound.
func (s *Service) Ledger(ctx context.Context, jobID string) (LedgerEntry, error) {
	var e LedgerEntry
	if err := s.getJSON(ctx, s.credits, "job.", jobID, "ledger entry", &e); err != nil {
		return LedgerEntry{}, err
	}
	return e, nil
}

// ReserveCredits reserves amount (>= 0) credits of orgID (and of teamID's
// budget when teamID is set) for jobID. The job's own ledger entry is
// created first (ErrExists when the job already has one), then the team
// aggregate and the organisation aggregate are each updated by
// compare-and-swap: concurrent submissions of one organisation contend
// only on the small aggregate value, never on a list of jobs. A refusal is
// a *BudgetError (ScopeTeamBudget or ScopeBalance) and leaves nothing
// behind.
func (s *Service) ReserveCredits(ctx context.Context, jobID, orgID, teamID string, amount int64) (LedgerEntry, error) {
	if amount < 0 || !validID(jobID) {
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
	entry := LedgerEntry{JobID: jobID, OrgID: orgID, TeamID: teamID, Reserved: amount, State: LedgerReserved,
		CreatedAt: s.cfg.Now().UTC()}
	data, _ := json.Marshal(entry)
	if _, err := s.credits.Create(ctx, "job."+jobID, data); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return LedgerEntry{}, fmt.Errorf("%w: ledger entry of job %s", ErrExists, jobID)
		}
		return LedgerEntry{}, fmt.Errorf("account: reserve credits: %w", err)
	}
	undoEntry := func(err error) (LedgerEntry, error) {
		_ = s.credits.Delete(context.WithoutCancel(ctx), "job."+jobID)
		return LedgerEntry{}, wrapOp("reserve credits", err)
	}
	if teamID != "" {
		_, err := casJSON(ctx, s.credits, "team."+teamID, func(c *TeamCredits, _ bool) (bool, error) {
			c.TeamID = teamID
			if budget != nil && c.Reserved+c.Charged+amount > *budget {
				return false, &BudgetError{Scope: ScopeTeamBudget, Need: amount, Available: max(0, *budget-c.Reserved-c.Charged)}
			}
			c.Reserved += amount
			return true, nil
		})
		if err != nil {
			return undoEntry(err)
		}
	}
	_, err := casJSON(ctx, s.credits, "org."+orgID, func(c *OrgCredits, _ bool) (bool, error) {
		c.OrgID = orgID
		if c.Balance < amount {
			return false, &BudgetError{Scope: ScopeBalance, Need: amount, Available: c.Balance}
		}
		c.Balance -= amount
		c.Reserved += amount
		return true, nil
	})
	if err != nil {
		if teamID != "" {
			if uerr := s.teamDelta(context.WithoutCancel(ctx), teamID, -amount, 0); uerr != nil {
				err = errors.Join(err, uerr)
			}
		}
		return undoEntry(err)
	}
	entry, err = casJSON(ctx, s.credits, "job."+jobID, func(e *LedgerEntry, exists bool) (bool, error) {
		if !exists {
			return false, fmt.Errorf("%w: ledger entry of job %s vanished", ErrNotFound, jobID)
		}
		e.Applied = true
		return true, nil
	})
	return entry, wrapOp("reserve credits", err)
}

func (s *Service) teamDelta(ctx context.Context, teamID string, reserved, charged int64) error {
	_, err := casJSON(ctx, s.credits, "team."+teamID, func(c *TeamCredits, _ bool) (bool, error) {
		c.TeamID = teamID
		c.Reserved += reserved
		c.Charged += charged
		return true, nil
	})
	return err
}

// SettleCredits settles a job that succeeded at cost credits: when cost
// fits in the reservation the entry becomes LedgerCharged (cost charged,
// the rest of the reservation back to the balance); when it does not, the
// whole reservation is refunded and the entry becomes
// LedgerCreditRequired. A final entry is returned unchanged, so settling
// twice is harmless. ErrNotFound when the job has no entry.
func (s *Service) SettleCredits(ctx context.Context, jobID string, cost int64) (LedgerEntry, error) {
	if cost < 0 {
		return LedgerEntry{}, fmt.Errorf("%w: negative cost", ErrInvalid)
	}
	return s.finish(ctx, jobID, func(e *LedgerEntry) {
		e.Cost = cost
		if cost <= e.Reserved {
			e.State, e.Charged = LedgerCharged, cost
		} else {
			e.State, e.Charged = LedgerCreditRequired, 0
		}
	})
}

// RefundCredits gives a failed or cancelled job's reservation back
// (LedgerRefunded). A final entry is returned unchanged.
func (s *Service) RefundCredits(ctx context.Context, jobID string) (LedgerEntry, error) {
	return s.finish(ctx, jobID, func(e *LedgerEntry) { e.State, e.Charged = LedgerRefunded, 0 })
}

// finish moves a reserved entry to its final state by compare-and-swap
// (only one caller wins), then applies the difference to the aggregates.
func (s *Service) finish(ctx context.Context, jobID string, fn func(*LedgerEntry)) (LedgerEntry, error) {
	if !validID(jobID) {
		return LedgerEntry{}, fmt.Errorf("%w: ledger entry of job %q", ErrNotFound, jobID)
	}
	won := false
	e, err := casJSON(ctx, s.credits, "job."+jobID, func(e *LedgerEntry, exists bool) (bool, error) {
		won = false
		if !exists {
			return false, fmt.Errorf("%w: ledger entry of job %s", ErrNotFound, jobID)
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
	if err != nil || !won || !e.Applied {
		return e, wrapOp("settle credits", err)
	}
	actx := context.WithoutCancel(ctx)
	if e.TeamID != "" {
		if err := s.teamDelta(actx, e.TeamID, -e.Reserved, e.Charged); err != nil {
			return e, fmt.Errorf("account: settle credits: team: %w", err)
		}
	}
	_, err = casJSON(actx, s.credits, "org."+e.OrgID, func(c *OrgCredits, _ bool) (bool, error) {
		c.OrgID = e.OrgID
		c.Reserved -= e.Reserved
		c.Charged += e.Charged
		c.Balance += e.Reserved - e.Charged
		return true, nil
	})
	if err != nil {
		return e, fmt.Errorf("account: settle credits: org: %w", err)
	}
	return e, nil
}
