package api

import (
	"bytes"
	"image"
	"image/jpeg"
	"testing"

	"github.com/vfxrender/vfx/account"
)

// TestPromptRules: prompts must be valid UTF-8 without control characters
// (tab, line feed and carriage return allowed), in both APIs.
func TestPromptRules(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true})
	key := e.orgKey()
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
			r := e.do("POST", "/v1/vfx/generations", key, body(tc.prompt))
			pr := e.do("POST", "/v1/products/vfx/jobs", o.Key, pbody(tc.name, tc.prompt))
			if tc.ok {
				if r.status != 201 || pr.status != 202 {
					t.Fatalf("generation %d %s / product %d %s", r.status, r.body, pr.status, pr.body)
				}
				return
			}
			if r.status != 400 || r.code() != CodeInvalidPrompt {
				t.Fatalf("generation: %d %s", r.status, r.body)
			}
			wantDetail(t, pr, 422, CodeInvalidInput)
		})
	}
}

// TestDuplicateKeysRefused: a repeated JSON key is refused (422), not
// resolved to its last value, in every body.
func TestDuplicateKeysRefused(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true})
	key := e.orgKey()
	o := e.newOrg(1000, nil)
	src := dataPNG(t, 64, 48)
	r := e.do("POST", "/v1/vfx/generations", key, `{"generation_type":"image","alpha_mode":"fill","source_uri":"`+src+`","prompt":"a","prompt":"b"}`)
	if r.status != 422 {
		t.Fatalf("generation: %d %s", r.status, r.body)
	}
	pr := e.do("POST", "/v1/products/vfx/jobs", o.Key, `{"model_id":"vfx-2.0","idempotency_key":"k","inputs":{"source":"`+src+`","alpha_mode":"fill","prompt":"a","prompt":"b"}}`)
	wantDetail(t, pr, 422, CodeInvalidInput)
	if r := e.do("POST", "/v1/uploads", key, `{"filename":"a.png","filename":"b.png"}`); r.status != 422 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	if r := e.adminDo("POST", "/admin/v1/accounts", `{"email":"a@example.com","email":"b@example.com"}`); r.status != 422 {
		t.Fatalf("admin: %d %s", r.status, r.body)
	}
}

// TestOperatorAmountBounds: operator amounts have bounds, each at its edge.
func TestOperatorAmountBounds(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true})
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
		if r := e.adminDo("POST", "/admin/v1/accounts", tc.body); r.status != tc.status {
			t.Fatalf("%s: %d %s", tc.body, r.status, r.body)
		}
	}
	a, _ := e.newAccount(account.KindOrganization, account.AccountInput{})
	if r := e.adminDo("PATCH", "/admin/v1/accounts/"+a.ID, `{"prepaid_balance":1e308}`); r.status != 400 || r.code() != CodeInvalidInput {
		t.Fatalf("patch 1e308: %d %s", r.status, r.body)
	}
	o := e.newOrg(0, nil)
	if r := e.adminDo("POST", "/admin/v1/orgs/"+o.ID+"/credits", map[string]any{"amount": account.MaxCreditAmount}); r.status != 200 {
		t.Fatalf("max amount: %d %s", r.status, r.body)
	}
	if r := e.adminDo("POST", "/admin/v1/orgs/"+o.ID+"/credits", map[string]any{"amount": account.MaxCreditAmount + 1}); r.status != 400 {
		t.Fatalf("over the max amount: %d %s", r.status, r.body)
	}
}

// TestOneSniffingRule: content is judged against the type its name or
// data: header declares, for uploads and data: URIs alike.
func TestOneSniffingRule(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true})
	key := e.orgKey()
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	var jb bytes.Buffer
	if err := jpeg.Encode(&jb, img, nil); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"jpeg upload named .png": e.upload(key, "still.png", jb.Bytes()),
		"jpeg as data:image/png": dataURI("image/png", jb.Bytes()),
	} {
		if r := e.do("POST", "/v1/vfx/generations", key, validReq(src)); r.status != 400 || r.code() != CodeInvalidFileFormat {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	for name, src := range map[string]string{
		"jpeg upload named .jpg":  e.upload(key, "still.jpg", jb.Bytes()),
		"jpeg as data:image/jpeg": dataURI("image/jpeg", jb.Bytes()),
	} {
		if r := e.do("POST", "/v1/vfx/generations", key, validReq(src)); r.status != 201 {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
}
