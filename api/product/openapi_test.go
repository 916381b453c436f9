package product

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/job"
)

// TestOpenAPIMatchesRoutes checks the served document against the routes
// the server registered, both ways, and that it names every status and
// error code of the generation API.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true})
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
	served := e.srv.Routes()
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
	for _, c := range append(slices.Clone(api.GenerationCodes), api.CodeInvalidAPIKey, api.CodeJobNotFound, api.CodeRateLimitExceeded,
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
