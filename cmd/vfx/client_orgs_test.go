package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAdminOrgs drives `vfx admin orgs …` against a real `vfx serve`, then
// uses the organisation key it made on the product API over loopback HTTP.
func TestAdminOrgs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, k := range []string{"VFX_API_URL", "VFX_API_KEY", "VFX_ADMIN_TOKEN"} {
		t.Setenv(k, "")
	}
	srv := startServe(t)
	admin := []string{"--server", srv.url, "--admin-token", testAdminToken}
	run := func(args ...string) map[string]any {
		t.Helper()
		code, out, errOut := cli(ctx, append(args, admin...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return jsonOf(t, out)
	}
	org := run("admin", "orgs", "create", "--name", "Acme")["id"].(string)
	if !strings.HasPrefix(org, "org_") {
		t.Fatalf("org id %q", org)
	}
	if c := run("admin", "orgs", "credits", org, "--add", "500"); c["balance"] != 500.0 || c["credited"] != 500.0 {
		t.Fatalf("credits: %v", c)
	}
	if c := run("admin", "orgs", "credits", org); c["balance"] != 500.0 {
		t.Fatalf("credits read: %v", c)
	}
	team := run("admin", "orgs", "team", org, "--name", "Post", "--budget-credits", "100")
	if team["budget_credits"] != 100.0 {
		t.Fatalf("team: %v", team)
	}
	key := run("admin", "orgs", "key", org, "--team", team["id"].(string))
	if key["team_id"] != team["id"] || !strings.HasPrefix(key["key"].(string), "vfx_sk_") {
		t.Fatalf("key: %v", key)
	}
	if o := run("admin", "orgs", "product", org, "vfx", "--enabled=true"); o["products"].(map[string]any)["vfx"] != true {
		t.Fatalf("product: %v", o)
	}
	if o := run("admin", "orgs", "consent", org, "vfx-2.0", "--granted=true"); o["consent"].(map[string]any)["vfx-2.0"] != true {
		t.Fatalf("consent: %v", o)
	}
	if o := run("admin", "orgs", "get", org); o["name"] != "Acme" {
		t.Fatalf("get: %v", o)
	}
	if s := run("admin", "orgs", "webhook-secret", org); !strings.HasPrefix(s["secret"].(string), "whsec_") {
		t.Fatalf("secret: %v", s)
	}
	if code, _, errOut := cli(ctx, append([]string{"admin", "orgs", "product", org}, admin...)...); code != 2 || !strings.Contains(errOut, "ORG_ID PRODUCT") {
		t.Fatalf("missing product: %d %s", code, errOut)
	}
	if code, _, errOut := cli(ctx, append([]string{"admin", "orgs", "consent", "org_nosuch", "vfx-2.0"}, admin...)...); code == 0 || !strings.Contains(errOut, "ORG_NOT_FOUND") {
		t.Fatalf("unknown org: %d %s", code, errOut)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.url+"/v1/products", nil)
	req.Header.Set("x-api-key", key["key"].(string))
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("product API with the new key: %v %v", res, err)
	}
	res.Body.Close()
}
