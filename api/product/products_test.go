package product

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/queue"
)

// testOrg is an organisation set up through the operator API.
type testOrg struct {
	ID, Key, TeamID, TeamKey string
}

// newOrg creates an organisation with credits, both products enabled, the
// model consented, a team (budget nil = none) and two keys: one
// organisation-wide, one bound to the team.
func (e *env) newOrg(credits int64, teamBudget *int64) testOrg {
	e.T.Helper()
	r := e.AdminDo("POST", "/admin/v1/orgs", map[string]any{"name": "Acme"})
	if r.Status != 201 {
		e.T.Fatalf("create org: %d %s", r.Status, r.Body)
	}
	o := testOrg{ID: r.JSON(e.T)["id"].(string)}
	if credits > 0 {
		if r := e.AdminDo("POST", "/admin/v1/orgs/"+o.ID+"/credits", map[string]any{"amount": credits}); r.Status != 200 || r.JSON(e.T)["balance"].(float64) != float64(credits) {
			e.T.Fatalf("credits: %d %s", r.Status, r.Body)
		}
	}
	for _, p := range []string{"vfx", "vfx_finish"} {
		if r := e.AdminDo("PUT", "/admin/v1/orgs/"+o.ID+"/products/"+p, map[string]any{"enabled": true}); r.Status != 200 {
			e.T.Fatalf("enable: %d %s", r.Status, r.Body)
		}
	}
	if r := e.AdminDo("PUT", "/admin/v1/orgs/"+o.ID+"/models/vfx-2.0/consent", map[string]any{"granted": true}); r.Status != 200 {
		e.T.Fatalf("consent: %d %s", r.Status, r.Body)
	}
	r = e.AdminDo("POST", "/admin/v1/orgs/"+o.ID+"/teams", map[string]any{"name": "Post", "budget_credits": teamBudget})
	if r.Status != 201 {
		e.T.Fatalf("team: %d %s", r.Status, r.Body)
	}
	o.TeamID = r.JSON(e.T)["id"].(string)
	r = e.AdminDo("POST", "/admin/v1/orgs/"+o.ID+"/keys", nil)
	if r.Status != 201 {
		e.T.Fatalf("key: %d %s", r.Status, r.Body)
	}
	o.Key = r.JSON(e.T)["key"].(string)
	r = e.AdminDo("POST", "/admin/v1/orgs/"+o.ID+"/keys", map[string]any{"team_id": o.TeamID})
	if r.Status != 201 || r.JSON(e.T)["team_id"] != o.TeamID {
		e.T.Fatalf("team key: %d %s", r.Status, r.Body)
	}
	o.TeamKey = r.JSON(e.T)["key"].(string)
	return o
}

func (e *env) credits(orgID string) account.OrgCredits {
	e.T.Helper()
	r := e.AdminDo("GET", "/admin/v1/orgs/"+orgID+"/credits", nil)
	var c account.OrgCredits
	if r.Status != 200 || json.Unmarshal(r.Body, &c) != nil {
		e.T.Fatalf("credits: %d %s", r.Status, r.Body)
	}
	if c.Credited != c.Balance+c.Reserved+c.Charged {
		e.T.Fatalf("ledger invariant broken: %+v", c)
	}
	return c
}

// detail decodes a product API error body.
func detailOf(t *testing.T, r Resp) api.ErrorDetail {
	t.Helper()
	var d api.ProductDetail
	if err := json.Unmarshal(r.Body, &d); err != nil || d.Detail.ErrorCode == "" {
		t.Fatalf("status %d: not a detail error: %s", r.Status, r.Body)
	}
	if d.Detail.UnknownFields == nil || d.Detail.MissingFields == nil {
		t.Fatalf("detail without field lists: %s", r.Body)
	}
	return d.Detail
}

func wantDetail(t *testing.T, r Resp, status int, code job.Code) api.ErrorDetail {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	d := detailOf(t, r)
	if d.ErrorCode != code {
		t.Fatalf("code %s, want %s: %s", d.ErrorCode, code, r.Body)
	}
	return d
}

func dataPNG(t *testing.T, w, h int) string {
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(apitest.PNGBytes(t, w, h, false))
}

func vfxJob(key, src string) map[string]any {
	return map[string]any{"model_id": "vfx-2.0", "idempotency_key": key,
		"inputs": map[string]any{"source": src, "alpha_mode": "fill", "prompt": "warm sunset light"}}
}

func productJob(t *testing.T, r Resp) ProductJob {
	t.Helper()
	var j ProductJob
	if err := json.Unmarshal(r.Body, &j); err != nil || j.ID == "" {
		t.Fatalf("status %d: not a product job: %s", r.Status, r.Body)
	}
	return j
}

// finishProduct completes (or fails) a product job as a worker would.
func (e *env) finishProduct(id string, ok bool, frames int) {
	e.T.Helper()
	ctx := context.Background()
	outs := map[string]string{}
	if ok {
		for _, n := range []string{"render", "source", "alpha"} {
			key := "product-jobs/" + id + "/" + n + ".png"
			if _, err := e.St.Put(ctx, key, bytes.NewReader(apitest.PNGBytes(e.T, 8, 8, false)), -1, "image/png"); err != nil {
				e.T.Fatal(err)
			}
			outs[n] = key
		}
	}
	if _, err := e.Q.Update(ctx, id, func(r *queue.Record) error { r.Status = queue.StatusProcessing; return nil }); err != nil {
		e.T.Fatal(err)
	}
	rec, err := e.Q.Update(ctx, id, func(r *queue.Record) error {
		if ok {
			r.Status, r.Outputs, r.Progress, r.Frames = queue.StatusCompleted, outs, 100, frames
		} else {
			r.Status, r.ErrorCode, r.Error = queue.StatusFailed, api.CodeInvalidFileFormat, "source: test failure"
		}
		return nil
	})
	if err != nil {
		e.T.Fatal(err)
	}
	if err := e.Q.PublishEvent(ctx, queue.Event{JobID: id, Kind: queue.KindProduct, Status: rec.Status}); err != nil {
		e.T.Fatal(err)
	}
}

func TestProductAuthAndTeams(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	o := e.newOrg(100, nil)
	o2 := e.newOrg(100, nil)
	_, personal := e.NewAccount(account.KindPersonal, account.AccountInput{})
	acctOrgKey := e.OrgKey() // an organization-kind key of an account, not of an organisation

	wantDetail(t, e.Do("GET", "/v1/products", "", nil), 401, api.CodeInvalidAPIKey)
	wantDetail(t, e.Do("GET", "/v1/products", "vfx_sk_"+string(bytes.Repeat([]byte("a"), 32)), nil), 401, api.CodeInvalidAPIKey)
	for _, k := range []string{personal, acctOrgKey} {
		wantDetail(t, e.Do("GET", "/v1/products", k, nil), 403, api.CodeOrgKeyRequired)
		wantDetail(t, e.Do("POST", "/v1/products/vfx/jobs", k, vfxJob("a", dataPNG(t, 64, 64))), 403, api.CodeOrgKeyRequired)
		wantDetail(t, e.Do("GET", "/v1/product-jobs/dap_x", k, nil), 403, api.CodeOrgKeyRequired)
	}
	if r := e.Do("GET", "/v1/products", o.Key, nil); r.Status != 200 {
		t.Fatalf("org key: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/v1/products", o.Key, nil, api.HeaderTeamID, o.TeamID); r.Status != 200 {
		t.Fatalf("org key in its team: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/v1/products", o.TeamKey, nil, api.HeaderTeamID, o.TeamID); r.Status != 200 {
		t.Fatalf("team key with its team: %d %s", r.Status, r.Body)
	}
	wantDetail(t, e.Do("GET", "/v1/products", o.Key, nil, api.HeaderTeamID, o2.TeamID), 403, api.CodeTeamForbidden)
	wantDetail(t, e.Do("GET", "/v1/products", o.Key, nil, api.HeaderTeamID, "team_nosuch"), 403, api.CodeTeamForbidden)
	wantDetail(t, e.Do("GET", "/v1/products", o.TeamKey, nil, api.HeaderTeamID, o2.TeamID), 403, api.CodeTeamForbidden)

	// Organisation keys are for the product API; uploads serve both.
	if r := e.Do("GET", "/v1/vfx/generations", o.Key, nil); r.Status != 403 || r.Code() != api.CodeAccountKeyRequired {
		t.Fatalf("org key on the generation API: %d %s", r.Status, r.Body)
	}
	if r := e.Do("POST", "/v1/uploads", o.Key, map[string]any{"filename": "a.png"}); r.Status != 200 {
		t.Fatalf("org key upload: %d %s", r.Status, r.Body)
	}
	// No personal limits on organisation keys: more reads than a personal
	// key's 5 per minute.
	for i := range 12 {
		if r := e.Do("GET", "/v1/product-jobs/dap_nosuch", o.Key, nil); r.Status != 404 {
			t.Fatalf("read %d: %d %s", i, r.Status, r.Body)
		}
	}
}

func TestProductCatalogueAndAccess(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	o := e.newOrg(1000, nil)
	r := e.Do("GET", "/v1/products", o.Key, nil)
	var list struct {
		Products []struct {
			Product string
			Models  []string
		}
	}
	if err := json.Unmarshal(r.Body, &list); err != nil || len(list.Products) != 2 ||
		list.Products[0].Product != "vfx" || list.Products[1].Product != "vfx_finish" || !slices.Equal(list.Products[1].Models, []string{"vfx-2.0"}) {
		t.Fatalf("products: %s", r.Body)
	}
	for _, p := range []string{"vfx", "vfx_finish"} {
		r := e.Do("GET", "/v1/products/"+p+"/models", o.Key, nil)
		var ms struct {
			Models []struct {
				ModelID     string         `json:"model_id"`
				InputSchema map[string]any `json:"input_schema"`
				Pricing     map[string]any
			} `json:"models"`
		}
		if err := json.Unmarshal(r.Body, &ms); err != nil || len(ms.Models) != 1 || ms.Models[0].ModelID != "vfx-2.0" {
			t.Fatalf("models of %s: %s", p, r.Body)
		}
		s := ms.Models[0].InputSchema
		if s["$schema"] != "https://json-schema.org/draft/2020-12/schema" || s["additionalProperties"] != false || ms.Models[0].Pricing["unit"] != "credits" {
			t.Fatalf("schema of %s: %v", p, s)
		}
	}
	wantDetail(t, e.Do("GET", "/v1/products/nosuch/models", o.Key, nil), 404, api.CodeProductNotFound)
	wantDetail(t, e.Do("POST", "/v1/products/nosuch/jobs", o.Key, vfxJob("k", "x")), 404, api.CodeProductNotFound)
	job := vfxJob("k", dataPNG(t, 64, 64))
	job["model_id"] = "vfx-9"
	wantDetail(t, e.Do("POST", "/v1/products/vfx/jobs", o.Key, job), 404, api.CodeModelNotFound)

	// Enablement and consent.
	e.AdminDo("PUT", "/admin/v1/orgs/"+o.ID+"/products/vfx", map[string]any{"enabled": false})
	wantDetail(t, e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("k1", dataPNG(t, 64, 64))), 403, api.CodeProductNotEnabled)
	wantDetail(t, e.Do("POST", "/v1/products/vfx/estimate", o.Key, map[string]any{"model_id": "vfx-2.0", "inputs": map[string]any{}}), 403, api.CodeProductNotEnabled)
	e.AdminDo("PUT", "/admin/v1/orgs/"+o.ID+"/products/vfx", map[string]any{"enabled": true})
	e.AdminDo("PUT", "/admin/v1/orgs/"+o.ID+"/models/vfx-2.0/consent", map[string]any{"granted": false})
	wantDetail(t, e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("k2", dataPNG(t, 64, 64))), 403, api.CodeModelConsentRequired)
	if c := e.credits(o.ID); c.Reserved != 0 || c.Balance != 1000 {
		t.Fatalf("refusals reserved credits: %+v", c)
	}
	// Operator API errors.
	if r := e.AdminDo("PUT", "/admin/v1/orgs/"+o.ID+"/products/nosuch", map[string]any{"enabled": true}); r.Status != 404 || r.Code() != api.CodeProductNotFound {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r := e.AdminDo("PUT", "/admin/v1/orgs/org_nosuch/models/vfx-2.0/consent", map[string]any{"granted": true}); r.Status != 404 || r.Code() != api.CodeOrgNotFound {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r := e.AdminDo("POST", "/admin/v1/orgs/"+o.ID+"/credits", map[string]any{"amount": -5}); r.Status != 400 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r := e.Do("POST", "/admin/v1/orgs", "", map[string]any{"name": "x"}); r.Status != 401 {
		t.Fatalf("no operator token: %d", r.Status)
	}
}

func TestProductValidation(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	o := e.newOrg(1000, nil)
	post := func(body any) Resp { return e.Do("POST", "/v1/products/vfx/jobs", o.Key, body) }
	src := dataPNG(t, 64, 64)

	j := vfxJob("k", src)
	j["priority"], j["webhook"] = 1, "x"
	d := wantDetail(t, post(j), 422, api.CodeInvalidInput)
	if !slices.Equal(d.UnknownFields, []string{"priority", "webhook"}) {
		t.Fatalf("unknown top-level fields: %+v", d)
	}
	d = wantDetail(t, post(map[string]any{"inputs": map[string]any{}}), 422, api.CodeInvalidInput)
	if !slices.Equal(d.MissingFields, []string{"model_id", "idempotency_key"}) {
		t.Fatalf("missing top-level fields: %+v", d)
	}
	j = vfxJob("k", src)
	j["billing_unit"] = "usd"
	wantDetail(t, post(j), 400, api.CodeUnsupportedBillingUnit)
	j["billing_unit"] = "credits"
	if r := post(j); r.Status != 202 {
		t.Fatalf("billing_unit credits: %d %s", r.Status, r.Body)
	}
	for _, bad := range []map[string]any{
		{"max_credits": -1}, {"max_credits": 1.5}, {"model_id": ""}, {"idempotency_key": string(bytes.Repeat([]byte("k"), 257))},
		{"inputs": []any{1}}, {"billing_unit": "eur"},
	} {
		j := vfxJob("k-bad", src)
		for k, v := range bad {
			j[k] = v
		}
		wantDetail(t, post(j), 422, api.CodeInvalidInput)
	}
	j = vfxJob("k3", src)
	j["callback_url"] = "ftp://example.com/x"
	wantDetail(t, post(j), 400, api.CodeInvalidCallbackURL)

	// inputs against the model's input_schema.
	j = vfxJob("k4", src)
	j["inputs"] = map[string]any{"alpha_mode": "fill", "prompt": "x", "colour": "red", "strength": 2}
	d = wantDetail(t, post(j), 422, api.CodeInvalidInput)
	if !slices.Equal(d.UnknownFields, []string{"colour", "strength"}) || !slices.Equal(d.MissingFields, []string{"source"}) {
		t.Fatalf("inputs: %+v", d)
	}
	j["inputs"] = map[string]any{"source": src, "alpha_mode": "custom", "prompt": "x"}
	if d = wantDetail(t, post(j), 422, api.CodeInvalidInput); !slices.Equal(d.MissingFields, []string{"alpha"}) {
		t.Fatalf("custom without alpha: %+v", d)
	}
	j["inputs"] = map[string]any{"source": src, "alpha_mode": "fill"}
	if d = wantDetail(t, post(j), 422, api.CodeInvalidInput); !slices.Contains(d.MissingFields, "prompt") {
		t.Fatalf("no style input: %+v", d)
	}
	// An empty prompt passes the schema; job.Validate answers it at
	// submission (the worker would otherwise fail the job).
	j["inputs"] = map[string]any{"source": src, "alpha_mode": "fill", "prompt": ""}
	if d = wantDetail(t, post(j), 422, api.CodeInvalidInput); !bytes.Contains([]byte(d.Message), []byte("prompt or reference image")) {
		t.Fatalf("empty prompt: %+v", d)
	}
	j["inputs"] = map[string]any{"source": src, "alpha_mode": "fill", "prompt": "x", "max_resolution": 4000, "mode": "turbo"}
	if d = wantDetail(t, post(j), 422, api.CodeInvalidInput); len(d.UnknownFields)+len(d.MissingFields) != 0 || !bytes.Contains([]byte(d.Message), []byte("max_resolution")) {
		t.Fatalf("bad values: %+v", d)
	}
	fj := map[string]any{"model_id": "vfx-2.0", "idempotency_key": "f", "inputs": map[string]any{"parent_job_id": "dap_x", "target_resolution": 4320}}
	wantDetail(t, e.Do("POST", "/v1/products/vfx_finish/jobs", o.Key, fj), 422, api.CodeInvalidInput)
	// Content checks at submission (the source is at hand).
	j["inputs"] = map[string]any{"source": "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("not a png")), "alpha_mode": "fill", "prompt": "x"}
	wantDetail(t, post(j), 400, api.CodeInvalidFileFormat)
	if r := e.Do("POST", "/v1/products/vfx/jobs", o.Key, "{not json"); r.Status != 422 || detailOf(t, r).ErrorCode != api.CodeInvalidInput {
		t.Fatalf("malformed JSON: %d %s", r.Status, r.Body)
	}
}

func TestProductEstimateAndCredits(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	budget := int64(20)
	o := e.newOrg(100, &budget)
	src := dataPNG(t, 64, 64)
	est := func(inputs map[string]any) map[string]any {
		r := e.Do("POST", "/v1/products/vfx/estimate", o.Key, map[string]any{"model_id": "vfx-2.0", "inputs": inputs})
		if r.Status != 200 {
			t.Fatalf("estimate: %d %s", r.Status, r.Body)
		}
		return r.JSON(t)
	}
	if m := est(map[string]any{"source": src, "alpha_mode": "fill", "prompt": "x"}); m["credits"] != 16.0 || m["exact"] != true {
		t.Fatalf("image 1080 standard: %v", m)
	}
	if m := est(map[string]any{"source": src, "alpha_mode": "fill", "prompt": "x", "mode": "fast", "max_resolution": 720}); m["credits"] != 4.0 {
		t.Fatalf("image 720 fast: %v", m)
	}
	if m := est(map[string]any{"source": "https://127.0.0.1:9/v.mp4", "alpha_mode": "fill", "prompt": "x"}); m["credits"] != 480.0 || m["exact"] != false {
		t.Fatalf("source not at hand: %v", m)
	}
	if r := e.Do("POST", "/v1/products/vfx/estimate", o.Key, map[string]any{"model_id": "vfx-2.0", "idempotency_key": "x", "inputs": map[string]any{}}); r.Status != 422 {
		t.Fatalf("estimate takes no idempotency_key: %d", r.Status)
	}
	if c := e.credits(o.ID); c.Balance != 100 || c.Reserved != 0 {
		t.Fatalf("an estimate charged: %+v", c)
	}

	r := e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("a", src))
	if r.Status != 202 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	j := productJob(t, r)
	if j.Status != ProductQueued || j.Product != "vfx" || j.ModelID != "vfx-2.0" || j.OrganizationID != o.ID || j.TeamID != nil ||
		j.BillingUnit != "credits" || j.CreditsCharged != nil || j.Refunded != nil || j.Error != nil || len(j.ID) < 10 || j.ID[:4] != "dap_" {
		t.Fatalf("job: %s", r.Body)
	}
	if c := e.credits(o.ID); c.Balance != 84 || c.Reserved != 16 {
		t.Fatalf("after submit: %+v", c)
	}
	// max_credits below an exact price: refused, nothing reserved.
	jm := vfxJob("b", src)
	jm["max_credits"] = 15
	wantDetail(t, e.Do("POST", "/v1/products/vfx/jobs", o.Key, jm), 402, api.CodeBudgetExceeded)
	// Team budget 20: one 16-credit job fits, the second does not.
	if r := e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("t1", src), api.HeaderTeamID, o.TeamID); r.Status != 202 || *productJob(t, r).TeamID != o.TeamID {
		t.Fatalf("team job: %d %s", r.Status, r.Body)
	}
	d := wantDetail(t, e.Do("POST", "/v1/products/vfx/jobs", o.TeamKey, vfxJob("t2", src)), 402, api.CodeBudgetExceeded)
	if !bytes.Contains([]byte(d.Message), []byte("team")) {
		t.Fatalf("team budget message: %s", d.Message)
	}
	// Balance: 68 left; a 240-frame upper bound (480) does not fit.
	wantDetail(t, e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("big", "https://127.0.0.1:9/v.mp4")), 402, api.CodeBudgetExceeded)
	if c := e.credits(o.ID); c.Balance != 68 || c.Reserved != 32 {
		t.Fatalf("refusals changed the ledger: %+v", c)
	}
}

func TestProductIdempotency(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	o := e.newOrg(10000, nil)
	src := dataPNG(t, 64, 64)
	r1 := e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("same", src))
	r2 := e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("same", src))
	if r1.Status != 202 || r2.Status != 202 || productJob(t, r1).ID != productJob(t, r2).ID {
		t.Fatalf("same key and body: %d %s / %d %s", r1.Status, r1.Body, r2.Status, r2.Body)
	}
	// Field order and billing_unit "credits" (the default) do not change the body.
	same := `{"inputs":{"prompt":"warm sunset light","alpha_mode":"fill","source":"` + src + `"},"billing_unit":"credits","idempotency_key":"same","model_id":"vfx-2.0"}`
	if r := e.Do("POST", "/v1/products/vfx/jobs", o.Key, same); r.Status != 202 || productJob(t, r).ID != productJob(t, r1).ID {
		t.Fatalf("reordered body: %d %s", r.Status, r.Body)
	}
	changed := vfxJob("same", src)
	changed["inputs"].(map[string]any)["prompt"] = "cold"
	wantDetail(t, e.Do("POST", "/v1/products/vfx/jobs", o.Key, changed), 409, api.CodeIdempotencyConflict)
	changed = vfxJob("same", src)
	changed["max_credits"] = 500
	wantDetail(t, e.Do("POST", "/v1/products/vfx/jobs", o.Key, changed), 409, api.CodeIdempotencyConflict)
	// Keys are scoped to the organisation and team.
	if r := e.Do("POST", "/v1/products/vfx/jobs", o.TeamKey, vfxJob("same", src)); r.Status != 202 || productJob(t, r).ID == productJob(t, r1).ID {
		t.Fatalf("another team's key: %d %s", r.Status, r.Body)
	}
	before := e.credits(o.ID)

	// Concurrent duplicates make one job and one reservation.
	const n = 8
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("race", src))
			if r.Status == 202 {
				ids[i] = productJob(t, r).ID
			} else {
				t.Errorf("concurrent %d: %d %s", i, r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent duplicates made several jobs: %v", ids)
		}
	}
	if c := e.credits(o.ID); c.Reserved-before.Reserved != 16 {
		t.Fatalf("concurrent duplicates reserved %d credits, want 16", c.Reserved-before.Reserved)
	}
}

func TestProductLifecycle(t *testing.T) {
	e := newEnv(t, envOpts{})
	o := e.newOrg(1000, nil)
	src := dataPNG(t, 64, 64)
	submit := func(key string, body map[string]any) ProductJob {
		t.Helper()
		r := e.Do("POST", "/v1/products/vfx/jobs", key, body)
		if r.Status != 202 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		return productJob(t, r)
	}
	get := func(id string) ProductJob {
		t.Helper()
		r := e.Do("GET", "/v1/product-jobs/"+id, o.Key, nil)
		if r.Status != 200 {
			t.Fatalf("get %s: %d %s", id, r.Status, r.Body)
		}
		return productJob(t, r)
	}

	ok := submit(o.Key, vfxJob("ok", src))
	e.finishProduct(ok.ID, true, 1)
	j := get(ok.ID)
	if j.Status != ProductSuccess || *j.CreditsCharged != 16 || *j.Refunded || j.Error != nil || *j.Progress != 100 ||
		j.Outputs["render"] == "" || j.Outputs["source"] == "" || j.Outputs["alpha"] == "" {
		t.Fatalf("success: %+v", j)
	}
	if res, err := http.Get(j.Outputs["render"]); err != nil || res.StatusCode != 200 {
		t.Fatalf("render URL: %v %v", res, err)
	}

	bad := submit(o.Key, vfxJob("bad", src))
	e.finishProduct(bad.ID, false, 0)
	j = get(bad.ID)
	if j.Status != ProductFailed || *j.CreditsCharged != 0 || !*j.Refunded || j.Error == nil || j.Error.Code != api.CodeInvalidFileFormat || j.Outputs != nil {
		t.Fatalf("failed: %+v", j)
	}

	queued := submit(o.Key, vfxJob("cancel", src))
	r := e.Do("POST", "/v1/product-jobs/"+queued.ID+"/cancel", o.Key, nil)
	j = productJob(t, r)
	if r.Status != 200 || j.Status != ProductCancelled || !*j.Refunded || *j.CreditsCharged != 0 || j.Error.Code != "CANCELLED" {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	if r := e.Do("POST", "/v1/product-jobs/"+ok.ID+"/cancel", o.Key, nil); productJob(t, r).Status != ProductSuccess {
		t.Fatalf("cancel of a finished job changed it: %s", r.Body)
	}
	wantDetail(t, e.Do("POST", "/v1/product-jobs/dap_nosuch/cancel", o.Key, nil), 404, api.CodeJobNotFound)

	// credit_required: the source is not at hand, max_credits caps the
	// reservation at 10, and the render has 30 frames (60 credits).
	capped := vfxJob("capped", "https://127.0.0.1:9/v.mp4")
	capped["max_credits"] = 10
	cj := submit(o.Key, capped)
	if c := e.credits(o.ID); c.Reserved != 10 {
		t.Fatalf("capped reservation: %+v", c)
	}
	e.finishProduct(cj.ID, true, 30)
	j = get(cj.ID)
	if j.Status != ProductCreditRequired || *j.CreditsCharged != 0 || !*j.Refunded || j.Outputs != nil || j.Error == nil {
		t.Fatalf("credit_required: %+v", j)
	}

	// Reads: another organisation or team sees nothing; a disabled product's
	// jobs stay readable.
	o2 := e.newOrg(10, nil)
	wantDetail(t, e.Do("GET", "/v1/product-jobs/"+ok.ID, o2.Key, nil), 404, api.CodeJobNotFound)
	wantDetail(t, e.Do("GET", "/v1/product-jobs/"+ok.ID, o.TeamKey, nil), 404, api.CodeJobNotFound)
	wantDetail(t, e.Do("GET", "/v1/product-jobs/vfx_abc", o.Key, nil), 404, api.CodeJobNotFound)
	e.AdminDo("PUT", "/admin/v1/orgs/"+o.ID+"/products/vfx", map[string]any{"enabled": false})
	if j := get(ok.ID); j.Status != ProductSuccess {
		t.Fatalf("after disabling: %+v", j)
	}
	c := e.credits(o.ID)
	if c.Charged != 16 || c.Reserved != 0 || c.Balance != 1000-16 {
		t.Fatalf("ledger: %+v", c)
	}
	// The billing consumer settles without any read.
	e.AdminDo("PUT", "/admin/v1/orgs/"+o.ID+"/products/vfx", map[string]any{"enabled": true})
	silent := submit(o.Key, vfxJob("silent", src))
	e.finishProduct(silent.ID, true, 1)
	apitest.Eventually(t, 10*time.Second, "billing consumer settles", func() bool { return e.credits(o.ID).Charged == 32 })
}

func TestProductWebhook(t *testing.T) {
	type hit struct {
		body   []byte
		header http.Header
	}
	hits := make(chan hit, 10)
	var fail sync.Map
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hits <- hit{b, r.Header.Clone()}
		if _, bad := fail.LoadAndDelete("once"); bad {
			w.WriteHeader(500)
			return
		}
		w.WriteHeader(204)
	}))
	defer hook.Close()
	e := newEnv(t, envOpts{})
	o := e.newOrg(1000, nil)
	j := vfxJob("hook", dataPNG(t, 64, 64))
	j["callback_url"] = hook.URL + "/cb"
	r := e.Do("POST", "/v1/products/vfx/jobs", o.Key, j)
	id := productJob(t, r).ID
	fail.Store("once", true)
	e.finishProduct(id, true, 1)
	secret := e.AdminDo("GET", "/admin/v1/orgs/"+o.ID+"/webhook-secret", nil).JSON(t)["secret"].(string)
	for attempt := 1; attempt <= 2; attempt++ {
		var h hit
		select {
		case h = <-hits:
		case <-time.After(15 * time.Second):
			t.Fatalf("no webhook attempt %d", attempt)
		}
		var body ProductJob
		if err := json.Unmarshal(h.body, &body); err != nil || body.ID != id || body.Status != ProductSuccess || body.Outputs["render"] == "" || *body.CreditsCharged != 16 {
			t.Fatalf("webhook body: %s", h.body)
		}
		ts, _ := strconv.ParseInt(h.header.Get(dispatch.HeaderWebhookTimestamp), 10, 64)
		if h.header.Get(dispatch.HeaderWebhookID) != id+"_success" || h.header.Get(dispatch.HeaderWebhookSignature) != dispatch.SignWebhook(secret, h.header.Get(dispatch.HeaderWebhookID), ts, h.body) {
			t.Fatalf("attempt %d headers: %v", attempt, h.header)
		}
	}
	apitest.Eventually(t, 10*time.Second, "delivered state", func() bool {
		m, err := e.prod.getProductMeta(context.Background(), id)
		return err == nil && m.Webhook.Status == dispatch.Delivered && m.Webhook.Attempts == 2
	})
}

func TestFinishParents(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	o := e.newOrg(10000, nil)
	o2 := e.newOrg(10000, nil)
	src := dataPNG(t, 64, 64)
	submit := func(key, product string, body map[string]any) Resp {
		return e.Do("POST", "/v1/products/"+product+"/jobs", key, body)
	}
	finishBody := func(idem, parent string, target int) map[string]any {
		return map[string]any{"model_id": "vfx-2.0", "idempotency_key": idem, "inputs": map[string]any{"parent_job_id": parent, "target_resolution": target}}
	}
	std := productJob(t, submit(o.Key, "vfx", vfxJob("std", src)))
	fastBody := vfxJob("fast", src)
	fastBody["inputs"].(map[string]any)["mode"] = "fast"
	fast := productJob(t, submit(o.Key, "vfx", fastBody))
	teamJob := productJob(t, submit(o.TeamKey, "vfx", vfxJob("team", src)))

	wantDetail(t, submit(o.Key, "vfx_finish", finishBody("f0", std.ID, 2160)), 409, api.CodeParentNotSuccessful)
	e.finishProduct(std.ID, true, 12)
	e.finishProduct(fast.ID, true, 12)
	e.finishProduct(teamJob.ID, true, 12)

	gen := e.newAccountJob(t)
	wantDetail(t, submit(o.Key, "vfx_finish", finishBody("f1", gen, 2160)), 422, api.CodeParentNotProductJob)
	wantDetail(t, submit(o.Key, "vfx_finish", finishBody("f2", fast.ID, 2160)), 422, api.CodeParentFastMode)
	wantDetail(t, submit(o2.Key, "vfx_finish", finishBody("f3", std.ID, 2160)), 404, api.CodeParentNotFound)
	wantDetail(t, submit(o.Key, "vfx_finish", finishBody("f4", "dap_nosuch", 2160)), 404, api.CodeParentNotFound)
	wantDetail(t, submit(o.Key, "vfx_finish", finishBody("f5", teamJob.ID, 2160)), 403, api.CodeParentNotOwned)
	wantDetail(t, submit(o.TeamKey, "vfx_finish", finishBody("f6", std.ID, 2160)), 403, api.CodeParentNotOwned)

	r := e.Do("POST", "/v1/products/vfx_finish/estimate", o.Key, map[string]any{"model_id": "vfx-2.0", "inputs": map[string]any{"parent_job_id": std.ID, "target_resolution": 2160}})
	if r.Status != 200 || r.JSON(t)["credits"] != float64(ImageCreditUnits*3) {
		t.Fatalf("finish estimate: %d %s", r.Status, r.Body)
	}
	r = submit(o.Key, "vfx_finish", finishBody("f7", std.ID, 2160))
	if r.Status != 202 {
		t.Fatalf("finish: %d %s", r.Status, r.Body)
	}
	child := productJob(t, r)
	if child.Product != "vfx_finish" || child.Status != ProductQueued {
		t.Fatalf("child: %s", r.Body)
	}
	e.finishProduct(child.ID, true, 1)
	wantDetail(t, submit(o.Key, "vfx_finish", finishBody("f8", child.ID, 1080)), 422, api.CodeParentIsFinish)
	j := productJob(t, e.Do("GET", "/v1/product-jobs/"+child.ID, o.Key, nil))
	if j.Status != ProductSuccess || len(j.Outputs) != 1 || j.Outputs["render"] == "" {
		t.Fatalf("finish outputs: %+v", j)
	}
}

// newAccountJob submits a generation job with a personal key and returns
// its id.
func (e *env) newAccountJob(t *testing.T) string {
	t.Helper()
	_, key := e.NewAccount(account.KindPersonal, account.AccountInput{})
	r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(dataPNG(t, 64, 64)))
	if r.Status != 201 {
		t.Fatalf("generation: %d %s", r.Status, r.Body)
	}
	return fmt.Sprint(r.JSON(t)["id"])
}
