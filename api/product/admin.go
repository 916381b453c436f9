package product

import (
	"errors"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"net/http"
	"strings"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/internal/trunc"
)

// orgAdminErr maps account errors of the organisation operator routes.
func orgAdminErr(err error, what string) error {
	switch {
	case errors.Is(err, account.ErrNotFound):
		code := api.CodeOrgNotFound
		if what == "team" {
			code = api.CodeTeamNotFound
		}
		return api.NewError(code, "%s", strings.TrimPrefix(err.Error(), "account: "))
	case errors.Is(err, account.ErrInvalid):
		return api.BadRequest(api.CodeInvalidInput, "%s", strings.TrimPrefix(err.Error(), "account: "))
	}
	return fmt.Errorf("api: %s: %w", what, err)
}

// adminCreateOrg is POST /admin/v1/orgs {name} → 201 organisation.
func (s *API) adminCreateOrg(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Name string `json:"name"`
	}
	if err := s.DecodeStrict(w, r, &in); err != nil {
		return err
	}
	o, err := s.Acc.CreateOrg(r.Context(), in.Name)
	if err != nil {
		return orgAdminErr(err, "organization")
	}
	api.WriteJSON(w, http.StatusCreated, o)
	return nil
}

// adminGetOrg is GET /admin/v1/orgs/{id}.
func (s *API) adminGetOrg(w http.ResponseWriter, r *http.Request) error {
	o, err := s.Acc.GetOrg(r.Context(), r.PathValue("id"))
	if err != nil {
		return orgAdminErr(err, "organization")
	}
	api.WriteJSON(w, http.StatusOK, o)
	return nil
}

// adminAddCredits is POST /admin/v1/orgs/{id}/credits {amount} → the new
// credit aggregate (balance, reserved, charged, credited).
func (s *API) adminAddCredits(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Amount *int64 `json:"amount"`
	}
	if err := s.DecodeStrict(w, r, &in); err != nil {
		return err
	}
	if in.Amount == nil {
		return api.Unprocessable([]any{"body", "amount"}, "Field required", "missing")
	}
	c, err := s.Acc.AddCredits(r.Context(), r.PathValue("id"), *in.Amount)
	if err != nil {
		return orgAdminErr(err, "organization")
	}
	api.WriteJSON(w, http.StatusOK, c)
	return nil
}

// adminGetCredits is GET /admin/v1/orgs/{id}/credits.
func (s *API) adminGetCredits(w http.ResponseWriter, r *http.Request) error {
	c, err := s.Acc.Credits(r.Context(), r.PathValue("id"))
	if err != nil {
		return orgAdminErr(err, "organization")
	}
	api.WriteJSON(w, http.StatusOK, c)
	return nil
}

// adminCreateTeam is POST /admin/v1/orgs/{id}/teams {name, budget_credits}
// → 201 team. budget_credits null or absent: no team budget.
func (s *API) adminCreateTeam(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Name          string `json:"name"`
		BudgetCredits *int64 `json:"budget_credits"`
	}
	if err := s.DecodeStrict(w, r, &in); err != nil {
		return err
	}
	t, err := s.Acc.CreateTeam(r.Context(), r.PathValue("id"), in.Name, in.BudgetCredits)
	if err != nil {
		return orgAdminErr(err, "organization")
	}
	api.WriteJSON(w, http.StatusCreated, t)
	return nil
}

// adminCreateOrgKey is POST /admin/v1/orgs/{id}/keys {team_id?} → 201
// {id, key}: an organisation key, bound to the team when team_id is set.
func (s *API) adminCreateOrgKey(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		TeamID string `json:"team_id"`
	}
	if r.ContentLength != 0 {
		if err := s.DecodeStrict(w, r, &in); err != nil {
			return err
		}
	}
	k, secret, err := s.Acc.CreateOrgKey(r.Context(), r.PathValue("id"), in.TeamID)
	if err != nil {
		return orgAdminErr(err, "organization")
	}
	out := map[string]string{"id": k.ID, "key": secret, "org_id": k.OrgID}
	if k.TeamID != "" {
		out["team_id"] = k.TeamID
	}
	api.WriteJSON(w, http.StatusCreated, out)
	return nil
}

// adminSetProduct is PUT /admin/v1/orgs/{id}/products/{product} {enabled}.
func (s *API) adminSetProduct(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Enabled *bool `json:"enabled"`
	}
	if err := s.DecodeStrict(w, r, &in); err != nil {
		return err
	}
	if in.Enabled == nil {
		return api.Unprocessable([]any{"body", "enabled"}, "Field required", "missing")
	}
	if _, err := s.product(r.PathValue("product")); err != nil {
		return api.NewError(api.CodeProductNotFound, "product %q not found", trunc.String(r.PathValue("product"), 80))
	}
	o, err := s.Acc.SetProductEnabled(r.Context(), r.PathValue("id"), r.PathValue("product"), *in.Enabled)
	if err != nil {
		return orgAdminErr(err, "organization")
	}
	api.WriteJSON(w, http.StatusOK, o)
	return nil
}

// adminSetConsent is PUT /admin/v1/orgs/{id}/models/{model_id}/consent
// {granted}.
func (s *API) adminSetConsent(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Granted *bool `json:"granted"`
	}
	if err := s.DecodeStrict(w, r, &in); err != nil {
		return err
	}
	if in.Granted == nil {
		return api.Unprocessable([]any{"body", "granted"}, "Field required", "missing")
	}
	model := r.PathValue("model_id")
	known := false
	for _, p := range s.products {
		if _, ok := p.model(model); ok {
			known = true
		}
	}
	if !known {
		return api.NewError(api.CodeModelNotFound, "model %q not found", trunc.String(model, 80))
	}
	o, err := s.Acc.SetModelConsent(r.Context(), r.PathValue("id"), model, *in.Granted)
	if err != nil {
		return orgAdminErr(err, "organization")
	}
	api.WriteJSON(w, http.StatusOK, o)
	return nil
}

// adminOrgWebhookSecret is GET /admin/v1/orgs/{id}/webhook-secret: the
// secret that signs the organisation's product job webhooks.
func (s *API) adminOrgWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	secret, err := s.Acc.OrgWebhookSecret(r.Context(), r.PathValue("id"))
	if err != nil {
		return orgAdminErr(err, "organization")
	}
	api.WriteJSON(w, http.StatusOK, map[string]string{"secret": secret})
	return nil
}
