package gen

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/job"
)

// receiver is a loopback webhook endpoint that fails its first fails
// calls with 500.
type receiver struct {
	*httptest.Server
	fails int32
	n     atomic.Int32
	mu    sync.Mutex
	got   []hookCall
}

type hookCall struct {
	header http.Header
	body   []byte
	at     time.Time
}

func newReceiver(t *testing.T, fails int) *receiver {
	rc := &receiver{fails: int32(fails)}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, hookCall{r.Header.Clone(), b, time.Now()})
		rc.mu.Unlock()
		if rc.n.Add(1) <= rc.fails {
			w.WriteHeader(500)
			return
		}
		w.WriteHeader(204)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) calls() []hookCall {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hookCall(nil), rc.got...)
}

func (e *env) submitWithHook(key, hook string) string {
	e.T.Helper()
	src := e.Upload(key, "src.png", apitest.PNGBytes(e.T, 64, 48, false))
	r := e.Do("POST", "/v1/vfx/generations", key, apitest.With(apitest.ValidGeneration(src), "callback_url", hook))
	if r.Status != 201 {
		e.T.Fatalf("%d %s", r.Status, r.Body)
	}
	return r.JSON(e.T)["id"].(string)
}

func (e *env) webhookState(key, id string) map[string]any {
	e.T.Helper()
	j := e.Do("GET", "/v1/vfx/generations/"+id, key, nil).JSON(e.T)
	w, _ := j["webhook"].(map[string]any)
	return w
}

func verify(t *testing.T, secret string, c hookCall) {
	t.Helper()
	id, ts, sig := c.header.Get("webhook-id"), c.header.Get("webhook-timestamp"), c.header.Get("webhook-signature")
	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("secret %q", secret)
	}
	mac := hmac.New(sha256.New, k)
	mac.Write([]byte(id + "." + ts + "." + string(c.body)))
	if want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)); sig != want {
		t.Fatalf("signature %q, want %q", sig, want)
	}
}

func TestWebhookRetriesThenDelivered(t *testing.T) {
	e := newEnv(t, envOpts{})
	a, key := e.NewAccount(account.KindOrganization, account.AccountInput{})
	rc := newReceiver(t, 2)
	id := e.submitWithHook(key, rc.URL+"/hook")
	e.Finish(id, true)
	apitest.Eventually(t, 10*time.Second, "delivered", func() bool { return e.webhookState(key, id)["status"] == "delivered" })
	w := e.webhookState(key, id)
	if w["attempts"].(float64) != 3 || w["last_error"] != "" {
		t.Fatalf("state %v", w)
	}
	calls := rc.calls()
	if len(calls) != 3 {
		t.Fatalf("%d calls", len(calls))
	}
	sec := e.AdminDo("GET", "/admin/v1/accounts/"+a.ID+"/webhook-secret", nil).JSON(t)["secret"].(string)
	for i, c := range calls {
		if c.header.Get("webhook-id") != calls[0].header.Get("webhook-id") || c.header.Get("webhook-id") == "" {
			t.Fatalf("webhook-id not stable: %q vs %q", c.header.Get("webhook-id"), calls[0].header.Get("webhook-id"))
		}
		verify(t, sec, c)
		if i > 0 && c.at.Sub(calls[i-1].at) < 40*time.Millisecond {
			t.Fatalf("attempt %d came %s after the previous one", i+1, c.at.Sub(calls[i-1].at))
		}
	}
	var body map[string]any
	if err := json.Unmarshal(calls[2].body, &body); err != nil {
		t.Fatal(err)
	}
	out, _ := body["output"].(map[string]any)
	if body["id"] != id || body["status"] != "completed" || body["completed_at"] == "" || out["render"] == nil || out["source"] == nil || out["alpha"] == nil {
		t.Fatalf("body %v", body)
	}
	if _, ok := body["error"]; ok {
		t.Fatal("error in success body")
	}
}

func TestWebhookFailedAfterFiveAttempts(t *testing.T) {
	e := newEnv(t, envOpts{})
	key := e.OrgKey()
	rc := newReceiver(t, 100)
	id := e.submitWithHook(key, rc.URL)
	e.Finish(id, false)
	apitest.Eventually(t, 10*time.Second, "failed", func() bool { return e.webhookState(key, id)["status"] == "failed" })
	w := e.webhookState(key, id)
	if w["attempts"].(float64) != 5 || w["last_error"] != "callback answered HTTP 500" {
		t.Fatalf("state %v", w)
	}
	time.Sleep(300 * time.Millisecond)
	calls := rc.calls()
	if len(calls) != 5 {
		t.Fatalf("%d calls, want 5", len(calls))
	}
	var body map[string]any
	_ = json.Unmarshal(calls[0].body, &body)
	if body["status"] != "failed" || !strings.HasPrefix(body["error"].(string), "INVALID_FILE_FORMAT") || body["completed_at"] == "" {
		t.Fatalf("failure body %v", body)
	}
	if _, ok := body["output"]; ok {
		t.Fatal("output in failure body")
	}
}

func TestWebhookSurvivesRestart(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true, Delays: []time.Duration{700 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}})
	key := e.OrgKey()
	rc := newReceiver(t, 1)
	id := e.submitWithHook(key, rc.URL)
	ctx1, stop1 := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = runBackground(ctx1, e.Srv, e.DCfg); close(done) }()
	e.Finish(id, true)
	apitest.Eventually(t, 10*time.Second, "first attempt", func() bool { return rc.n.Load() == 1 })
	stop1()
	<-done
	if w := e.webhookState(key, id); w["attempts"].(float64) != 1 || w["status"] != "pending" {
		t.Fatalf("after first attempt: %v", w)
	}
	// A new process (a new api.Server on the same NATS) takes over.
	srv2, err := newAPI(context.Background(), e.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx2, stop2 := context.WithCancel(context.Background())
	done2 := make(chan struct{})
	go func() { _ = runBackground(ctx2, srv2.Server, e.DCfg); close(done2) }()
	defer func() { stop2(); <-done2 }()
	apitest.Eventually(t, 10*time.Second, "delivered after restart", func() bool { return e.webhookState(key, id)["status"] == "delivered" })
	if w := e.webhookState(key, id); w["attempts"].(float64) != 2 {
		t.Fatalf("state %v", w)
	}
}

// fakeResolver answers every name with fixed addresses.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &netErr{}
}

type netErr struct{}

func (*netErr) Error() string { return "no such host" }

func TestSSRFGuard(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true, Mut: func(c *api.Config) {
		c.AllowPrivateNetworks = false
		c.AllowHTTPCallbacks = false
		c.Resolver = fakeResolver{
			"public.test":  {netip.MustParseAddr("93.184.216.34")},
			"private.test": {netip.MustParseAddr("10.0.0.5")},
			"meta.test":    {netip.MustParseAddr("169.254.169.254")},
			"mixed.test":   {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")},
		}
	}})
	key := e.OrgKey()
	src := e.Upload(key, "src.png", apitest.PNGBytes(t, 64, 48, false))
	for _, tc := range []struct {
		field, url string
		code       job.Code
	}{
		{"callback_url", "http://public.test/hook", api.CodeInvalidCallbackURL},
		{"callback_url", "https://127.0.0.1/hook", api.CodeInvalidCallbackURL},
		{"callback_url", "https://[::1]/hook", api.CodeInvalidCallbackURL},
		{"callback_url", "https://private.test/hook", api.CodeInvalidCallbackURL},
		{"callback_url", "https://meta.test/hook", api.CodeInvalidCallbackURL},
		{"callback_url", "https://mixed.test/hook", api.CodeInvalidCallbackURL},
		{"callback_url", "https://nowhere.test/hook", api.CodeInvalidCallbackURL},
		{"callback_url", "https://user:pw@public.test/hook", api.CodeInvalidCallbackURL},
		{"source_uri", "https://127.0.0.1/a.png", api.CodeInvalidURI},
		{"source_uri", "https://private.test/a.png", api.CodeInvalidURI},
		{"reference_image_uri", "https://meta.test/a.png", api.CodeInvalidURI},
		{"source_uri", "https://nowhere.test/a.png", api.CodeSourceUnreachable},
	} {
		r := e.Do("POST", "/v1/vfx/generations", key, apitest.With(apitest.ValidGeneration(src), tc.field, tc.url))
		if r.Status != 400 || r.Code() != tc.code {
			t.Fatalf("%s %s: %d %s", tc.field, tc.url, r.Status, r.Body)
		}
	}
	for _, b := range []map[string]any{
		apitest.With(apitest.ValidGeneration(src), "callback_url", "https://public.test/hook"),
		apitest.With(apitest.ValidGeneration("https://public.test/a.png")),
	} {
		if r := e.Do("POST", "/v1/vfx/generations", key, b); r.Status != 201 {
			t.Fatalf("%v: %d %s", b, r.Status, r.Body)
		}
	}
	// The webhook client's guard at dial time: dispatch's TestDialGuard.
}
