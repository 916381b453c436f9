package gen

import (
	"bytes"
	"context"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/queue"
)

func TestUploads(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	key := e.OrgKey()
	r := e.Do("POST", "/v1/uploads", key, map[string]any{"filename": "clip.MOV"})
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	id, uri, put := m["id"].(string), m["vfx_uri"].(string), m["upload_url"].(string)
	if !strings.HasPrefix(id, "upload_") || uri != "vfx://uploads/"+id+"/clip.MOV" || !strings.HasPrefix(put, e.URL+"/v1/files/") {
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
		if r := e.Do("POST", "/v1/uploads", key, map[string]any{"filename": name}); r.Status != 400 || r.Code() != api.CodeInvalidFilename {
			t.Fatalf("%q: %d %s", name, r.Status, r.Body)
		}
	}
	for _, ok := range []string{"a.mp4", "a.mov", "a.png", "a.jpg", "a.jpeg", "a.webp", "a.mp3", "a.wav", strings.Repeat("a", 251) + ".png"} {
		if r := e.Do("POST", "/v1/uploads", key, map[string]any{"filename": ok}); r.Status != 200 {
			t.Fatalf("%q: %d %s", ok, r.Status, r.Body)
		}
	}
	for _, b := range []string{`{}`, `{"filename":3}`, `nope`} {
		if r := e.Do("POST", "/v1/uploads", key, b); r.Status != 422 {
			t.Fatalf("%s: %d", b, r.Status)
		}
	}
}

func TestAccountInfoAndBilling(t *testing.T) {
	e := newEnv(t, envOpts{})
	lim, bal := 1234.5, 100.0
	a, key := e.NewAccount(account.KindOrganization, account.AccountInput{SpendingLimit: &lim, PrepaidBalance: &bal, BillingType: "prepaid"})
	info := e.Do("GET", "/v1/account/info", key, nil)
	if info.Status != 200 {
		t.Fatalf("%d %s", info.Status, info.Body)
	}
	m := info.JSON(t)
	rl := m["rate_limits"].(map[string]any)
	if m["email"] != a.Email || m["billing_type"] != "prepaid" || m["spending_limit"].(float64) != 1234.5 ||
		rl["rpm"].(map[string]any)["limit"].(float64) != 5 || rl["concurrency"].(map[string]any)["limit"].(float64) != 10 {
		t.Fatalf("info %v", m)
	}
	b := e.Do("GET", "/v1/account/billing", key, nil).JSON(t)
	if b["prepaid_balance"].(float64) != 100 || b["current_period_usage"].(float64) != 0 ||
		b["billing_period_start"].(float64) <= 0 || b["billing_period_end"].(float64) <= b["billing_period_start"].(float64) {
		t.Fatalf("billing %v", b)
	}
	if _, ok := b["meters"].([]any); !ok {
		t.Fatalf("meters %v", b)
	}

	// A completed job is charged once; a failed one is not.
	src := e.Upload(key, "src.png", apitest.PNGBytes(t, 64, 48, false))
	ok := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(src)).JSON(t)["id"].(string)
	bad := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(src)).JSON(t)["id"].(string)
	if n, _ := e.Acc.InFlight(context.Background(), a.ID); n != 2 {
		t.Fatalf("in flight %d", n)
	}
	e.Finish(ok, true)
	e.Finish(bad, false)
	// The same event again (a redelivery) charges nothing more.
	_ = e.settle(context.Background(), ok)
	_, price := e.Srv.Prices.Estimate("image", 1080, 1)
	apitest.Eventually(t, 10*time.Second, "settled", func() bool {
		n, _ := e.Acc.InFlight(context.Background(), a.ID)
		return n == 0
	})
	time.Sleep(100 * time.Millisecond)
	b = e.Do("GET", "/v1/account/billing", key, nil).JSON(t)
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
	e := newEnv(t, envOpts{NoRun: true})
	for _, h := range []string{"", "Bearer wrong", "admintoken"} {
		r := e.Do("POST", "/admin/v1/accounts", "", map[string]any{"email": "x@example.com"}, "Authorization", h)
		if r.Status != 401 {
			t.Fatalf("%q: %d", h, r.Status)
		}
	}
	r := e.AdminDo("POST", "/admin/v1/accounts", map[string]any{"email": "ops@example.com", "billing_type": "postpaid", "spending_limit": 10})
	if r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	a := r.JSON(t)
	id := a["id"].(string)
	if a["email"] != "ops@example.com" || a["spending_limit"].(float64) != 10 {
		t.Fatalf("%v", a)
	}
	if r := e.AdminDo("POST", "/admin/v1/accounts", map[string]any{"email": "ops@example.com"}); r.Status != 409 {
		t.Fatalf("duplicate: %d %s", r.Status, r.Body)
	}
	if r := e.AdminDo("POST", "/admin/v1/accounts", map[string]any{"email": "not an email"}); r.Status != 400 {
		t.Fatalf("bad email: %d %s", r.Status, r.Body)
	}
	if r := e.AdminDo("POST", "/admin/v1/accounts", map[string]any{"email": "a@b.c", "bogus": 1}); r.Status != 422 {
		t.Fatalf("unknown field: %d %s", r.Status, r.Body)
	}
	p := e.AdminDo("PATCH", "/admin/v1/accounts/"+id, map[string]any{"spending_limit": 20, "prepaid_balance": 5,
		"rate_limits": map[string]any{"rpm": 7, "read_rpm": 8, "billing_rpm": 9, "concurrency": 3}})
	if p.Status != 200 {
		t.Fatalf("patch %d %s", p.Status, p.Body)
	}
	pm := p.JSON(t)
	rl := pm["rate_limits"].(map[string]any)
	if pm["spending_limit"].(float64) != 20 || pm["prepaid_balance"].(float64) != 5 || rl["rpm"].(float64) != 7 || rl["concurrency"].(float64) != 3 {
		t.Fatalf("patched %v", pm)
	}
	if r := e.AdminDo("PATCH", "/admin/v1/accounts/acct_missing", map[string]any{"spending_limit": 1}); r.Status != 404 {
		t.Fatalf("missing: %d %s", r.Status, r.Body)
	}
	k := e.AdminDo("POST", "/admin/v1/accounts/"+id+"/keys", nil)
	if k.Status != 201 {
		t.Fatalf("key %d %s", k.Status, k.Body)
	}
	km := k.JSON(t)
	if km["id"] == "" || !strings.HasPrefix(km["key"].(string), "vfx_sk_") {
		t.Fatalf("%v", km)
	}
	info := e.Do("GET", "/v1/account/info", km["key"].(string), nil)
	if info.Status != 200 || info.JSON(t)["rate_limits"].(map[string]any)["rpm"].(map[string]any)["limit"].(float64) != 7 {
		t.Fatalf("info with new key: %d %s", info.Status, info.Body)
	}
	if r := e.AdminDo("POST", "/admin/v1/accounts/acct_missing/keys", nil); r.Status != 404 {
		t.Fatalf("key for missing account: %d", r.Status)
	}
	if r := e.AdminDo("POST", "/admin/v1/accounts/"+id+"/keys", map[string]any{"kind": "team"}); r.Status != 400 {
		t.Fatalf("bad kind: %d", r.Status)
	}
	s1 := e.AdminDo("GET", "/admin/v1/accounts/"+id+"/webhook-secret", nil).JSON(t)["secret"]
	s2 := e.AdminDo("GET", "/admin/v1/accounts/"+id+"/webhook-secret", nil).JSON(t)["secret"]
	if s1 != s2 || !strings.HasPrefix(s1.(string), "whsec_") {
		t.Fatalf("secret %v %v", s1, s2)
	}
	if r := e.AdminDo("DELETE", "/admin/v1/keys/"+km["id"].(string), nil); r.Status != 204 {
		t.Fatalf("revoke %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/v1/account/info", km["key"].(string), nil); r.Status != 401 {
		t.Fatalf("revoked key: %d", r.Status)
	}
	if r := e.AdminDo("DELETE", "/admin/v1/keys/key_missing", nil); r.Status != 404 {
		t.Fatalf("revoke missing: %d %s", r.Status, r.Body)
	}
}

func TestUnknownRoute(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	r := e.Do("GET", "/v1/nothing", "", nil)
	if r.Status != 404 || r.Code() != api.CodeNotFound {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}

// TestBillingChargesRecordedFrames: a completed video job is charged for
// the frames the worker recorded, not the estimate and not a count read
// back from the render (here a PNG, which would count as one frame).
func TestBillingChargesRecordedFrames(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	ctx := context.Background()
	bal := 100.0
	a, key := e.NewAccount(account.KindOrganization, account.AccountInput{PrepaidBalance: &bal, BillingType: "prepaid"})
	src := e.Upload(key, "src.mp4", apitest.ReadFile(t, apitest.VideoFixture(t, 32, 32, 3).Source))
	r := e.Do("POST", "/v1/vfx/generations", key, apitest.With(apitest.ValidGeneration(src), "generation_type", "video"))
	if r.Status != 200 && r.Status != 201 && r.Status != 202 {
		t.Fatalf("submit: %d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["id"].(string)
	renderKey := "jobs/" + id + "/render.png"
	if _, err := e.St.Put(ctx, renderKey, bytes.NewReader(apitest.PNGBytes(t, 8, 8, false)), -1, "image/png"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Q.Update(ctx, id, func(r *queue.Record) error {
		r.Status = queue.StatusProcessing
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const recorded = 7
	if _, err := e.Q.Update(ctx, id, func(r *queue.Record) error {
		r.Status, r.Outputs, r.Progress, r.Frames = queue.StatusCompleted, map[string]string{"render": renderKey}, 100, recorded
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.settle(ctx, id); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.Acc.InFlight(ctx, a.ID); n != 0 {
		t.Fatalf("in flight %d after settling", n)
	}
	_, want := e.Srv.Prices.Estimate("video", 1080, recorded)
	b := e.Do("GET", "/v1/account/billing", key, nil).JSON(t)
	if got := b["current_period_usage"].(float64); got < want-1e-9 || got > want+1e-9 {
		t.Fatalf("usage %v, want %v for %d frames (%v)", got, want, recorded, b)
	}
}
