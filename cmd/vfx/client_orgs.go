package main

import (
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// orgsUsage lists the `vfx admin orgs` subcommands (product API).
const orgsUsage = `
  vfx admin orgs create --name NAME
  vfx admin orgs get ORG_ID
  vfx admin orgs credits ORG_ID [--add N]          (no --add: show the credit aggregate)
  vfx admin orgs team ORG_ID --name NAME [--budget-credits N]
  vfx admin orgs key ORG_ID [--team TEAM_ID]
  vfx admin orgs product ORG_ID PRODUCT --enabled=true|false
  vfx admin orgs consent ORG_ID MODEL_ID --granted=true|false
  vfx admin orgs webhook-secret ORG_ID`

// orgsCommand parses `vfx admin orgs SUB …` into an operator API call.
func orgsCommand(name string, fs *flag.FlagSet, rest []string) (method, path string, body any, err error) {
	sub := strings.TrimPrefix(name, "orgs ")
	args := func(n int, what string) ([]string, error) {
		pos, err := parseInterspersed(fs, rest)
		if err != nil {
			return nil, err
		}
		if len(pos) != n {
			return nil, usageError{fmt.Sprintf("want %s: vfx admin orgs %s %s", what, sub, what)}
		}
		for _, p := range pos {
			if strings.TrimSpace(p) == "" {
				return nil, usageError{fmt.Sprintf("want %s: vfx admin orgs %s %s", what, sub, what)}
			}
		}
		return pos, nil
	}
	org := func(id string) string { return "/admin/v1/orgs/" + url.PathEscape(id) }
	switch sub {
	case "create":
		n := fs.String("name", "", "organisation name (required)")
		if _, err := args(0, ""); err != nil {
			return "", "", nil, err
		}
		if strings.TrimSpace(*n) == "" {
			return "", "", nil, usageError{"--name is required"}
		}
		return http.MethodPost, "/admin/v1/orgs", map[string]string{"name": *n}, nil
	case "get", "webhook-secret":
		pos, err := args(1, "ORG_ID")
		if err != nil {
			return "", "", nil, err
		}
		if sub == "get" {
			return http.MethodGet, org(pos[0]), nil, nil
		}
		return http.MethodGet, org(pos[0]) + "/webhook-secret", nil, nil
	case "credits":
		add := fs.Int64("add", 0, "credits to add to the balance (> 0)")
		pos, err := args(1, "ORG_ID")
		if err != nil {
			return "", "", nil, err
		}
		if !setFlags(fs)["add"] {
			return http.MethodGet, org(pos[0]) + "/credits", nil, nil
		}
		return http.MethodPost, org(pos[0]) + "/credits", map[string]int64{"amount": *add}, nil
	case "team":
		n := fs.String("name", "", "team name (required)")
		budget := fs.Int64("budget-credits", 0, "cap on the team's reserved plus charged credits (default: none)")
		pos, err := args(1, "ORG_ID")
		if err != nil {
			return "", "", nil, err
		}
		if strings.TrimSpace(*n) == "" {
			return "", "", nil, usageError{"--name is required"}
		}
		in := map[string]any{"name": *n}
		if setFlags(fs)["budget-credits"] {
			in["budget_credits"] = *budget
		}
		return http.MethodPost, org(pos[0]) + "/teams", in, nil
	case "key":
		team := fs.String("team", "", "bind the key to this team of the organisation")
		pos, err := args(1, "ORG_ID")
		if err != nil {
			return "", "", nil, err
		}
		in := map[string]string{}
		if *team != "" {
			in["team_id"] = *team
		}
		return http.MethodPost, org(pos[0]) + "/keys", in, nil
	case "product":
		en := fs.Bool("enabled", true, "enable (true) or disable (false) the product")
		pos, err := args(2, "ORG_ID PRODUCT")
		if err != nil {
			return "", "", nil, err
		}
		return http.MethodPut, org(pos[0]) + "/products/" + url.PathEscape(pos[1]), map[string]bool{"enabled": *en}, nil
	case "consent":
		gr := fs.Bool("granted", true, "grant (true) or withdraw (false) consent")
		pos, err := args(2, "ORG_ID MODEL_ID")
		if err != nil {
			return "", "", nil, err
		}
		return http.MethodPut, org(pos[0]) + "/models/" + url.PathEscape(pos[1]) + "/consent", map[string]bool{"granted": *gr}, nil
	}
	return "", "", nil, usageError{fmt.Sprintf("unknown admin subcommand %q\n%s%s", name, adminUsage, orgsUsage)}
}
