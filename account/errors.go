package account

import (
	"errors"
	"fmt"
)

// Sentinel errors callers branch on. Errors returned by the service wrap
// them (test with errors.Is); limit refusals are *LimitError values that
// unwrap to ErrConcurrencyLimit, ErrHardLimit or ErrInsufficientBalance.
var (
	// ErrConcurrencyLimit: a personal key's account already has its maximum
	// number of jobs in flight.
	ErrConcurrencyLimit = errors.New("account: concurrency limit exceeded")
	// ErrHardLimit: the job would push the period's usage (with jobs in
	// flight) over the spending limit.
	ErrHardLimit = errors.New("account: spending limit exceeded")
	// ErrInsufficientBalance: a prepaid account's balance does not cover
	// the jobs in flight plus the new job.
	ErrInsufficientBalance = errors.New("account: insufficient prepaid balance")
	// ErrNotFound: no such account or key.
	ErrNotFound = errors.New("account: not found")
	// ErrInvalid: an argument breaks a rule (e-mail, billing type, negative
	// amount, unknown kind or class, malformed id).
	ErrInvalid = errors.New("account: invalid argument")
	// ErrInvalidKey: an API key secret is missing, unknown or revoked.
	ErrInvalidKey = errors.New("account: invalid api key")
	// ErrExists: an account with the same e-mail already exists.
	ErrExists = errors.New("account: already exists")
)

// LimitError is a refusal by Reserve with the numbers behind it. Err is
// ErrConcurrencyLimit, ErrHardLimit or ErrInsufficientBalance; the other
// fields are those that apply (amounts in dollars).
type LimitError struct {
	// Err is the sentinel the error unwraps to.
	Err error
	// Usage is the billing period's charged usage (ErrHardLimit).
	Usage float64
	// Reserved is the sum of the estimated costs of the jobs in flight
	// (ErrHardLimit, ErrInsufficientBalance).
	Reserved float64
	// Cost is the estimated cost of the refused job.
	Cost float64
	// Limit is the spending limit (ErrHardLimit) or the prepaid balance
	// (ErrInsufficientBalance).
	Limit float64
	// InFlight is the number of jobs in flight.
	InFlight int
	// MaxInFlight is the concurrency limit (ErrConcurrencyLimit).
	MaxInFlight int
}

// Error says what was exceeded, with the numbers, for example "account:
// current usage $12.40 + job cost $4.80 would exceed the spending limit
// $15.00".
func (e *LimitError) Error() string {
	switch e.Err {
	case ErrConcurrencyLimit:
		return fmt.Sprintf("account: %d jobs in flight, the concurrency limit is %d", e.InFlight, e.MaxInFlight)
	case ErrHardLimit:
		if e.Reserved > 0 {
			return fmt.Sprintf("account: current usage $%.2f + in-flight jobs $%.2f + job cost $%.2f would exceed the spending limit $%.2f",
				e.Usage, e.Reserved, e.Cost, e.Limit)
		}
		return fmt.Sprintf("account: current usage $%.2f + job cost $%.2f would exceed the spending limit $%.2f", e.Usage, e.Cost, e.Limit)
	case ErrInsufficientBalance:
		if e.Reserved > 0 {
			return fmt.Sprintf("account: prepaid balance $%.2f does not cover in-flight jobs $%.2f + job cost $%.2f", e.Limit, e.Reserved, e.Cost)
		}
		return fmt.Sprintf("account: prepaid balance $%.2f does not cover the job cost $%.2f", e.Limit, e.Cost)
	}
	if e.Err != nil {
		return e.Err.Error()
	}
	return "account: limit exceeded"
}

// Unwrap returns the sentinel.
func (e *LimitError) Unwrap() error { return e.Err }
