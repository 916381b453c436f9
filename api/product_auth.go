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

// HeaderTeamID carries the team context of product API requests.
const HeaderTeamID = "X-Service-Team-Id"

// OrgCtx is who a product request acts for.
type OrgCtx struct {
	Org      account.Org
	TeamID   string
	KeyOwner string
}

// WithOrgKey authenticates an organisation key and resolves the team
// context: a key bound to a team acts for that team (the header, when
// sent, must name it); an organisation-wide key acts for the team the
// header names (one of its organisation's teams) or for no team.
func (s *Server) WithOrgKey(h func(w http.ResponseWriter, r *http.Request, oc OrgCtx) error) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.authenticate(r)
		if err != nil {
			return err
		}
		if p.Key.OrgID == "" {
			return NewError(CodeOrgKeyRequired, "the product API needs an organization key (issued with POST /admin/v1/orgs/{id}/keys); this is an account key of kind %q", p.Key.Kind)
		}
		org, err := s.Acc.GetOrg(r.Context(), p.Key.OrgID)
		if err != nil {
			return fmt.Errorf("api: organisation: %w", err)
		}
		oc := OrgCtx{Org: org, TeamID: p.Key.TeamID, KeyOwner: p.Key.AccountID}
		header := strings.TrimSpace(r.Header.Get(HeaderTeamID))
		switch {
		case p.Key.TeamID != "" && header != "" && header != p.Key.TeamID:
			return NewError(CodeTeamForbidden, "this key belongs to team %s, not %s", p.Key.TeamID, trunc.String(header, 80))
		case p.Key.TeamID == "" && header != "":
			t, err := s.Acc.GetTeam(r.Context(), header)
			if errors.Is(err, account.ErrNotFound) || (err == nil && t.OrgID != org.ID) {
				return NewError(CodeTeamForbidden, "team %s is not a team of this organization", trunc.String(header, 80))
			}
			if err != nil {
				return fmt.Errorf("api: team: %w", err)
			}
			oc.TeamID = t.ID
		}
		return h(w, r, oc)
	}
}
