package account

import (
	"context"
	"fmt"
	"time"

	"github.com/vfxrender/vfx/internal/kvcas"
)

// Class is a rate-limit class; each has its own counter and limit.
type Class string

// Rate-limit classes.
const (
	// ClassWrite counts job submissions (POST /v1/vfx/generations);
	// limit RateLimits.RPM.
	ClassWrite Class = "write"
	// ClassRead counts job reads and listings; limit RateLimits.ReadRPM.
	ClassRead Class = "read"
	// ClassBilling counts billing-info reads; limit RateLimits.BillingRPM.
	ClassBilling Class = "billing"
)

// rateWindow is the length of a rate-limit window.
const rateWindow = time.Minute

// Decision is the outcome of a rate-limit check, with what the X-RateLimit
// and Retry-After headers need.
type Decision struct {
	// Allowed is true when the request may proceed.
	Allowed bool
	// Limit is the number of requests allowed per window.
	Limit int
	// Remaining is the number of requests still allowed in this window
	// (after this one, for Allow).
	Remaining int
	// Reset is the end of the current window.
	Reset time.Time
	// RetryAfter is how long to wait before the next request can pass; zero
	// when Allowed.
	RetryAfter time.Duration
}

// rateCounter is the stored count of one (account, class, window).
type rateCounter struct {
	N int `json:"n"`
}

func (s *Service) rateKey(acct Account, class Class) (key string, limit int, window time.Time, now time.Time, err error) {
	if !validID(acct.ID) {
		return "", 0, time.Time{}, time.Time{}, fmt.Errorf("%w: account id %q", ErrInvalid, acct.ID)
	}
	lim := acct.RateLimits.OrDefault()
	switch class {
	case ClassWrite:
		limit = lim.RPM
	case ClassRead:
		limit = lim.ReadRPM
	case ClassBilling:
		limit = lim.BillingRPM
	default:
		return "", 0, time.Time{}, time.Time{}, fmt.Errorf("%w: rate-limit class %q", ErrInvalid, class)
	}
	now = s.cfg.Now()
	window = now.UTC().Truncate(rateWindow)
	key = fmt.Sprintf("%s.%s.%d", acct.ID, class, window.Unix())
	return key, limit, window, now, nil
}

// decide builds a Decision from the count n of the window; consumed says
// that n includes the request just counted.
func decide(n, limit int, consumed bool, window, now time.Time) Decision {
	reset := window.Add(rateWindow)
	d := Decision{Allowed: consumed || n < limit, Limit: limit, Remaining: max(limit-n, 0), Reset: reset}
	if !d.Allowed {
		d.RetryAfter = max(reset.Sub(now), time.Nanosecond)
	}
	return d
}

// Allow checks and counts one request of the account in the class. Limits
// are counted per account (all its personal keys together) in fixed 60 s
// windows aligned to the minute, in the "ratelimits" bucket, so every
// replica sees the same counts. acct.RateLimits gives the limits (zero fields
// mean the defaults). A refused request is not counted. ErrInvalid for an
// unknown class.
func (s *Service) Allow(ctx context.Context, acct Account, class Class) (Decision, error) {
	key, limit, window, now, err := s.rateKey(acct, class)
	if err != nil {
		return Decision{}, err
	}
	consumed := false
	c, err := kvcas.JSON(ctx, s.ratelimits, key, func(c *rateCounter, _ bool) (bool, error) {
		consumed = false
		if c.N >= limit {
			return false, nil
		}
		c.N++
		consumed = true
		return true, nil
	})
	if err != nil {
		return Decision{}, fmt.Errorf("account: rate limit: %w", err)
	}
	return decide(c.N, limit, consumed, window, now), nil
}

// Peek reports the account's current window in the class without counting
// a request: Allowed says whether a request would pass now, Remaining how
// many would.
func (s *Service) Peek(ctx context.Context, acct Account, class Class) (Decision, error) {
	key, limit, window, now, err := s.rateKey(acct, class)
	if err != nil {
		return Decision{}, err
	}
	c, err := kvcas.JSON(ctx, s.ratelimits, key, func(*rateCounter, bool) (bool, error) { return false, nil })
	if err != nil {
		return Decision{}, fmt.Errorf("account: rate limit: %w", err)
	}
	return decide(c.N, limit, false, window, now), nil
}
