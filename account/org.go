package account

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/internal/kvcas"
)

// Buckets of the product API's organisations and credits.
const (
	// BucketOrgs holds organisations ("org.<id>"), teams ("team.<id>") and
	// organisation webhook secrets ("whsec.<org>").
	BucketOrgs = "orgs"
	// BucketCredits holds the credit ledger: one aggregate per organisation
	// ("org.<id>"), one per team ("team.<id>") and one entry per product job
	// ("job.<id>").
	BucketCredits = "credits"
)

// MaxNameLen is the longest organisation or team name, in characters.
const MaxNameLen = 200

// Org is an organisation of the product API: it holds credits, teams and
// organisation keys, and decides which products and models its keys may
// use.
type Org struct {
	// ID is "org_" followed by random base62 characters.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Products maps a product name to whether it is enabled; a product
	// missing here is disabled.
	Products map[string]bool `json:"products,omitempty"`
	// Consent maps a model id to whether the organisation granted its
	// consent; a model missing here has none.
	Consent   map[string]bool `json:"consent,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
}

// ProductEnabled reports whether product is enabled for the organisation.
func (o Org) ProductEnabled(product string) bool { return o.Products[product] }

// ModelConsent reports whether the organisation consented to model.
func (o Org) ModelConsent(model string) bool { return o.Consent[model] }

// Team is a team of an organisation, with an optional credit budget.
type Team struct {
	// ID is "team_" followed by random base62 characters.
	ID    string `json:"id"`
	OrgID string `json:"org_id"`
	Name  string `json:"name"`
	// BudgetCredits caps the credits the team's jobs may hold reserved plus
	// charged; nil means no team budget (the organisation balance still
	// applies).
	BudgetCredits *int64    `json:"budget_credits"`
	CreatedAt     time.Time `json:"created_at"`
}

func validName(name string) bool {
	n := utf8.RuneCountInString(name)
	return strings.TrimSpace(name) != "" && n <= MaxNameLen
}

// CreateOrg creates an organisation with no credits, no enabled product
// and no model consent. ErrInvalid for an empty or over-long name.
func (s *Service) CreateOrg(ctx context.Context, name string) (Org, error) {
	if !validName(name) {
		return Org{}, fmt.Errorf("%w: organisation name must be 1..%d characters", ErrInvalid, MaxNameLen)
	}
	id, err := randomID("org_", 20)
	if err != nil {
		return Org{}, fmt.Errorf("account: create org: %w", err)
	}
	o := Org{ID: id, Name: name, CreatedAt: s.cfg.Now().UTC()}
	data, _ := json.Marshal(o)
	if _, err := s.orgs.Create(ctx, "org."+id, data); err != nil {
		return Org{}, fmt.Errorf("account: create org: %w", err)
	}
	return o, nil
}

// GetOrg returns an organisation, or ErrNotFound.
func (s *Service) GetOrg(ctx context.Context, id string) (Org, error) {
	var o Org
	if err := s.getJSON(ctx, s.orgs, "org.", id, "organisation", &o); err != nil {
		return Org{}, err
	}
	return o, nil
}

// GetTeam returns a team, or ErrNotFound.
func (s *Service) GetTeam(ctx context.Context, id string) (Team, error) {
	var t Team
	if err := s.getJSON(ctx, s.orgs, "team.", id, "team", &t); err != nil {
		return Team{}, err
	}
	return t, nil
}

func (s *Service) getJSON(ctx context.Context, kv jetstream.KeyValue, prefix, id, what string, v any) error {
	if !validID(id) {
		return fmt.Errorf("%w: %s %q", ErrNotFound, what, id)
	}
	e, err := kv.Get(ctx, prefix+id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("%w: %s %q", ErrNotFound, what, id)
	}
	if err != nil {
		return fmt.Errorf("account: %s %s: %w", what, id, err)
	}
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return fmt.Errorf("account: %s %s: decode: %w", what, id, err)
	}
	return nil
}

// CreateTeam adds a team to an organisation. budget nil means no team
// budget; a negative budget is ErrInvalid. ErrNotFound for an unknown
// organisation.
func (s *Service) CreateTeam(ctx context.Context, orgID, name string, budget *int64) (Team, error) {
	if !validName(name) {
		return Team{}, fmt.Errorf("%w: team name must be 1..%d characters", ErrInvalid, MaxNameLen)
	}
	if budget != nil && *budget < 0 {
		return Team{}, fmt.Errorf("%w: budget_credits must not be negative", ErrInvalid)
	}
	if _, err := s.GetOrg(ctx, orgID); err != nil {
		return Team{}, err
	}
	id, err := randomID("team_", 20)
	if err != nil {
		return Team{}, fmt.Errorf("account: create team: %w", err)
	}
	t := Team{ID: id, OrgID: orgID, Name: name, BudgetCredits: budget, CreatedAt: s.cfg.Now().UTC()}
	data, _ := json.Marshal(t)
	if _, err := s.orgs.Create(ctx, "team."+id, data); err != nil {
		return Team{}, fmt.Errorf("account: create team: %w", err)
	}
	return t, nil
}

// SetProductEnabled enables or disables a product for an organisation.
// Existing jobs stay readable; only new submissions are refused.
func (s *Service) SetProductEnabled(ctx context.Context, orgID, product string, enabled bool) (Org, error) {
	return s.updateOrg(ctx, orgID, func(o *Org) {
		if o.Products == nil {
			o.Products = map[string]bool{}
		}
		o.Products[product] = enabled
	})
}

// SetModelConsent grants or withdraws an organisation's consent to a model.
func (s *Service) SetModelConsent(ctx context.Context, orgID, model string, granted bool) (Org, error) {
	return s.updateOrg(ctx, orgID, func(o *Org) {
		if o.Consent == nil {
			o.Consent = map[string]bool{}
		}
		o.Consent[model] = granted
	})
}

func (s *Service) updateOrg(ctx context.Context, orgID string, fn func(*Org)) (Org, error) {
	if !validID(orgID) {
		return Org{}, fmt.Errorf("%w: organisation %q", ErrNotFound, orgID)
	}
	o, err := kvcas.JSON(ctx, s.orgs, "org."+orgID, func(o *Org, exists bool) (bool, error) {
		if !exists {
			return false, fmt.Errorf("%w: organisation %q", ErrNotFound, orgID)
		}
		fn(o)
		return true, nil
	})
	return o, wrapOp("update org", err)
}

// CreateOrgKey issues an organisation key (Kind KindOrganization, OrgID
// set) for the product API, bound to teamID when it is not empty (the team
// must belong to the organisation, else ErrInvalid). The secret is
// returned this once.
func (s *Service) CreateOrgKey(ctx context.Context, orgID, teamID string) (Key, string, error) {
	if _, err := s.GetOrg(ctx, orgID); err != nil {
		return Key{}, "", err
	}
	if teamID != "" {
		t, err := s.GetTeam(ctx, teamID)
		if err != nil || t.OrgID != orgID {
			return Key{}, "", fmt.Errorf("%w: team %q is not a team of organisation %s", ErrInvalid, teamID, orgID)
		}
	}
	return s.createKey(ctx, Key{AccountID: orgID, Kind: KindOrganization, OrgID: orgID, TeamID: teamID})
}

// OrgWebhookSecret returns the organisation's webhook signing secret,
// creating it on first use (as WebhookSecret does for accounts).
func (s *Service) OrgWebhookSecret(ctx context.Context, orgID string) (string, error) {
	if _, err := s.GetOrg(ctx, orgID); err != nil {
		return "", err
	}
	secret, err := getOrCreateSecret(ctx, s.orgs, "whsec."+orgID)
	if errors.Is(err, kvcas.ErrConflict) {
		return "", errors.New("account: org webhook secret: too much contention")
	}
	if err != nil {
		return "", fmt.Errorf("account: org webhook secret: %w", err)
	}
	return secret, nil
}
