// Package account owns vfx's accounts, API keys, rate limits, spending
// limits, billing periods, usage meters and the charge ledger. All state
// lives in NATS JetStream key-value buckets, so every API replica shares it;
// concurrent writers are serialised with compare-and-set (kv.Create and
// kv.Update with a revision). The package knows nothing of HTTP and never
// logs: it returns errors, and callers branch on the sentinel errors below.
package account

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/internal/kvcas"
)

// Names of the key-value buckets the service creates.
const (
	// BucketAccounts holds account records keyed by account id, plus the
	// e-mail index ("email.<sha256>"), webhook secrets ("whsec.<account>")
	// and the development-account marker ("meta.dev").
	BucketAccounts = "accounts"
	// BucketKeys holds API key records (with the secret's hash) keyed by key id.
	BucketKeys = "keys"
	// BucketKeyHashes maps the hex SHA-256 of a secret to its key id.
	BucketKeyHashes = "key_hashes"
	// BucketRateLimits holds per-minute request counters
	// ("<account>.<class>.<window unix>"); entries expire after a few minutes.
	BucketRateLimits = "ratelimits"
	// BucketUsage holds per-period usage totals ("<account>.period.<start
	// unix>") and the charge ledger ("<account>.charge.<job id>").
	BucketUsage = "usage"
	// BucketInFlight holds, per account, one entry per job admitted by
	// Reserve and not yet settled ("<account>.job.<job id>", with its
	// estimated cost) and the aggregate of those entries ("<account>.sum":
	// count and estimated cost). See inflight.go.
	BucketInFlight = "inflight"
)

// rateLimitTTL is how long a rate-limit counter is kept after its last
// write; windows are 60 s, the margin covers clock skew between replicas.
const rateLimitTTL = 5 * time.Minute

// Kind is the kind of an API key.
type Kind string

// Key kinds.
const (
	// KindPersonal keys carry the account's request and concurrency limits.
	KindPersonal Kind = "personal"
	// KindOrganization keys have no request or concurrency limits; spending
	// limits and balances still apply.
	KindOrganization Kind = "organization"
)

// Billing types of an account.
const (
	// BillingPrepaid accounts spend a prepaid balance; a job is refused when
	// the balance does not cover it.
	BillingPrepaid = "prepaid"
	// BillingPostpaid accounts are invoiced for their usage; only the
	// spending limit applies.
	BillingPostpaid = "postpaid"
)

// DefaultSpendingLimit is the spending limit, in dollars per billing period,
// of an account created without one (docs/api.md, Limits).
const DefaultSpendingLimit = 5000.0

// RateLimits are an account's personal-key limits. A zero field means the
// default of DefaultRateLimits.
type RateLimits struct {
	// RPM is the number of job submissions (POST /v1/vfx/generations) per minute.
	RPM int `json:"rpm"`
	// ReadRPM is the number of job reads and listings per minute.
	ReadRPM int `json:"read_rpm"`
	// BillingRPM is the number of billing-info reads per minute.
	BillingRPM int `json:"billing_rpm"`
	// Concurrency is the number of jobs in flight at once.
	Concurrency int `json:"concurrency"`
}

// DefaultRateLimits returns the limits of personal keys (docs/api.md): 5
// submissions, 5 reads and 5 billing reads per minute, and 10 jobs in flight.
func DefaultRateLimits() RateLimits {
	return RateLimits{RPM: 5, ReadRPM: 5, BillingRPM: 5, Concurrency: 10}
}

// OrDefault returns r with every zero (or negative) field replaced by its
// default from DefaultRateLimits.
func (r RateLimits) OrDefault() RateLimits {
	d := DefaultRateLimits()
	if r.RPM <= 0 {
		r.RPM = d.RPM
	}
	if r.ReadRPM <= 0 {
		r.ReadRPM = d.ReadRPM
	}
	if r.BillingRPM <= 0 {
		r.BillingRPM = d.BillingRPM
	}
	if r.Concurrency <= 0 {
		r.Concurrency = d.Concurrency
	}
	return r
}

// Account is a customer account.
type Account struct {
	// ID is "acct_" followed by random base62 characters.
	ID string `json:"id"`
	// Email is the account's e-mail address, unique among accounts
	// (case-insensitively).
	Email string `json:"email"`
	// BillingType is BillingPrepaid or BillingPostpaid.
	BillingType string `json:"billing_type"`
	// SpendingLimit is the most the account may spend per billing period,
	// in dollars, counting jobs in flight.
	SpendingLimit float64 `json:"spending_limit"`
	// PrepaidBalance is the prepaid balance in dollars; completed jobs of a
	// prepaid account are deducted from it.
	PrepaidBalance float64 `json:"prepaid_balance"`
	// RateLimits are the personal-key limits (defaults or overrides).
	RateLimits RateLimits `json:"rate_limits"`
	// CreatedAt is when the account was created.
	CreatedAt time.Time `json:"created_at"`
}

// AccountInput is what CreateAccount needs.
type AccountInput struct {
	// Email is required: a bare address such as "a@example.com".
	Email string
	// BillingType is BillingPrepaid (the default when empty) or BillingPostpaid.
	BillingType string
	// SpendingLimit defaults to DefaultSpendingLimit; must not be negative.
	SpendingLimit *float64
	// PrepaidBalance defaults to 0; must not be negative.
	PrepaidBalance *float64
}

// AccountPatch holds the fields UpdateAccount changes; nil fields are kept.
type AccountPatch struct {
	// SpendingLimit, when set, replaces the spending limit (>= 0).
	SpendingLimit *float64
	// PrepaidBalance, when set, replaces the prepaid balance (>= 0).
	PrepaidBalance *float64
	// RateLimits, when set, replaces the rate limits; zero fields mean the
	// default; negative fields are invalid.
	RateLimits *RateLimits
}

// Config tunes the service. The zero value gives production defaults.
type Config struct {
	// Replicas of every bucket. Default 1.
	Replicas int
	// PeriodStart returns the first instant of the billing period holding t.
	// It must be monotonic (non-decreasing in t) and return a time <= t.
	// Default: the first instant of t's UTC calendar month.
	PeriodStart func(time.Time) time.Time
	// Prices is the price table. Default DefaultPrices().
	Prices PriceTable
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// ReservationTTL drops an in-flight reservation that was never settled
	// (for example because a process died between Reserve and queuing the
	// job) after this long, so it stops holding a concurrency slot and
	// budget. Default 24 h; negative means never.
	ReservationTTL time.Duration
}

func (c Config) withDefaults() Config {
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if c.PeriodStart == nil {
		c.PeriodStart = MonthStart
	}
	if c.Prices == nil {
		c.Prices = DefaultPrices()
	} else {
		p := make(PriceTable, len(c.Prices))
		for k, v := range c.Prices {
			p[k] = v
		}
		c.Prices = p
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ReservationTTL == 0 {
		c.ReservationTTL = 24 * time.Hour
	}
	return c
}

// MonthStart returns the first instant of t's UTC calendar month, the
// default billing period start.
func MonthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// Service is the account store. It is safe for concurrent use, and any
// number of Services (one per API replica) may share the same buckets.
type Service struct {
	cfg        Config
	accounts   jetstream.KeyValue
	keys       jetstream.KeyValue
	hashes     jetstream.KeyValue
	ratelimits jetstream.KeyValue
	usage      jetstream.KeyValue
	inflight   jetstream.KeyValue
	orgs       jetstream.KeyValue
	credits    jetstream.KeyValue
}

// Open creates or updates, idempotently, the buckets "accounts", "keys",
// "key_hashes", "ratelimits", "usage" and "inflight", and returns a Service
// on them. Errors name the bucket that failed; ctx bounds the calls.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Service, error) {
	if js == nil {
		return nil, errors.New("account: open: nil jetstream")
	}
	cfg = cfg.withDefaults()
	s := &Service{cfg: cfg}
	buckets := []struct {
		dst  *jetstream.KeyValue
		name string
		desc string
		ttl  time.Duration
		// marker enables per-message TTLs, for the short-lived markers
		// of removed entries.
		marker time.Duration
	}{
		{&s.accounts, BucketAccounts, "vfx accounts", 0, 0},
		{&s.keys, BucketKeys, "vfx api keys (hashed)", 0, 0},
		{&s.hashes, BucketKeyHashes, "vfx api key hash index", 0, 0},
		{&s.ratelimits, BucketRateLimits, "vfx per-minute rate limit counters", rateLimitTTL, 0},
		{&s.usage, BucketUsage, "vfx usage per billing period and charge ledger", 0, 0},
		{&s.inflight, BucketInFlight, "vfx in-flight job reservations", 0, purgeMarkerTTL},
		{&s.orgs, BucketOrgs, "vfx organisations, teams, product enablement, consent", 0, 0},
		{&s.credits, BucketCredits, "vfx organisation credit ledger", 0, 0},
	}
	for _, b := range buckets {
		kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:         b.name,
			Description:    b.desc,
			History:        1,
			TTL:            b.ttl,
			LimitMarkerTTL: b.marker,
			Storage:        jetstream.FileStorage,
			Replicas:       cfg.Replicas,
		})
		if err != nil {
			return nil, fmt.Errorf("account: open: bucket %s: %w", b.name, err)
		}
		*b.dst = kv
	}
	return s, nil
}

// accountRecord is the stored form of an Account. RecentCharges remembers
// the last jobs deducted from the prepaid balance, so that a Settle resumed
// after a crash does not deduct twice.
type accountRecord struct {
	Account
	RecentCharges []string `json:"recent_charges,omitempty"`
}

// idRe matches ids that are safe as (parts of) KV keys.
var idRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

func validID(id string) bool { return idRe.MatchString(id) }

func emailKey(email string) string {
	h := sha256.Sum256([]byte(strings.ToLower(email)))
	return "email." + hex.EncodeToString(h[:])
}

func validEmail(email string) bool {
	if email == "" || len(email) > 254 {
		return false
	}
	a, err := mail.ParseAddress(email)
	return err == nil && a.Address == email && a.Name == ""
}

// MaxMoney bounds operator amounts in USD (spending_limit,
// prepaid_balance): one billion.
const MaxMoney = 1e9

func validMoney(p *float64) bool {
	return p == nil || (*p >= 0 && !math.IsInf(*p, 0) && !math.IsNaN(*p))
}

// validOperatorMoney is validMoney up to MaxMoney.
func validOperatorMoney(p *float64) bool { return validMoney(p) && (p == nil || *p <= MaxMoney) }

func validRateLimits(r RateLimits) bool {
	return r.RPM >= 0 && r.ReadRPM >= 0 && r.BillingRPM >= 0 && r.Concurrency >= 0
}

// CreateAccount creates an account. It returns ErrInvalid (wrapped) for a
// malformed e-mail, an unknown billing type or a negative amount, and
// ErrExists when another account has the same e-mail.
func (s *Service) CreateAccount(ctx context.Context, in AccountInput) (Account, error) {
	in.Email = strings.TrimSpace(in.Email)
	if !validEmail(in.Email) {
		return Account{}, fmt.Errorf("%w: email %q is not a valid address", ErrInvalid, in.Email)
	}
	if in.BillingType == "" {
		in.BillingType = BillingPrepaid
	}
	if in.BillingType != BillingPrepaid && in.BillingType != BillingPostpaid {
		return Account{}, fmt.Errorf("%w: billing_type must be %q or %q", ErrInvalid, BillingPrepaid, BillingPostpaid)
	}
	if !validOperatorMoney(in.SpendingLimit) {
		return Account{}, fmt.Errorf("%w: spending_limit must be a number from 0 to 1e9", ErrInvalid)
	}
	if !validOperatorMoney(in.PrepaidBalance) {
		return Account{}, fmt.Errorf("%w: prepaid_balance must be a number from 0 to 1e9", ErrInvalid)
	}
	id, err := randomID("acct_", 20)
	if err != nil {
		return Account{}, fmt.Errorf("account: create account: %w", err)
	}
	a := Account{
		ID:            id,
		Email:         in.Email,
		BillingType:   in.BillingType,
		SpendingLimit: DefaultSpendingLimit,
		RateLimits:    DefaultRateLimits(),
		CreatedAt:     s.cfg.Now().UTC(),
	}
	if in.SpendingLimit != nil {
		a.SpendingLimit = *in.SpendingLimit
	}
	if in.PrepaidBalance != nil {
		a.PrepaidBalance = *in.PrepaidBalance
	}
	ek := emailKey(a.Email)
	if _, err := s.accounts.Create(ctx, ek, []byte(a.ID)); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return Account{}, fmt.Errorf("%w: an account with email %q", ErrExists, a.Email)
		}
		return Account{}, fmt.Errorf("account: create account: email index: %w", err)
	}
	data, err := json.Marshal(accountRecord{Account: a})
	if err != nil {
		return Account{}, fmt.Errorf("account: create account: %w", err)
	}
	if _, err := s.accounts.Create(ctx, a.ID, data); err != nil {
		_ = s.accounts.Delete(context.WithoutCancel(ctx), ek)
		return Account{}, fmt.Errorf("account: create account: %w", err)
	}
	return a, nil
}

// getRecord reads an account record; ErrNotFound when there is none.
func (s *Service) getRecord(ctx context.Context, id string) (accountRecord, error) {
	if !validID(id) {
		return accountRecord{}, fmt.Errorf("%w: account %q", ErrNotFound, id)
	}
	e, err := s.accounts.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return accountRecord{}, fmt.Errorf("%w: account %q", ErrNotFound, id)
	}
	if err != nil {
		return accountRecord{}, fmt.Errorf("account: get account %s: %w", id, err)
	}
	var r accountRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return accountRecord{}, fmt.Errorf("account: get account %s: decode: %w", id, err)
	}
	return r, nil
}

// GetAccount returns the account with the given id, or ErrNotFound.
func (s *Service) GetAccount(ctx context.Context, id string) (Account, error) {
	r, err := s.getRecord(ctx, id)
	return r.Account, err
}

// UpdateAccount applies p to the account with a compare-and-set loop and
// returns the result. It returns ErrNotFound for an unknown id and
// ErrInvalid for negative values.
func (s *Service) UpdateAccount(ctx context.Context, id string, p AccountPatch) (Account, error) {
	if !validOperatorMoney(p.SpendingLimit) {
		return Account{}, fmt.Errorf("%w: spending_limit must be a number from 0 to 1e9", ErrInvalid)
	}
	if !validOperatorMoney(p.PrepaidBalance) {
		return Account{}, fmt.Errorf("%w: prepaid_balance must be a number from 0 to 1e9", ErrInvalid)
	}
	if p.RateLimits != nil && !validRateLimits(*p.RateLimits) {
		return Account{}, fmt.Errorf("%w: rate limits must not be negative", ErrInvalid)
	}
	if !validID(id) {
		return Account{}, fmt.Errorf("%w: account %q", ErrNotFound, id)
	}
	r, err := kvcas.JSON(ctx, s.accounts, id, func(r *accountRecord, exists bool) (bool, error) {
		if !exists {
			return false, fmt.Errorf("%w: account %q", ErrNotFound, id)
		}
		if p.SpendingLimit != nil {
			r.SpendingLimit = *p.SpendingLimit
		}
		if p.PrepaidBalance != nil {
			r.PrepaidBalance = *p.PrepaidBalance
		}
		if p.RateLimits != nil {
			r.RateLimits = p.RateLimits.OrDefault()
		}
		return true, nil
	})
	if err != nil {
		return Account{}, wrapOp("update account", err)
	}
	return r.Account, nil
}

// ListAccounts returns every account, oldest first (ties by id).
func (s *Service) ListAccounts(ctx context.Context) ([]Account, error) {
	lister, err := s.accounts.ListKeysFiltered(ctx, "*")
	if err != nil {
		return nil, fmt.Errorf("account: list accounts: %w", err)
	}
	defer func() { _ = lister.Stop() }()
	var ids []string
	for k := range lister.Keys() {
		ids = append(ids, k)
	}
	out := make([]Account, 0, len(ids))
	for _, id := range ids {
		a, err := s.GetAccount(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("account: list accounts: %w", err)
		}
		out = append(out, a)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("account: list accounts: %w", err)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// WebhookSecret returns the account's webhook signing secret, "whsec_"
// followed by the base64 of 32 random bytes. The first call creates it (with
// kv.Create, so concurrent first callers on any replica get the same one);
// later calls return it unchanged. ErrNotFound for an unknown account.
func (s *Service) WebhookSecret(ctx context.Context, accountID string) (string, error) {
	if _, err := s.getRecord(ctx, accountID); err != nil {
		return "", err
	}
	secret, err := getOrCreateSecret(ctx, s.accounts, "whsec."+accountID)
	if errors.Is(err, kvcas.ErrConflict) {
		return "", errors.New("account: webhook secret: too much contention")
	}
	if err != nil {
		return "", fmt.Errorf("account: webhook secret: %w", err)
	}
	return secret, nil
}

// getOrCreateSecret returns the webhook secret at key, creating a new one
// when there is none (with kv.Create: concurrent first callers on any
// replica all get the one that landed). kvcas.ErrConflict after
// secretAttempts lost creates.
func getOrCreateSecret(ctx context.Context, kv jetstream.KeyValue, key string) (string, error) {
	v, err := kvcas.BytesWith(ctx, kvcas.Options{MaxAttempts: secretAttempts}, kv, key, func(v *[]byte, exists bool) (bool, error) {
		if exists {
			return false, nil
		}
		secret, err := webhookSecret()
		*v = []byte(secret)
		return err == nil, err
	})
	return string(v), err
}

// secretAttempts bounds the reads of a webhook secret that find none and
// then lose the create to another caller.
const secretAttempts = 10

// EnsureDevAccount prepares a first start: when no account exists it
// creates a prepaid development account with the given e-mail and a $1000
// balance, and an organisation-kind key (no request or concurrency limits:
// the development account is one person on one machine) whose secret it
// returns (this once) with created true. When any account exists (or another replica is doing the
// same at this moment) it creates nothing and returns created false, with the
// account of that e-mail when there is one.
func (s *Service) EnsureDevAccount(ctx context.Context, email string) (acct Account, keySecret string, created bool, err error) {
	existing, err := s.ListAccounts(ctx)
	if err != nil {
		return Account{}, "", false, err
	}
	findEmail := func(list []Account) Account {
		for _, a := range list {
			if strings.EqualFold(a.Email, strings.TrimSpace(email)) {
				return a
			}
		}
		return Account{}
	}
	if len(existing) > 0 {
		return findEmail(existing), "", false, nil
	}
	const marker = "meta.dev"
	if _, err := s.accounts.Create(ctx, marker, []byte(s.cfg.Now().UTC().Format(time.RFC3339Nano))); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return Account{}, "", false, nil
		}
		return Account{}, "", false, fmt.Errorf("account: dev account: %w", err)
	}
	balance := 1000.0
	a, err := s.CreateAccount(ctx, AccountInput{Email: email, BillingType: BillingPrepaid, PrepaidBalance: &balance})
	if err != nil {
		_ = s.accounts.Delete(context.WithoutCancel(ctx), marker)
		return Account{}, "", false, err
	}
	_, secret, err := s.CreateKey(ctx, a.ID, KindOrganization)
	if err != nil {
		return a, "", false, err
	}
	return a, secret, true, nil
}

// wrapOp prefixes infrastructure errors with the operation; errors that
// already carry a sentinel of this package are returned as they are.
func wrapOp(op string, err error) error {
	if err == nil {
		return nil
	}
	for _, s := range []error{ErrNotFound, ErrInvalid, ErrExists, ErrInvalidKey, ErrConcurrencyLimit, ErrHardLimit, ErrInsufficientBalance, ErrBudgetExceeded} {
		if errors.Is(err, s) {
			return err
		}
	}
	return fmt.Errorf("account: %s: %w", op, err)
}

// roundMoney rounds to a millionth, so sums of prices stay tidy.
func roundMoney(x float64) float64 { return math.Round(x*1e6) / 1e6 }
