// Authentication of the product API: organisation keys, team context and
// product access.

package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/internal/trunc"
)

// orgCtx is who a product request acts for.
type orgCtx struct {
	Org      account.Org
	TeamID   string
	KeyOwner string
}

// withOrgKey authenticates an organisation key and resolves the team
// context: a key bound to a team acts for that team (the header, when
// sent, must name it); an organisation-wide key acts for the team the
// header names (one of its organisation's teams) or for no team.
func (s *Server) withOrgKey(h func(w http.ResponseWriter, r *http.Request, oc orgCtx) error) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.authenticate(r)
		if err != nil {
			return err
		}
		if p.Key.OrgID == "" {
			return newError(CodeOrgKeyRequired, "the product API needs an organization key (issued with POST /admin/v1/orgs/{id}/keys); this is an account key of kind %q", p.Key.Kind)
		}
		org, err := s.acc.GetOrg(r.Context(), p.Key.OrgID)
		if err != nil {
			return fmt.Errorf("api: organisation: %w", err)
		}
		oc := orgCtx{Org: org, TeamID: p.Key.TeamID, KeyOwner: p.Key.AccountID}
		header := strings.TrimSpace(r.Header.Get(HeaderTeamID))
		switch {
		case p.Key.TeamID != "" && header != "" && header != p.Key.TeamID:
			return newError(CodeTeamForbidden, "this key belongs to team %s, not %s", p.Key.TeamID, trunc.String(header, 80))
		case p.Key.TeamID == "" && header != "":
			t, err := s.acc.GetTeam(r.Context(), header)
			if errors.Is(err, account.ErrNotFound) || (err == nil && t.OrgID != org.ID) {
				return newError(CodeTeamForbidden, "team %s is not a team of this organization", trunc.String(header, 80))
			}
			if err != nil {
				return fmt.Errorf("api: team: %w", err)
			}
			oc.TeamID = t.ID
		}
		return h(w, r, oc)
	}
}

// product returns the path's product or 404 PRODUCT_NOT_FOUND.
func (s *Server) product(name string) (*productDef, error) {
	for _, p := range s.products {
		if p.Product == name {
			return p, nil
		}
	}
	return nil, newError(CodeProductNotFound, "product %q not found", trunc.String(name, 80))
}

func modelNotFound(p *productDef, id string) error {
	return newError(CodeModelNotFound, "model %q is not a model of product %s (models: %s)",
		trunc.String(id, 80), p.Product, strings.Join(p.modelIDs(), ", "))
}

// checkAccess refuses a product the organisation has not enabled or a
// model it has not consented to.
func checkAccess(oc orgCtx, p *productDef, model string) error {
	if !oc.Org.ProductEnabled(p.Product) {
		return newError(CodeProductNotEnabled, "product %s is not enabled for this organization", p.Product)
	}
	if !oc.Org.ModelConsent(model) {
		return newError(CodeModelConsentRequired, "this organization has not consented to model %s", model)
	}
	return nil
}
