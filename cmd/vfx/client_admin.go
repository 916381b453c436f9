package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// cmdAdmin is `vfx admin …`: the operator API; it prints the JSON answer.
func cmdAdmin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runAdmin(ctx, args, stdout, stderr, os.Getenv)
}

// adminUsage lists the `vfx admin` subcommands.
const adminUsage = `want one of:
  vfx admin accounts create --email E [--billing-type prepaid|postpaid] [--spending-limit USD] [--prepaid-balance USD]
  vfx admin accounts update ID [--spending-limit USD] [--prepaid-balance USD] [--rpm N] [--read-rpm N] [--billing-rpm N] [--concurrency N]
  vfx admin keys create ACCOUNT_ID [--kind personal|organization]
  vfx admin keys revoke KEY_ID
  vfx admin webhook-secret ACCOUNT_ID`

// runAdmin is cmdAdmin with the environment read through getenv.
func runAdmin(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) == 0 {
		return usageError{adminUsage + orgsUsage}
	}
	name := args[0]
	rest := args[1:]
	if (name == "accounts" || name == "keys" || name == "orgs") && len(args) >= 2 {
		name, rest = args[0]+" "+args[1], args[2:]
	}
	fs := flag.NewFlagSet("admin "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addConnFlags(fs, getenv, false, true)
	var (
		method, path string
		body         any
		// oneArg parses the flags and the one operand, what, they
		// surround.
		oneArg = func(what string) (string, error) {
			pos, err := parseInterspersed(fs, rest)
			if err != nil {
				return "", err
			}
			if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
				return "", usageError{fmt.Sprintf("want one %s: vfx admin %s %s", what, name, what)}
			}
			return pos[0], nil
		}
	)
	switch name {
	case "accounts create":
		email := fs.String("email", "", "account e-mail (required)")
		billing := fs.String("billing-type", "", "prepaid or postpaid (server default)")
		spending := fs.Float64("spending-limit", 0, "spending limit in dollars per billing period")
		prepaid := fs.Float64("prepaid-balance", 0, "prepaid balance in dollars")
		pos, err := parseInterspersed(fs, rest)
		if err != nil {
			return err
		}
		if len(pos) > 0 {
			return usageError{fmt.Sprintf("unexpected argument %q", pos[0])}
		}
		if strings.TrimSpace(*email) == "" {
			return usageError{"--email is required"}
		}
		set := setFlags(fs)
		in := map[string]any{"email": *email}
		if set["billing-type"] {
			in["billing_type"] = *billing
		}
		if set["spending-limit"] {
			in["spending_limit"] = *spending
		}
		if set["prepaid-balance"] {
			in["prepaid_balance"] = *prepaid
		}
		method, path, body = http.MethodPost, "/admin/v1/accounts", in
	case "accounts update":
		spending := fs.Float64("spending-limit", 0, "spending limit in dollars per billing period")
		prepaid := fs.Float64("prepaid-balance", 0, "prepaid balance in dollars")
		rpm := fs.Int("rpm", 0, "personal-key submissions per minute")
		readRPM := fs.Int("read-rpm", 0, "personal-key job reads and listings per minute")
		billingRPM := fs.Int("billing-rpm", 0, "personal-key billing reads per minute")
		conc := fs.Int("concurrency", 0, "personal-key jobs in flight")
		fs.Usage = func() {
			fmt.Fprintln(fs.Output(), "usage: vfx admin accounts update ID [flags]\n\nAny rate-limit flag replaces all four rate limits; those not given go back to the defaults (5, 5, 5, 10).")
			fs.PrintDefaults()
		}
		id, err := oneArg("ACCOUNT_ID")
		if err != nil {
			return err
		}
		set := setFlags(fs)
		in := map[string]any{}
		if set["spending-limit"] {
			in["spending_limit"] = *spending
		}
		if set["prepaid-balance"] {
			in["prepaid_balance"] = *prepaid
		}
		if set["rpm"] || set["read-rpm"] || set["billing-rpm"] || set["concurrency"] {
			in["rate_limits"] = map[string]int{"rpm": *rpm, "read_rpm": *readRPM, "billing_rpm": *billingRPM, "concurrency": *conc}
		}
		if len(in) == 0 {
			return usageError{"nothing to update: give at least one flag"}
		}
		method, path, body = http.MethodPatch, "/admin/v1/accounts/"+url.PathEscape(id), in
	case "keys create":
		kind := fs.String("kind", "personal", "personal (account limits apply) or organization (no request limits)")
		id, err := oneArg("ACCOUNT_ID")
		if err != nil {
			return err
		}
		method, path, body = http.MethodPost, "/admin/v1/accounts/"+url.PathEscape(id)+"/keys", map[string]string{"kind": *kind}
	case "keys revoke":
		id, err := oneArg("KEY_ID")
		if err != nil {
			return err
		}
		method, path = http.MethodDelete, "/admin/v1/keys/"+url.PathEscape(id)
	case "webhook-secret":
		id, err := oneArg("ACCOUNT_ID")
		if err != nil {
			return err
		}
		method, path = http.MethodGet, "/admin/v1/accounts/"+url.PathEscape(id)+"/webhook-secret"
	default:
		if !strings.HasPrefix(name, "orgs ") {
			return usageError{fmt.Sprintf("unknown admin subcommand %q\n%s%s", name, adminUsage, orgsUsage)}
		}
		var err error
		if method, path, body, err = orgsCommand(name, fs, rest); err != nil {
			return err
		}
	}
	c, err := cf.client(false, true)
	if err != nil {
		return err
	}
	status, raw, err := c.Admin(ctx, method, path, body)
	if err != nil {
		return err
	}
	if status == http.StatusNoContent || len(bytes.TrimSpace(raw)) == 0 {
		// DELETE answers 204 without a body: say what happened, as JSON.
		raw, _ = json.Marshal(map[string]any{"id": path[strings.LastIndexByte(path, '/')+1:], "revoked": true})
	}
	return printJSON(stdout, raw)
}

// setFlags returns the names of the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	m := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { m[f.Name] = true })
	return m
}
