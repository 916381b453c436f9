package api

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/queue"
)

func TestUploads(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true})
	key := e.orgKey()
	r := e.do("POST", "/v1/uploads", key, map[string]any{"filename": "clip.MOV"})
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	m := r.json(t)
	id, uri, put := m["id"].(string), m["vfx_uri"].(string), m["upload_url"].(string)
	if !strings.HasPrefix(id, "upload_") || uri != "vfx://uploads/"+id+"/clip.MOV" || !strings.HasPrefix(put, e.url+"/v1/files/") {
		t.Fatalf("%v", m)
	}
	// No header is required on the PUT.
	req, _ := http.NewRequest("PUT", put, bytes.NewReader([]byte("data")))
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("put: %v %v", err, res)
	}
	res.Body.Close()
	for _, name := range []string{"ab", "noext", "a.exe", strings.Repeat("a", 252) + ".png", "../x.png", ".png", "a/b.png"} {
		if r := e.do("POST", "/v1/uploads", key, map[string]any{"filename": name}); r.status != 400 || r.code() != CodeInvalidFilename {
			t.Fatalf("%q: %d %s", name, r.status, r.body)
		}
	}
	for _, ok := range []string{"a.mp4", "a.mov", "a.png", "a.jpg", "a.jpeg", "a.webp", "a.mp3", "a.wav", strings.Repeat("a", 251) + ".png"} {
		if r := e.do("POST", "/v1/uploads", key, map[string]any{"filename": ok}); r.status != 200 {
			t.Fatalf("%q: %d %s", ok, r.status, r.body)
		}
	}
	for _, b := range []string{`{}`, `{"filename":3}`, `nope`} {
		if r := e.do("POST", "/v1/uploads", key, b); r.status != 422 {
			t.Fatalf("%s: %d", b, r.status)
		}
	}
}

func TestAccountInfoAndBilling(t *testing.T) {
	e := newEnv(t, envOpts{})
	lim, bal := 1234.5, 100.0
	a, key := e.newAccount(account.KindOrganization, account.AccountInput{SpendingLimit: &lim, PrepaidBalance: &bal, BillingType: "prepaid"})
	info := e.do("GET", "/v1/account/info", key, nil)
	if info.status != 200 {
		t.Fatalf("%d %s", info.status, info.body)
	}
	m := info.json(t)
	rl := m["rate_limits"].(map[string]any)
	if m["email"] != a.Email || m["billing_type"] != "prepaid" || m["spending_limit"].(float64) != 1234.5 ||
		rl["rpm"].(map[string]any)["limit"].(float64) != 5 || rl["concurrency"].(map[string]any)["limit"].(float64) != 10 {
		t.Fatalf("info %v", m)
	}
	b := e.do("GET", "/v1/account/billing", key, nil).json(t)
	if b["prepaid_balance"].(float64) != 100 || b["current_period_usage"].(float64) != 0 ||
		b["billing_period_start"].(float64) <= 0 || b["billing_period_end"].(float64) <= b["billing_period_start"].(float64) {
		t.Fatalf("billing %v", b)
	}
	if _, ok := b["meters"].([]any); !ok {
		t.Fatalf("meters %v", b)
	}

	// A completed job is charged once; a failed one is not.
	src := e.upload(key, "src.png", pngBytes(t, 64, 48, false))
	ok := e.do("POST", "/v1/vfx/generations", key, validReq(src)).json(t)["id"].(string)
	bad := e.do("POST", "/v1/vfx/generations", key, validReq(src)).json(t)["id"].(string)
	if n, _ := e.acc.InFlight(context.Background(), a.ID); n != 2 {
		t.Fatalf("in flight %d", n)
	}
	e.finish(ok, true)
	e.finish(bad, false)
	// The same event again (a redelivery) charges nothing more.
	_ = e.settle(context.Background(), ok)
	_, price := e.srv.prices.Estimate("image", 1080, 1)
	eventually(t, 10*time.Second, "settled", func() bool {
		n, _ := e.acc.InFlight(context.Background(), a.ID)
		return n == 0
	})
	time.Sleep(100 * time.Millisecond)
	b = e.do("GET", "/v1/account/billing", key, nil).json(t)
	if got := b["current_period_usage"].(float64); got < price-1e-9 || got > price+1e-9 {
		t.Fatalf("usage %v, want %v (%v)", got, price, b)
	}
	if got := b["prepaid_balance"].(float64); got < 100-price-1e-9 || got > 100-price+1e-9 {
		t.Fatalf("balance %v", got)
	}
	found := false
	for _, mt := range b["meters"].([]any) {
		mm := mt.(map[string]any)
		if mm["id"] == "api_image_1080p" {
			found = mm["total_usage"].(float64) == 1 && mm["label"] != "" && mm["unit"] != ""
		}
	}
	if !found {
		t.Fatalf("meters %v", b["meters"])
	}
}

func TestAdminAPI(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true})
	for _, h := range []string{"", "Bearer wrong", "admintoken"} {
		r := e.do("POST", "/admin/v1/accounts", "", map[string]any{"email": "x@example.com"}, "Authorization", h)
		if r.status != 401 {
			t.Fatalf("%q: %d", h, r.status)
		}
	}
	r := e.adminDo("POST", "/admin/v1/accounts", map[string]any{"email": "ops@example.com", "billing_type": "postpaid", "spending_limit": 10})
	if r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	a := r.json(t)
	id := a["id"].(string)
	if a["email"] != "ops@example.com" || a["spending_limit"].(float64) != 10 {
		t.Fatalf("%v", a)
	}
	if r := e.adminDo("POST", "/admin/v1/accounts", map[string]any{"email": "ops@example.com"}); r.status != 409 {
		t.Fatalf("duplicate: %d %s", r.status, r.body)
	}
	if r := e.adminDo("POST", "/admin/v1/accounts", map[string]any{"email": "not an email"}); r.status != 400 {
		t.Fatalf("bad email: %d %s", r.status, r.body)
	}
	if r := e.adminDo("POST", "/admin/v1/accounts", map[string]any{"email": "a@b.c", "bogus": 1}); r.status != 422 {
		t.Fatalf("unknown field: %d %s", r.status, r.body)
	}
	p := e.adminDo("PATCH", "/admin/v1/accounts/"+id, map[string]any{"spending_limit": 20, "prepaid_balance": 5,
		"rate_limits": map[string]any{"rpm": 7, "read_rpm": 8, "billing_rpm": 9, "concurrency": 3}})
	if p.status != 200 {
		t.Fatalf("patch %d %s", p.status, p.body)
	}
	pm := p.json(t)
	rl := pm["rate_limits"].(map[string]any)
	if pm["spending_limit"].(float64) != 20 || pm["prepaid_balance"].(float64) != 5 || rl["rpm"].(float64) != 7 || rl["concurrency"].(float64) != 3 {
		t.Fatalf("patched %v", pm)
	}
	if r := e.adminDo("PATCH", "/admin/v1/accounts/acct_missing", map[string]any{"spending_limit": 1}); r.status != 404 {
		t.Fatalf("missing: %d %s", r.status, r.body)
	}
	k := e.adminDo("POST", "/admin/v1/accounts/"+id+"/keys", nil)
	if k.status != 201 {
		t.Fatalf("key %d %s", k.status, k.body)
	}
	km := k.json(t)
	if km["id"] == "" || !strings.HasPrefix(km["key"].(string), "vfx_sk_") {
		t.Fatalf("%v", km)
	}
	info := e.do("GET", "/v1/account/info", km["key"].(string), nil)
	if info.status != 200 || info.json(t)["rate_limits"].(map[string]any)["rpm"].(map[string]any)["limit"].(float64) != 7 {
		t.Fatalf("info with new key: %d %s", info.status, info.body)
	}
	if r := e.adminDo("POST", "/admin/v1/accounts/acct_missing/keys", nil); r.status != 404 {
		t.Fatalf("key for missing account: %d", r.status)
	}
	if r := e.adminDo("POST", "/admin/v1/accounts/"+id+"/keys", map[string]any{"kind": "team"}); r.status != 400 {
		t.Fatalf("bad kind: %d", r.status)
	}
	s1 := e.adminDo("GET", "/admin/v1/accounts/"+id+"/webhook-secret", nil).json(t)["secret"]
	s2 := e.adminDo("GET", "/admin/v1/accounts/"+id+"/webhook-secret", nil).json(t)["secret"]
	if s1 != s2 || !strings.HasPrefix(s1.(string), "whsec_") {
		t.Fatalf("secret %v %v", s1, s2)
	}
	if r := e.adminDo("DELETE", "/admin/v1/keys/"+km["id"].(string), nil); r.status != 204 {
		t.Fatalf("revoke %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/account/info", km["key"].(string), nil); r.status != 401 {
		t.Fatalf("revoked key: %d", r.status)
	}
	if r := e.adminDo("DELETE", "/admin/v1/keys/key_missing", nil); r.status != 404 {
		t.Fatalf("revoke missing: %d %s", r.status, r.body)
	}
}

func TestUnknownRoute(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true})
	r := e.do("GET", "/v1/nothing", "", nil)
	if r.status != 404 || r.code() != CodeNotFound {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// TestBillingChargesRecordedFrames: a completed video job is charged for
// the frames the worker recorded, not the estimate and not a count read
// back from the render (here a PNG, which would count as one frame).
func TestBillingChargesRecordedFrames(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true})
	ctx := context.Background()
	bal := 100.0
	a, key := e.newAccount(account.KindOrganization, account.AccountInput{PrepaidBalance: &bal, BillingType: "prepaid"})
	src := e.upload(key, "src.mp4", readFile(t, videoFixture(t, 32, 32, 3).Source))
	r := e.do("POST", "/v1/vfx/generations", key, with(validReq(src), "generation_type", "video"))
	if r.status != 200 && r.status != 201 && r.status != 202 {
		t.Fatalf("submit: %d %s", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	renderKey := "jobs/" + id + "/render.png"
	if _, err := e.st.Put(ctx, renderKey, bytes.NewReader(pngBytes(t, 8, 8, false)), -1, "image/png"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.q.Update(ctx, id, func(r *queue.Record) error {
		r.Status = queue.StatusProcessing
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const recorded = 7
	if _, err := e.q.Update(ctx, id, func(r *queue.Record) error {
		r.Status, r.Outputs, r.Progress, r.Frames = queue.StatusCompleted, map[string]string{"render": renderKey}, 100, recorded
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.settle(ctx, id); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.acc.InFlight(ctx, a.ID); n != 0 {
		t.Fatalf("in flight %d after settling", n)
	}
	_, want := e.srv.prices.Estimate("video", 1080, recorded)
	b := e.do("GET", "/v1/account/billing", key, nil).json(t)
	if got := b["current_period_usage"].(float64); got < want-1e-9 || got > want+1e-9 {
		t.Fatalf("usage %v, want %v for %d frames (%v)", got, want, recorded, b)
	}
}
