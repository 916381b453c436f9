package product

import (
	"testing"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/api"
)

// TestPromptRules: prompts must be valid UTF-8 without control characters
// (tab, line feed and carriage return allowed), in both APIs.
func TestPromptRules(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	key := e.OrgKey()
	o := e.newOrg(1000, nil)
	src := dataPNG(t, 64, 48)
	body := func(prompt string) string {
		return `{"generation_type":"image","alpha_mode":"fill","source_uri":"` + src + `","prompt":"` + prompt + `"}`
	}
	pbody := func(key, prompt string) string {
		return `{"model_id":"vfx-2.0","idempotency_key":"` + key + `","inputs":{"source":"` + src + `","alpha_mode":"fill","prompt":"` + prompt + `"}}`
	}
	for _, tc := range []struct {
		name, prompt string
		ok           bool
	}{
		{"plain", "warm light", true}, {"tab newline cr", `a\tb\nc\rd`, true}, {"unicode", "lumière 光", true},
		{"invalid utf-8", "warm \xff light", false}, {"nul", `a\u0000b`, false}, {"escape", `a\u001bb`, false},
		{"del", "a\x7fb", false}, {"c1", `a\u0085b`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Do("POST", "/v1/vfx/generations", key, body(tc.prompt))
			pr := e.Do("POST", "/v1/products/vfx/jobs", o.Key, pbody(tc.name, tc.prompt))
			if tc.ok {
				if r.Status != 201 || pr.Status != 202 {
					t.Fatalf("generation %d %s / product %d %s", r.Status, r.Body, pr.Status, pr.Body)
				}
				return
			}
			if r.Status != 400 || r.Code() != api.CodeInvalidPrompt {
				t.Fatalf("generation: %d %s", r.Status, r.Body)
			}
			wantDetail(t, pr, 422, api.CodeInvalidInput)
		})
	}
}

// TestDuplicateKeysRefused: a repeated JSON key is refused (422), not
// resolved to its last value, in every body.
func TestDuplicateKeysRefused(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	key := e.OrgKey()
	o := e.newOrg(1000, nil)
	src := dataPNG(t, 64, 48)
	r := e.Do("POST", "/v1/vfx/generations", key, `{"generation_type":"image","alpha_mode":"fill","source_uri":"`+src+`","prompt":"a","prompt":"b"}`)
	if r.Status != 422 {
		t.Fatalf("generation: %d %s", r.Status, r.Body)
	}
	pr := e.Do("POST", "/v1/products/vfx/jobs", o.Key, `{"model_id":"vfx-2.0","idempotency_key":"k","inputs":{"source":"`+src+`","alpha_mode":"fill","prompt":"a","prompt":"b"}}`)
	wantDetail(t, pr, 422, api.CodeInvalidInput)
	if r := e.Do("POST", "/v1/uploads", key, `{"filename":"a.png","filename":"b.png"}`); r.Status != 422 {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	if r := e.AdminDo("POST", "/admin/v1/accounts", `{"email":"a@example.com","email":"b@example.com"}`); r.Status != 422 {
		t.Fatalf("admin: %d %s", r.Status, r.Body)
	}
}

// TestOperatorAmountBounds: operator amounts have bounds, each at its edge.
func TestOperatorAmountBounds(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	for _, tc := range []struct {
		body   string
		status int
	}{
		{`{"email":"a@example.com","billing_type":"prepaid","prepaid_balance":1e9}`, 201},
		{`{"email":"b@example.com","billing_type":"prepaid","prepaid_balance":1000000000.01}`, 400},
		{`{"email":"c@example.com","billing_type":"prepaid","prepaid_balance":1e308}`, 400},
		{`{"email":"d@example.com","spending_limit":1e9}`, 201},
		{`{"email":"e@example.com","spending_limit":1e10}`, 400},
	} {
		if r := e.AdminDo("POST", "/admin/v1/accounts", tc.body); r.Status != tc.status {
			t.Fatalf("%s: %d %s", tc.body, r.Status, r.Body)
		}
	}
	a, _ := e.NewAccount(account.KindOrganization, account.AccountInput{})
	if r := e.AdminDo("PATCH", "/admin/v1/accounts/"+a.ID, `{"prepaid_balance":1e308}`); r.Status != 400 || r.Code() != api.CodeInvalidInput {
		t.Fatalf("patch 1e308: %d %s", r.Status, r.Body)
	}
	o := e.newOrg(0, nil)
	if r := e.AdminDo("POST", "/admin/v1/orgs/"+o.ID+"/credits", map[string]any{"amount": account.MaxCreditAmount}); r.Status != 200 {
		t.Fatalf("max amount: %d %s", r.Status, r.Body)
	}
	if r := e.AdminDo("POST", "/admin/v1/orgs/"+o.ID+"/credits", map[string]any{"amount": account.MaxCreditAmount + 1}); r.Status != 400 {
		t.Fatalf("over the max amount: %d %s", r.Status, r.Body)
	}
}
