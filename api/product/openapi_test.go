package product

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/gen"
	"github.com/vfxrender/vfx/job"
)

// TestOpenAPIMatchesRoutes checks the served document against the routes
// the server registered, both ways, and that it names every status and
// error code of the generation API.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	r := e.Do("GET", "/v1/openapi.json", "", nil)
	if r.Status != 200 {
		t.Fatalf("%d", r.Status)
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct{ Version string }
		Paths   map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "1.0.0" {
		t.Fatalf("openapi %q version %q", doc.OpenAPI, doc.Info.Version)
	}
	served := e.Srv.Routes()
	var documented []string
	for p, ops := range doc.Paths {
		for m := range ops {
			switch m {
			case "get", "post", "put", "patch", "delete":
				documented = append(documented, strings.ToUpper(m)+" "+p)
			}
		}
	}
	// Every operation documents the 405 of a wrong method on its path.
	for p, ops := range doc.Paths {
		for m, raw := range ops {
			var op struct{ Responses map[string]json.RawMessage }
			if json.Unmarshal(raw, &op) == nil && op.Responses != nil && op.Responses["405"] == nil {
				t.Errorf("%s %s documents no 405", m, p)
			}
		}
	}
	slices.Sort(served)
	slices.Sort(documented)
	if !slices.Equal(served, documented) {
		t.Fatalf("routes served %v\ndocumented %v", served, documented)
	}
	text := string(r.Body)
	for _, s := range []string{
		`"201"`, `"200"`, `"400"`, `"401"`, `"402"`, `"404"`, `"405"`, `"409"`, `"413"`, `"422"`, `"429"`, `"204"`,
		"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "webhook-signature", "webhook-id", "webhook-timestamp",
		"next_page_token", "page_token", "idempotency_key", "callback_url", "alpha_keyframe_index", "max_resolution", "reference_image_uri",
		"billing_period_start", "current_period_usage", "total_usage", "upload_url", "vfx_uri", "completed_at", "modified_at", "last_error",
		"api_image_720p", "api_video_1080p", "prepaid", "postpaid",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("document lacks %s", s)
		}
	}
	for _, c := range append(slices.Clone(gen.GenerationCodes), api.CodeInvalidAPIKey, api.CodeJobNotFound, api.CodeRateLimitExceeded,
		api.CodeConcurrentLimitExceeded, api.CodeHardLimitExceeded, api.CodeInsufficientBalance, api.CodeIdempotencyConflict, api.CodeInvalidFilename, api.CodeMethodNotAllowed,
		api.CodeInvalidPrompt, api.CodeRequestTimeout, api.CodeUnavailable) {
		if _, ok := api.ErrorCodes[c]; !ok || !strings.Contains(text, `"`+string(c)+`"`) {
			t.Errorf("error code %s not documented", c)
		}
	}
	// Every code of the product API, and its notes.
	for _, c := range []job.Code{api.CodeOrgKeyRequired, api.CodeProductNotEnabled, api.CodeTeamForbidden, api.CodeModelConsentRequired, api.CodeInvalidInput,
		api.CodeUnsupportedBillingUnit, api.CodeBudgetExceeded, api.CodeJobNotFound, api.CodeProductNotFound, api.CodeModelNotFound, api.CodeIdempotencyConflict,
		api.CodeParentNotFound, api.CodeParentNotOwned, api.CodeParentNotProductJob, api.CodeParentFastMode, api.CodeParentIsFinish, api.CodeParentNotSuccessful,
		api.CodeMethodNotAllowed, api.CodeRequestTimeout} {
		if _, ok := api.ProductErrorCodes[c]; !ok || !strings.Contains(text, `"`+string(c)+`"`) {
			t.Errorf("product error code %s not documented", c)
		}
	}
	for _, s := range []string{`"202"`, "X-Service-Team-Id", "unknown_fields", "missing_fields", "credit_required", "input_schema",
		"max_credits", "refunded", "credits_charged", "productJobFinished", "mode fast", "target_resolution",
		"open_uploads_per_owner", "inflight_body_bytes", "min_body_rate"} {
		if !strings.Contains(text, s) {
			t.Errorf("document lacks %s", s)
		}
	}
}

// openAPIFile is the served /v1/openapi.json of a server with both APIs
// on it, byte for byte but for the order of the two enums built from a
// map (canonicalOpenAPI). It was recorded before the generation API's part
// moved from package api's openapi.go to api/gen (issue 34); a change of
// the document fails the test. Rewrite it (go test ./api/product/ -run
// TestOpenAPIGolden -update-corpus) only for a deliberate change.
const openAPIFile = "testdata/openapi.golden.json"

// TestOpenAPIGolden compares the served document with openAPIFile.
func TestOpenAPIGolden(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	r := e.Do("GET", "/v1/openapi.json", "", nil)
	if r.Status != 200 {
		t.Fatalf("%d", r.Status)
	}
	got := canonicalOpenAPI(t, r.Body)
	// The enums are served sorted, so the document is the same bytes on
	// every request (they were once built by ranging over a map).
	if !bytes.Equal(got, r.Body) {
		t.Fatalf("served document (%d bytes) is not in canonical order (%d bytes): an enum is not sorted", len(r.Body), len(got))
	}
	if again := e.Do("GET", "/v1/openapi.json", "", nil); !bytes.Equal(again.Body, r.Body) {
		t.Fatal("a second request served different bytes")
	}
	if *updateCorpus {
		if err := os.WriteFile(openAPIFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(openAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		n := min(len(got), len(want))
		i := 0
		for i < n && got[i] == want[i] {
			i++
		}
		t.Fatalf("document differs from %s at byte %d (%d bytes served, %d recorded):\n got  …%s…\n want …%s…",
			openAPIFile, i, len(got), len(want), got[max(0, i-80):min(len(got), i+80)], want[max(0, i-80):min(len(want), i+80)])
	}
}

// canonicalOpenAPI is the served document b with the enums of every error
// code (ErrorEnvelope's and ProductError's, once built from a map in an
// order that changed from one request to the next) sorted. Everything else
// stays as served: numbers keep their text, and encoding/json writes the
// objects' keys sorted as the server's encoding/json did.
func canonicalOpenAPI(t *testing.T, b []byte) []byte {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var doc map[string]any
	if err := d.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	at := func(v any, keys ...string) map[string]any {
		for _, k := range keys {
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("document has no %v", keys)
			}
			v = m[k]
		}
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("document has no object at %v", keys)
		}
		return m
	}
	schemas := at(doc, "components", "schemas")
	for _, enum := range []map[string]any{
		at(schemas, "ErrorEnvelope", "properties", "error", "properties", "code"),
		at(schemas, "ProductError", "properties", "detail", "properties", "error_code"),
	} {
		codes, ok := enum["enum"].([]any)
		if !ok || len(codes) == 0 {
			t.Fatalf("enum %v", enum)
		}
		slices.SortFunc(codes, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}
