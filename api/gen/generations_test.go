package gen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/job"
)

func TestAuth(t *testing.T) {
	e := newEnv(t, envOpts{})
	a, key := e.NewAccount(account.KindOrganization, account.AccountInput{})
	for _, tc := range []struct{ name, key string }{{"missing", ""}, {"unknown", "vfx_sk_nope"}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range []string{"/v1/vfx/generations", "/v1/account/info", "/v1/account/billing", "/v1/vfx/generations/vfx_x"} {
				r := e.Do("GET", p, tc.key, nil)
				if r.Status != 401 || r.Code() != api.CodeInvalidAPIKey {
					t.Fatalf("%s: %d %s", p, r.Status, r.Body)
				}
			}
			r := e.Do("POST", "/v1/uploads", tc.key, map[string]any{"filename": "a.png"})
			if r.Status != 401 || r.Code() != api.CodeInvalidAPIKey {
				t.Fatalf("uploads: %d %s", r.Status, r.Body)
			}
		})
	}
	t.Run("revoked", func(t *testing.T) {
		r := e.AdminDo("POST", "/admin/v1/accounts/"+a.ID+"/keys", map[string]any{"kind": "organization"})
		if r.Status != 201 {
			t.Fatalf("create key: %d %s", r.Status, r.Body)
		}
		m := r.JSON(t)
		k2 := m["key"].(string)
		if r := e.Do("GET", "/v1/account/info", k2, nil); r.Status != 200 {
			t.Fatalf("new key: %d %s", r.Status, r.Body)
		}
		if r := e.AdminDo("DELETE", "/admin/v1/keys/"+m["id"].(string), nil); r.Status != 204 {
			t.Fatalf("revoke: %d %s", r.Status, r.Body)
		}
		if r := e.Do("GET", "/v1/account/info", k2, nil); r.Status != 401 || r.Code() != api.CodeInvalidAPIKey {
			t.Fatalf("revoked key: %d %s", r.Status, r.Body)
		}
		if r := e.Do("GET", "/v1/account/info", key, nil); r.Status != 200 {
			t.Fatalf("other key still works: %d %s", r.Status, r.Body)
		}
	})
}

func TestValidationRules(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	key := e.OrgKey()
	src := e.Upload(key, "src.png", apitest.PNGBytes(t, 64, 48, false))
	base := apitest.ValidGeneration(src)
	long := strings.Repeat("é", 2001)
	cases := []struct {
		name string
		body map[string]any
		code job.Code
	}{
		{"no generation_type", apitest.With(base, "generation_type", nil), api.CodeInvalidGenerationType},
		{"bad generation_type", apitest.With(base, "generation_type", "gif"), api.CodeInvalidGenerationType},
		{"no alpha_mode", apitest.With(base, "alpha_mode", nil), api.CodeInvalidAlphaMode},
		{"bad alpha_mode", apitest.With(base, "alpha_mode", "magic"), api.CodeInvalidAlphaMode},
		{"max_resolution", apitest.With(base, "max_resolution", 480), api.CodeInvalidMaxResolution},
		{"no style", apitest.With(base, "prompt", nil), api.CodeMissingStyleInput},
		{"empty prompt", apitest.With(base, "prompt", ""), api.CodeMissingStyleInput},
		{"no source", apitest.With(base, "source_uri", nil), api.CodeMissingSource},
		{"custom without alpha", apitest.With(base, "alpha_mode", "custom"), api.CodeMissingAlpha},
		{"prompt too long", apitest.With(base, "prompt", long), api.CodePromptTooLong},
		{"seed negative", apitest.With(base, "seed", -1), api.CodeInvalidSeed},
		{"seed too big", apitest.With(base, "seed", 4294967296), api.CodeInvalidSeed},
		{"seed huge", apitest.With(base, "seed", 1e30), api.CodeInvalidSeed},
		{"keyframe negative", apitest.With(base, "alpha_keyframe_index", -1), api.CodeInvalidKeyframeIndex},
		{"idempotency empty", apitest.With(base, "idempotency_key", ""), api.CodeInvalidIdempotencyKey},
		{"idempotency long", apitest.With(base, "idempotency_key", strings.Repeat("k", 257)), api.CodeInvalidIdempotencyKey},
		{"uri scheme", apitest.With(base, "source_uri", "ftp://x/y.png"), api.CodeInvalidURI},
		{"uri http", apitest.With(base, "source_uri", "http://example.com/a.png"), api.CodeInvalidURI},
		{"uri upload id", apitest.With(base, "source_uri", "vfx://uploads/bad/a.png"), api.CodeInvalidURI},
		{"reference uri", apitest.With(base, "reference_image_uri", "nope"), api.CodeInvalidURI},
		{"data mime", apitest.With(base, "source_uri", "data:text/plain;base64,aGk="), api.CodeInvalidURI},
		{"callback ftp", apitest.With(base, "callback_url", "ftp://example.com/hook"), api.CodeInvalidCallbackURL},
		{"callback relative", apitest.With(base, "callback_url", "/hook"), api.CodeInvalidCallbackURL},
		{"callback too long", apitest.With(base, "callback_url", "https://example.com/"+strings.Repeat("a", 2048)), api.CodeInvalidCallbackURL},
		{"missing upload", apitest.With(base, "source_uri", "vfx://uploads/upload_AAAAAAAAAAAAAAAAAAAAAAAA/x.png"), api.CodeSourceUnreachable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Do("POST", "/v1/vfx/generations", key, tc.body)
			if r.Status != 400 || r.Code() != tc.code {
				t.Fatalf("want 400 %s, got %d %s", tc.code, r.Status, trunc.String(string(r.Body), 300))
			}
			if tc.name == "select empty keyframe" && !strings.Contains(string(r.Body), "selects nothing") {
				t.Fatalf("message does not say the keyframe is empty: %s", r.Body)
			}
		})
	}
	// A number beyond int64 is quoted as sent, not as the saturated value.
	for _, c := range []struct {
		field, text string
		code        job.Code
	}{
		{"seed", "1e100", api.CodeInvalidSeed}, {"seed", "-1E+100", api.CodeInvalidSeed},
		{"alpha_keyframe_index", "1e100", api.CodeInvalidKeyframeIndex}, {"max_resolution", "1e100", api.CodeInvalidMaxResolution},
	} {
		body, _ := json.Marshal(apitest.With(base, c.field, nil))
		raw := strings.Replace(string(body), "{", `{"`+c.field+`":`+c.text+",", 1)
		r := e.Do("POST", "/v1/vfx/generations", key, raw)
		var m struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(r.Body, &m)
		if r.Status != 400 || m.Error.Code != string(c.code) || !strings.HasPrefix(m.Error.Message, c.field+" "+c.text+": ") {
			t.Fatalf("%s %s: %d %s", c.field, c.text, r.Status, r.Body)
		}
	}
	// Boundaries that pass.
	for _, b := range []map[string]any{
		apitest.With(base, "seed", 0), apitest.With(base, "seed", 4294967295), apitest.With(base, "prompt", strings.Repeat("é", 2000)),
		apitest.With(base, "max_resolution", 720), apitest.With(base, "idempotency_key", strings.Repeat("k", 256)),
		apitest.With(base, "prompt", nil, "reference_image_uri", src), apitest.With(base, "alpha_mode", "custom", "alpha_uri", nil, "generation_type", "image", "alpha_uri", src),
	} {
		if r := e.Do("POST", "/v1/vfx/generations", key, b); r.Status != 201 {
			t.Fatalf("%v: %d %s", b["seed"], r.Status, r.Body)
		}
	}
}

func TestValidation422(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	key := e.OrgKey()
	for _, tc := range []struct {
		name, body, loc, typ string
	}{
		{"malformed", `{"generation_type":`, "", "json_invalid"},
		{"not object", `[1,2]`, "", "model_attributes_type"},
		{"empty", ``, "", "missing"},
		{"seed string", `{"generation_type":"image","seed":"12"}`, "seed", "int_type"},
		{"seed float", `{"seed":1.5}`, "seed", "int_type"},
		{"prompt number", `{"prompt":5}`, "prompt", "string_type"},
		{"max_resolution bool", `{"max_resolution":true}`, "max_resolution", "int_type"},
		{"keyframe object", `{"alpha_keyframe_index":{}}`, "alpha_keyframe_index", "int_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Do("POST", "/v1/vfx/generations", key, tc.body)
			if r.Status != 422 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			m := r.JSON(t)
			d, ok := m["detail"].([]any)
			if !ok || len(d) == 0 {
				t.Fatalf("no detail array: %s", r.Body)
			}
			first := d[0].(map[string]any)
			loc := first["loc"].([]any)
			if first["type"] != tc.typ || first["msg"] == "" || loc[0] != "body" {
				t.Fatalf("detail %v", first)
			}
			if tc.loc != "" && loc[1] != tc.loc {
				t.Fatalf("loc %v", loc)
			}
		})
	}
}

func TestContentChecks(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	key := e.OrgKey()
	vid := apitest.VideoFixture(t, 64, 48, 4)
	long := apitest.VideoFixture(t, 16, 16, 241)
	png := apitest.PNGBytes(t, 64, 48, false)
	srcImg := e.Upload(key, "src.png", png)
	srcVid := e.Upload(key, "src.mp4", apitest.ReadFile(t, vid.Source))
	matteVid := e.Upload(key, "matte.mp4", apitest.ReadFile(t, vid.Matte))
	matteSmall := e.Upload(key, "m.png", apitest.PNGBytes(t, 32, 24, true))
	big := e.Upload(key, "big.png", apitest.PNGBytes(t, 2000, 1400, false))
	wide := e.Upload(key, "wide.png", apitest.PNGBytes(t, 400, 50, false))
	longVid := e.Upload(key, "long.mp4", apitest.ReadFile(t, long.Source))
	garbage := e.Upload(key, "junk.png", []byte("this is not a picture at all, just text"))
	emptyKey := e.Upload(key, "empty.png", apitest.KeyframePNG(t, 64, 48, false, false))
	cutout := e.Upload(key, "cutout.png", apitest.KeyframePNG(t, 64, 48, true, true))
	cases := []struct {
		name string
		body map[string]any
		code job.Code
	}{
		{"too many pixels", apitest.ValidGeneration(big), api.CodeSourceTooLarge},
		{"aspect", apitest.ValidGeneration(wide), api.CodeExtremeAspectRatio},
		{"frames", apitest.With(apitest.ValidGeneration(longVid), "generation_type", "video"), api.CodeVideoTooManyFrames},
		{"not media", apitest.ValidGeneration(garbage), api.CodeInvalidFileFormat},
		{"video for image", apitest.ValidGeneration(srcVid), api.CodeInvalidFileFormat},
		{"image for video", apitest.With(apitest.ValidGeneration(srcImg), "generation_type", "video"), api.CodeInvalidFileFormat},
		{"data mime mismatch", apitest.ValidGeneration(apitest.DataURI("image/jpeg", png)), api.CodeInvalidFileFormat},
		{"custom video matte on image", apitest.With(apitest.ValidGeneration(srcImg), "alpha_mode", "custom", "alpha_uri", matteVid), api.CodeAlphaTypeMismatch},
		{"custom size mismatch", apitest.With(apitest.ValidGeneration(srcImg), "alpha_mode", "custom", "alpha_uri", matteSmall), api.CodeAlphaTypeMismatch},
		{"reference video", apitest.With(apitest.ValidGeneration(srcImg), "reference_image_uri", srcVid), api.CodeInvalidFileFormat},
		{"select empty keyframe", apitest.With(apitest.ValidGeneration(srcVid), "generation_type", "video", "alpha_mode", "select", "alpha_uri", emptyKey), api.CodeAlphaTypeMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Do("POST", "/v1/vfx/generations", key, tc.body)
			if r.Status != 400 || r.Code() != tc.code {
				t.Fatalf("want 400 %s, got %d %s", tc.code, r.Status, trunc.String(string(r.Body), 300))
			}
			if tc.name == "select empty keyframe" && !strings.Contains(string(r.Body), "selects nothing") {
				t.Fatalf("message does not say the keyframe is empty: %s", r.Body)
			}
		})
	}
	// Accepted: inline data, a video with its custom matte.
	for _, b := range []map[string]any{
		apitest.ValidGeneration(apitest.DataURI("image/png", png)),
		apitest.With(apitest.ValidGeneration(srcVid), "generation_type", "video", "alpha_mode", "custom", "alpha_uri", matteVid),
		apitest.With(apitest.ValidGeneration(srcVid), "generation_type", "video", "alpha_mode", "select", "alpha_uri", cutout),
	} {
		if r := e.Do("POST", "/v1/vfx/generations", key, b); r.Status != 201 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
}

func TestBodyCap(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	key := e.OrgKey()
	body := `{"generation_type":"image","alpha_mode":"fill","prompt":"x","source_uri":"data:image/png;base64,` +
		strings.Repeat("A", int(api.DefaultMaxBodyBytes)) + `"}`
	r := e.Do("POST", "/v1/vfx/generations", key, body)
	if r.Status != http.StatusRequestEntityTooLarge || r.Code() != api.CodeRequestTooLarge {
		t.Fatalf("%d %s", r.Status, trunc.String(string(r.Body), 200))
	}
	// A data: URI over 50 MB but under the body cap.
	body = `{"generation_type":"image","alpha_mode":"fill","prompt":"x","source_uri":"data:image/png;base64,` +
		strings.Repeat("A", 68_000_000) + `"}`
	r = e.Do("POST", "/v1/vfx/generations", key, body)
	if r.Status != 400 || r.Code() != api.CodeSourceTooLarge {
		t.Fatalf("%d %s", r.Status, trunc.String(string(r.Body), 200))
	}
}

func TestCreateGetList(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	key := e.OrgKey()
	src := e.Upload(key, "src.png", apitest.PNGBytes(t, 64, 48, false))
	r := e.Do("POST", "/v1/vfx/generations", key, apitest.With(apitest.ValidGeneration(src), "seed", 42, "callback_url", "http://127.0.0.1:1/hook"))
	if r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	job := r.JSON(t)
	id := job["id"].(string)
	if !strings.HasPrefix(id, "vfx_") || job["status"] != "in_queue" || job["seed"].(float64) != 42 ||
		job["generation_type"] != "image" || job["alpha_mode"] != "fill" || job["created_at"] == "" || job["modified_at"] == "" {
		t.Fatalf("job %v", job)
	}
	if _, ok := job["output"]; ok {
		t.Fatal("output before completion")
	}
	if _, ok := job["error"]; ok {
		t.Fatal("error on a queued job")
	}
	wh := job["webhook"].(map[string]any)
	if wh["status"] != "pending" || wh["attempts"].(float64) != 0 {
		t.Fatalf("webhook %v", wh)
	}
	// Random seed when omitted; no webhook object without callback_url.
	r2 := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(src)).JSON(t)
	if _, ok := r2["seed"]; !ok {
		t.Fatal("no seed")
	}
	if _, ok := r2["webhook"]; ok {
		t.Fatal("webhook without callback_url")
	}

	g := e.Do("GET", "/v1/vfx/generations/"+id, key, nil)
	if g.Status != 200 || g.JSON(t)["id"] != id {
		t.Fatalf("get %d %s", g.Status, g.Body)
	}
	// Someone else's job, and a job that does not exist: 404, never 403.
	other := e.OrgKey()
	for _, p := range []string{id, "vfx_doesnotexist", "nope"} {
		if r := e.Do("GET", "/v1/vfx/generations/"+p, other, nil); r.Status != 404 || r.Code() != api.CodeJobNotFound {
			t.Fatalf("%s: %d %s", p, r.Status, r.Body)
		}
	}

	// Completed: fresh signed output URLs that work; failed: error.
	e.Finish(id, true)
	c1 := e.Do("GET", "/v1/vfx/generations/"+id, key, nil).JSON(t)
	out := c1["output"].(map[string]any)
	for _, n := range []string{"render", "source", "alpha"} {
		u, _ := out[n].(string)
		res, err := http.Get(u)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("%s url %q: %v %v", n, u, err, res)
		}
		res.Body.Close()
	}
	if c1["status"] != "completed" || c1["completed_at"] == nil || c1["progress"].(float64) != 100 {
		t.Fatalf("completed %v", c1)
	}
	id2 := r2["id"].(string)
	e.Finish(id2, false)
	f := e.Do("GET", "/v1/vfx/generations/"+id2, key, nil).JSON(t)
	if f["status"] != "failed" || !strings.HasPrefix(f["error"].(string), "INVALID_FILE_FORMAT") || f["completed_at"] == nil {
		t.Fatalf("failed %v", f)
	}
	if _, ok := f["output"]; ok {
		t.Fatal("output on failed job")
	}

	// List: newest first, cursor pages, every element with fresh URLs.
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(src)).JSON(t)["id"].(string))
	}
	want := []string{ids[4], ids[3], ids[2], ids[1], ids[0], id2, id}
	var got []string
	tok := ""
	pages := 0
	for {
		p := "/v1/vfx/generations?limit=3"
		if tok != "" {
			p += "&page_token=" + tok
		}
		r := e.Do("GET", p, key, nil)
		if r.Status != 200 {
			t.Fatalf("list %d %s", r.Status, r.Body)
		}
		m := r.JSON(t)
		pages++
		for _, j := range m["jobs"].([]any) {
			jm := j.(map[string]any)
			got = append(got, jm["id"].(string))
			if jm["id"] == id {
				if _, ok := jm["output"].(map[string]any)["render"]; !ok {
					t.Fatal("list element without output")
				}
			}
		}
		if m["next_page_token"] == nil {
			break
		}
		tok = m["next_page_token"].(string)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || pages != 3 {
		t.Fatalf("list order %v, want %v (%d pages)", got, want, pages)
	}
	m := e.Do("GET", "/v1/vfx/generations", other, nil).JSON(t)
	if len(m["jobs"].([]any)) != 0 || m["next_page_token"] != nil {
		t.Fatalf("other account sees %v", m)
	}
	def := e.Do("GET", "/v1/vfx/generations", key, nil).JSON(t)
	if len(def["jobs"].([]any)) != 7 {
		t.Fatalf("default limit page %d", len(def["jobs"].([]any)))
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=x", "page_token=%25%25"} {
		if r := e.Do("GET", "/v1/vfx/generations?"+q, key, nil); r.Status != 422 {
			t.Fatalf("%s: %d", q, r.Status)
		}
	}
}

func TestIdempotency(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	key := e.OrgKey()
	src := e.Upload(key, "src.png", apitest.PNGBytes(t, 64, 48, false))
	body := apitest.With(apitest.ValidGeneration(src), "idempotency_key", "order-1")
	r1 := e.Do("POST", "/v1/vfx/generations", key, body)
	if r1.Status != 201 {
		t.Fatalf("%d %s", r1.Status, r1.Body)
	}
	r2 := e.Do("POST", "/v1/vfx/generations", key, body)
	if r2.Status != 200 || r2.JSON(t)["id"] != r1.JSON(t)["id"] {
		t.Fatalf("repeat: %d %s", r2.Status, r2.Body)
	}
	r3 := e.Do("POST", "/v1/vfx/generations", key, apitest.With(body, "prompt", "cold"))
	if r3.Status != 409 || r3.Code() != api.CodeIdempotencyConflict {
		t.Fatalf("changed body: %d %s", r3.Status, r3.Body)
	}
	// Another account may use the same key (with its own upload).
	k2 := e.OrgKey()
	if r := e.Do("POST", "/v1/vfx/generations", k2, apitest.With(apitest.ValidGeneration(e.Upload(k2, "src.png", apitest.PNGBytes(t, 64, 48, false))), "idempotency_key", "order-1")); r.Status != 201 {
		t.Fatalf("other account: %d %s", r.Status, r.Body)
	}

	// 50 concurrent identical submissions make exactly one job.
	body = apitest.With(apitest.ValidGeneration(src), "idempotency_key", "burst", "seed", 7)
	var wg sync.WaitGroup
	ids := make([]string, 50)
	codes := make([]int, 50)
	for i := range 50 {
		wg.Go(func() {
			r := e.Do("POST", "/v1/vfx/generations", key, body)
			codes[i] = r.Status
			if r.Status < 300 {
				ids[i] = r.JSON(t)["id"].(string)
			}
		})
	}
	wg.Wait()
	created := 0
	for i := range 50 {
		if codes[i] == 201 {
			created++
		}
		if codes[i] != 201 && codes[i] != 200 || ids[i] != ids[0] {
			t.Fatalf("submission %d: %d %s (first %s)", i, codes[i], ids[i], ids[0])
		}
	}
	if created != 1 {
		t.Fatalf("%d submissions created a job", created)
	}
	m := e.Do("GET", "/v1/vfx/generations?limit=100", key, nil).JSON(t)
	if n := len(m["jobs"].([]any)); n != 2 {
		t.Fatalf("%d jobs listed, want 2", n)
	}
}

func TestRateLimits(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	_, key := e.NewAccount(account.KindPersonal, account.AccountInput{})
	src := e.Upload(key, "src.png", apitest.PNGBytes(t, 64, 48, false))
	for i := range 5 {
		r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(src))
		if r.Status != 201 {
			t.Fatalf("submission %d: %d %s", i, r.Status, r.Body)
		}
		if r.Header.Get("X-RateLimit-Limit") != "5" || r.Header.Get("X-RateLimit-Remaining") != fmt.Sprint(4-i) {
			t.Fatalf("headers %v", r.Header)
		}
	}
	r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(src))
	if r.Status != 429 || r.Code() != api.CodeRateLimitExceeded || r.Header.Get("Retry-After") == "" ||
		r.Header.Get("X-RateLimit-Limit") != "5" || r.Header.Get("X-RateLimit-Remaining") != "0" || r.Header.Get("X-RateLimit-Reset") == "" {
		t.Fatalf("6th: %d %v %s", r.Status, r.Header, r.Body)
	}
	// Reads: a separate class of 5 per minute (GET and list together).
	for i := range 5 {
		p := "/v1/vfx/generations"
		if i%2 == 1 {
			p = "/v1/account/info"
		}
		if r := e.Do("GET", p, key, nil); r.Status != 200 {
			t.Fatalf("read %d: %d %s", i, r.Status, r.Body)
		}
	}
	if r := e.Do("GET", "/v1/vfx/generations/vfx_x", key, nil); r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("6th read: %d", r.Status)
	}
	for range 5 {
		if r := e.Do("GET", "/v1/account/billing", key, nil); r.Status != 200 {
			t.Fatalf("billing: %d %s", r.Status, r.Body)
		}
	}
	if r := e.Do("GET", "/v1/account/billing", key, nil); r.Status != 429 || r.Code() != api.CodeRateLimitExceeded {
		t.Fatalf("6th billing: %d", r.Status)
	}
	// Organization keys: no limits (per-account counting: TestRateLimitPerAccount).
	org := e.OrgKey()
	src2 := e.Upload(org, "src.png", apitest.PNGBytes(t, 64, 48, false))
	for i := range 12 {
		if r := e.Do("POST", "/v1/vfx/generations", org, apitest.ValidGeneration(src2)); r.Status != 201 {
			t.Fatalf("org submission %d: %d %s", i, r.Status, r.Body)
		}
	}
}

func TestRateLimitPerAccount(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	a, k1 := e.NewAccount(account.KindPersonal, account.AccountInput{})
	_, k2, err := e.Acc.CreateKey(context.Background(), a.ID, account.KindPersonal)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		k := k1
		if i%2 == 1 {
			k = k2
		}
		if r := e.Do("GET", "/v1/vfx/generations", k, nil); r.Status != 200 {
			t.Fatalf("%d: %d", i, r.Status)
		}
	}
	if r := e.Do("GET", "/v1/vfx/generations", k2, nil); r.Status != 429 {
		t.Fatalf("second key not limited: %d", r.Status)
	}
}

func TestConcurrencyAndSpendingLimits(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	ctx := context.Background()
	a, key := e.NewAccount(account.KindPersonal, account.AccountInput{})
	if _, err := e.Acc.UpdateAccount(ctx, a.ID, account.AccountPatch{RateLimits: &account.RateLimits{RPM: 100, ReadRPM: 100, BillingRPM: 100, Concurrency: 2}}); err != nil {
		t.Fatal(err)
	}
	src := e.Upload(key, "src.png", apitest.PNGBytes(t, 64, 48, false))
	for range 2 {
		r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(src))
		if r.Status != 201 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(src))
	if r.Status != 429 || r.Code() != api.CodeConcurrentLimitExceeded || r.Header.Get("Retry-After") == "" || r.Header.Get("X-RateLimit-Limit") != "2" {
		t.Fatalf("3rd: %d %v %s", r.Status, r.Header, r.Body)
	}
	info := e.Do("GET", "/v1/account/info", key, nil).JSON(t)
	rl := info["rate_limits"].(map[string]any)
	if c := rl["concurrency"].(map[string]any); c["usage"].(float64) != 2 || c["limit"].(float64) != 2 {
		t.Fatalf("info %v", info)
	}
	if c := rl["rpm"].(map[string]any); c["usage"].(float64) != 3 || c["limit"].(float64) != 100 {
		t.Fatalf("info rpm %v", rl)
	}

	// Spending limit: 402 with usage and cost in the message.
	lim := 0.01
	b, _ := e.NewAccount(account.KindOrganization, account.AccountInput{SpendingLimit: &lim, BillingType: "postpaid"})
	_, bkey, _ := e.Acc.CreateKey(ctx, b.ID, account.KindOrganization)
	bsrc := e.Upload(bkey, "src.mp4", apitest.ReadFile(t, apitest.VideoFixture(t, 32, 32, 3).Source))
	r = e.Do("POST", "/v1/vfx/generations", bkey, apitest.With(apitest.ValidGeneration(bsrc), "generation_type", "video"))
	if r.Status != 402 || r.Code() != api.CodeHardLimitExceeded || !strings.Contains(string(r.Body), "$") {
		t.Fatalf("hard limit: %d %s", r.Status, r.Body)
	}
	// Prepaid balance below the cost.
	zero := 0.0
	c, _ := e.NewAccount(account.KindOrganization, account.AccountInput{PrepaidBalance: &zero, BillingType: "prepaid"})
	_, ckey, _ := e.Acc.CreateKey(ctx, c.ID, account.KindOrganization)
	csrc := e.Upload(ckey, "src.mp4", apitest.ReadFile(t, apitest.VideoFixture(t, 32, 32, 3).Source))
	r = e.Do("POST", "/v1/vfx/generations", ckey, apitest.With(apitest.ValidGeneration(csrc), "generation_type", "video"))
	if r.Status != 402 || r.Code() != api.CodeInsufficientBalance {
		t.Fatalf("balance: %d %s", r.Status, r.Body)
	}
}

// TestSelectMatteChecks drives the select-mode content checks directly.
func TestSelectMatteChecks(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	key := e.OrgKey()
	vid := apitest.VideoFixture(t, 64, 48, 4)
	src := e.Upload(key, "src.mp4", apitest.ReadFile(t, vid.Source))
	matteVid := e.Upload(key, "m.mp4", apitest.ReadFile(t, vid.Matte))
	kf := e.Upload(key, "kf.png", apitest.PNGBytes(t, 64, 48, true))
	ctx := context.Background()
	for _, tc := range []struct {
		alpha string
		index int
		code  job.Code
	}{
		{matteVid, 0, api.CodeAlphaMustBeImage},
		{kf, 4, api.CodeInvalidKeyframeIndex},
		{e.Upload(key, "colour.png", apitest.PNGBytes(t, 64, 48, false)), 0, ""}, // an RGB keyframe: its luminance
		{e.Upload(key, "cutout.png", apitest.KeyframePNG(t, 64, 48, false, true)), 0, ""},
		{e.Upload(key, "deep.png", apitest.KeyframePNG(t, 64, 48, true, true)), 0, ""},
		{e.Upload(key, "empty.png", apitest.KeyframePNG(t, 64, 48, false, false)), 0, api.CodeAlphaTypeMismatch},
		{e.Upload(key, "empty16.png", apitest.KeyframePNG(t, 64, 48, true, false)), 0, api.CodeAlphaTypeMismatch},
		{e.Upload(key, "square.png", apitest.PNGBytes(t, 48, 48, true)), 0, api.CodeAlphaTypeMismatch},
		{e.Upload(key, "half.png", apitest.PNGBytes(t, 32, 24, true)), 0, ""},
		{kf, 3, ""},
	} {
		_, err := e.Srv.CheckMedia(ctx, job.JobRequest{GenerationType: "video", SourceURI: src, AlphaMode: "select",
			AlphaURI: tc.alpha, AlphaKeyframeIndex: tc.index})
		var ae *api.Error
		if tc.code == "" {
			if err != nil {
				t.Fatalf("index %d: %v", tc.index, err)
			}
			continue
		}
		if !errors.As(err, &ae) || ae.Code != tc.code {
			t.Fatalf("want %s, got %v", tc.code, err)
		}
	}
}
