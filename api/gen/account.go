package gen

import (
	"errors"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"net/http"
	"strings"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/internal/trunc"
)

// usageLimit is one rate_limits entry of account info.
type usageLimit struct {
	Usage int `json:"usage"`
	Limit int `json:"limit"`
}

// accountInfo is the body of GET /v1/account/info.
type accountInfo struct {
	Email         string  `json:"email"`
	BillingType   string  `json:"billing_type"`
	SpendingLimit float64 `json:"spending_limit"`
	RateLimits    struct {
		RPM         usageLimit `json:"rpm"`
		Concurrency usageLimit `json:"concurrency"`
	} `json:"rate_limits"`
}

// accountInfo is GET /v1/account/info: live usage and limits. It counts
// against the read rate limit.
func (s *API) accountInfo(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	if err := s.Limit(ctx, w, account.ClassRead); err != nil {
		return err
	}
	p := api.PrincipalOf(ctx)
	acct, err := s.Acc.GetAccount(ctx, p.Account.ID)
	if err != nil {
		return fmt.Errorf("api: account: %w", err)
	}
	d, err := s.Acc.Peek(ctx, acct, account.ClassWrite)
	if err != nil {
		return fmt.Errorf("api: rate limit: %w", err)
	}
	n, err := s.Acc.InFlight(ctx, acct.ID)
	if err != nil {
		return fmt.Errorf("api: in flight: %w", err)
	}
	var out accountInfo
	out.Email, out.BillingType, out.SpendingLimit = acct.Email, acct.BillingType, acct.SpendingLimit
	out.RateLimits.RPM = usageLimit{Usage: max(0, d.Limit-d.Remaining), Limit: acct.RateLimits.RPM}
	out.RateLimits.Concurrency = usageLimit{Usage: n, Limit: acct.RateLimits.Concurrency}
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}

// billingMeter is one meters element of billing info.
type billingMeter struct {
	ID         string  `json:"id"`
	Label      string  `json:"label"`
	Unit       string  `json:"unit"`
	TotalUsage float64 `json:"total_usage"`
}

// billingInfo is the body of GET /v1/account/billing.
type billingInfo struct {
	BillingPeriodStart int64          `json:"billing_period_start"`
	BillingPeriodEnd   int64          `json:"billing_period_end"`
	PrepaidBalance     float64        `json:"prepaid_balance"`
	CurrentPeriodUsage float64        `json:"current_period_usage"`
	Meters             []billingMeter `json:"meters"`
}

// accountBilling is GET /v1/account/billing (billing rate class).
func (s *API) accountBilling(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	if err := s.Limit(ctx, w, account.ClassBilling); err != nil {
		return err
	}
	b, err := s.Acc.Billing(ctx, api.PrincipalOf(ctx).Account.ID)
	if err != nil {
		return fmt.Errorf("api: billing: %w", err)
	}
	out := billingInfo{BillingPeriodStart: b.PeriodStart.Unix(), BillingPeriodEnd: b.PeriodEnd.Unix(),
		PrepaidBalance: b.PrepaidBalance, CurrentPeriodUsage: b.CurrentPeriodUsage, Meters: []billingMeter{}}
	for _, m := range b.Meters {
		out.Meters = append(out.Meters, billingMeter{ID: m.ID, Label: m.Label, Unit: m.Unit, TotalUsage: m.TotalUsage})
	}
	api.WriteJSON(w, http.StatusOK, out)
	return nil
}

// adminAccountInput is the body of POST /admin/v1/accounts.
type adminAccountInput struct {
	Email          string   `json:"email"`
	BillingType    string   `json:"billing_type,omitempty"`
	SpendingLimit  *float64 `json:"spending_limit,omitempty"`
	PrepaidBalance *float64 `json:"prepaid_balance,omitempty"`
}

// adminAccountPatch is the body of PATCH /admin/v1/accounts/{id}.
type adminAccountPatch struct {
	SpendingLimit  *float64            `json:"spending_limit,omitempty"`
	PrepaidBalance *float64            `json:"prepaid_balance,omitempty"`
	RateLimits     *account.RateLimits `json:"rate_limits,omitempty"`
}

// adminErr maps account errors of the operator API.
func adminErr(err error, what string) error {
	switch {
	case errors.Is(err, account.ErrNotFound):
		code := api.CodeAccountNotFound
		if what == "key" {
			code = api.CodeKeyNotFound
		}
		return api.NewError(code, "%s not found", what)
	case errors.Is(err, account.ErrInvalid):
		return api.BadRequest(api.CodeInvalidInput, "%s", strings.TrimPrefix(err.Error(), "account: "))
	case errors.Is(err, account.ErrExists):
		return api.NewError(api.CodeAccountExists, "%s", strings.TrimPrefix(err.Error(), "account: "))
	}
	return fmt.Errorf("api: %s: %w", what, err)
}

func (s *API) adminCreateAccount(w http.ResponseWriter, r *http.Request) error {
	var in adminAccountInput
	if err := s.DecodeStrict(w, r, &in); err != nil {
		return err
	}
	a, err := s.Acc.CreateAccount(r.Context(), account.AccountInput{Email: in.Email, BillingType: in.BillingType,
		SpendingLimit: in.SpendingLimit, PrepaidBalance: in.PrepaidBalance})
	if err != nil {
		return adminErr(err, "account")
	}
	api.WriteJSON(w, http.StatusCreated, a)
	return nil
}

func (s *API) adminUpdateAccount(w http.ResponseWriter, r *http.Request) error {
	var in adminAccountPatch
	if err := s.DecodeStrict(w, r, &in); err != nil {
		return err
	}
	a, err := s.Acc.UpdateAccount(r.Context(), r.PathValue("id"), account.AccountPatch{SpendingLimit: in.SpendingLimit,
		PrepaidBalance: in.PrepaidBalance, RateLimits: in.RateLimits})
	if err != nil {
		return adminErr(err, "account")
	}
	api.WriteJSON(w, http.StatusOK, a)
	return nil
}

// adminKeyInput is the optional body of POST /admin/v1/accounts/{id}/keys.
type adminKeyInput struct {
	Kind string `json:"kind,omitempty"`
}

func (s *API) adminCreateKey(w http.ResponseWriter, r *http.Request) error {
	in := adminKeyInput{Kind: string(account.KindPersonal)}
	if r.ContentLength != 0 {
		if err := s.DecodeStrict(w, r, &in); err != nil {
			return err
		}
	}
	if in.Kind == "" {
		in.Kind = string(account.KindPersonal)
	}
	if in.Kind != string(account.KindPersonal) && in.Kind != string(account.KindOrganization) {
		return api.BadRequest(api.CodeInvalidInput, "kind %q: want personal or organization", trunc.String(in.Kind, 40))
	}
	k, secret, err := s.Acc.CreateKey(r.Context(), r.PathValue("id"), account.Kind(in.Kind))
	if err != nil {
		return adminErr(err, "account")
	}
	api.WriteJSON(w, http.StatusCreated, map[string]string{"id": k.ID, "key": secret, "kind": string(k.Kind)})
	return nil
}

func (s *API) adminRevokeKey(w http.ResponseWriter, r *http.Request) error {
	if err := s.Acc.RevokeKey(r.Context(), r.PathValue("key_id")); err != nil {
		return adminErr(err, "key")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *API) adminWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	secret, err := s.Acc.WebhookSecret(r.Context(), r.PathValue("id"))
	if err != nil {
		return adminErr(err, "account")
	}
	api.WriteJSON(w, http.StatusOK, map[string]string{"secret": secret})
	return nil
}
