package product

import (
	"encoding/json"
	"github.com/vfxrender/vfx/api"
	"strings"

	"github.com/vfxrender/vfx/job"
)

const productDescription = `Product API (docs/api.md in the repository). Fields, billing, states, responses, errors and webhooks never mix with the generation API's.

- Organization API keys only (created by the operator: POST /admin/v1/orgs/{id}/keys, optionally bound to a team). Personal keys get 403 ORG_KEY_REQUIRED. Organization keys have no request or concurrency limits. The team context is the X-Service-Team-Id header: a team-bound key acts for its team (a header naming another team is 403 TEAM_FORBIDDEN); an organization-wide key acts for the team the header names (one of its organization's teams) or for no team. Jobs are visible to the organization and team context that created them; idempotency keys are scoped the same way.
- GET /v1/products -> {"products":[{product,name,description,models}]}. GET /v1/products/{product}/models -> {"models":[{model_id,description,input_schema,pricing}]}; input_schema is JSON Schema 2020-12 with additionalProperties false.
- POST /v1/products/{product}/estimate {model_id, inputs} -> {credits, exact, billing_unit, breakdown}; nothing is created or reserved. exact is false when the source is not at hand (an https:// URL): the estimate is then the price of a 240-frame video, an upper bound.
- POST /v1/products/{product}/jobs -> **202** product job. Unknown top-level fields are rejected (422 INVALID_INPUT with unknown_fields). inputs are validated against the model's input_schema (422 INVALID_INPUT listing unknown_fields and missing_fields). billing_unit usd -> 400 UNSUPPORTED_BILLING_UNIT. The same idempotency_key and body again -> **202** with the same job; a changed body -> **409** IDEMPOTENCY_CONFLICT; concurrent duplicates make one job. The body compared is every field but idempotency_key, with billing_unit defaulted to credits and JSON key order ignored.
- Credits: the job's credits (the estimate) are reserved at submission, capped by max_credits; an exact price over max_credits, or a reservation over the balance or the team's budget_credits, is 402 BUDGET_EXCEEDED. On success the price of the actual render is charged (the rest of the reservation returns to the balance); failed and cancelled jobs are refunded (refunded: true, credits_charged 0). When the actual price exceeds the reservation (max_credits or an upper-bound estimate), the job ends credit_required: outputs withheld, nothing charged, refunded true.
- Prices (credits): vfx standard: frames x 2 at 1080, x 1 at 720 (an image counts 8 frames); fast mode: half, rounded up. vfx_finish: parent frames x 3 at 2160, x 1 at 1080 (an image counts 8). At least 1 credit.
- States: queued, running, success, failed, cancelled, credit_required (the last four are terminal). error is {code, message} or null; outputs (success only) is {render, source, alpha} signed URLs (72 h, fresh on every read) for vfx and {render} for vfx_finish. progress is 0-100. credits_charged and refunded are null until the job is settled.
- POST /v1/product-jobs/{job_id}/cancel -> the job, cancelled (credits refunded) if it had not finished; a finished job is returned unchanged.
- vfx mode fast renders at 2/3 of the requested resolution (720 -> 480, 1080 -> 720 shorter side) and upscales the render to the requested size with the vfx_finish upscaler: about half the render work, half the credits; fine texture is softer (the upscaler sharpens edges, it does not invent detail).
- vfx_finish: inputs.parent_job_id must be a success-ful standard-mode vfx product job of the same key owner, organization and team; generation API jobs (422 PARENT_NOT_PRODUCT_JOB), fast jobs (422 PARENT_FAST_MODE), finish jobs (422 PARENT_IS_FINISH), unfinished jobs (409 PARENT_NOT_SUCCESSFUL), jobs of another team or key owner (403 PARENT_NOT_OWNED) and of another organization (404 PARENT_NOT_FOUND) are refused. The parent's render is upscaled to target_resolution (shorter side 1080 or 2160; the other side keeps the aspect, rounded to even) with an edge-aware Lanczos-3 kernel and an unsharp mask on the compute device; audio is copied; nothing is uploaded.
- Webhooks: when callback_url is given, the product job object is POSTed on reaching a terminal state, by the same dispatcher, schedule and Standard Webhooks signature as generation jobs, signed with the organization's secret (GET /admin/v1/orgs/{id}/webhook-secret); webhook-id is <job id>_<status>.`

// addProductAPI adds the product API and its operator routes to the
// OpenAPI document.
func (s *API) addProductAPI(doc api.Obj) {
	paths := doc["paths"].(api.Obj)
	schemas := doc["components"].(api.Obj)["schemas"].(api.Obj)
	info := doc["info"].(api.Obj)
	info["description"] = info["description"].(string) + "\n\n" + productDescription
	doc["x-product-error-codes"] = api.ProductErrorCodes

	codesOf := func(codes ...job.Code) []any {
		out := make([]any, len(codes))
		for i, c := range codes {
			out[i] = c
		}
		return out
	}
	perr := func(desc string, codes ...job.Code) api.Obj {
		names := make([]string, len(codes))
		for i, c := range codes {
			names[i] = string(c)
		}
		return api.Response(desc+" Codes: "+strings.Join(names, ", ")+".", api.Obj{
			"allOf": []any{api.Ref("ProductError"), api.Obj{"properties": api.Obj{"detail": api.Obj{"properties": api.Obj{"error_code": api.Obj{"enum": codesOf(codes...)}}}}}},
		})
	}
	team := api.Obj{"name": api.HeaderTeamID, "in": "header", "required": false, "schema": api.Obj{"type": "string"}, "description": "Team context (see the product API notes)."}
	pathParam := func(name, desc string) api.Obj {
		return api.Obj{"name": name, "in": "path", "required": true, "schema": api.Obj{"type": "string"}, "description": desc}
	}
	p401 := perr("Missing, unknown or revoked key.", api.CodeInvalidAPIKey)
	p403auth := perr("Not an organization key, or a foreign team.", api.CodeOrgKeyRequired, api.CodeTeamForbidden)
	p500 := perr("Internal error; resend the same request.", api.CodeInternal, api.CodeUnavailable)
	productTag := []any{"products"}

	var vfxSchemaDoc, finishSchemaDoc any
	_ = json.Unmarshal([]byte(vfxSchema), &vfxSchemaDoc)
	_ = json.Unmarshal([]byte(finishSchema), &finishSchemaDoc)

	paths["/v1/products"] = api.Obj{"get": api.Obj{"operationId": "listProducts", "summary": "List the products.", "tags": productTag,
		"parameters": []any{team},
		"responses":  api.Obj{"200": api.Response("Products.", api.Ref("ProductList")), "401": p401, "403": p403auth, "500": p500}}}
	paths["/v1/products/{product}/models"] = api.Obj{"get": api.Obj{"operationId": "listProductModels", "summary": "A product's models with their input_schema and pricing.", "tags": productTag,
		"parameters": []any{pathParam("product", "vfx or vfx_finish."), team},
		"responses": api.Obj{"200": api.Response("Models.", api.Ref("ModelList")), "401": p401, "403": p403auth,
			"404": perr("No such product.", api.CodeProductNotFound), "500": p500}}}
	paths["/v1/products/{product}/estimate"] = api.Obj{"post": api.Obj{"operationId": "estimateProductJob", "summary": "Estimate a job's credits; nothing is created or reserved.", "tags": productTag,
		"parameters":  []any{pathParam("product", "vfx or vfx_finish."), team},
		"requestBody": api.JSONBody(api.Ref("EstimateRequest")),
		"responses": api.Obj{"200": api.Response("The estimate.", api.Ref("Estimate")),
			"400": perr("A rule of the inputs' media.", api.CodeUnsupportedBillingUnit, api.CodeInvalidURI, api.CodeSourceUnreachable, api.CodeInvalidFileFormat, api.CodeAlphaTypeMismatch, api.CodeAlphaMustBeImage, api.CodeSourceTooLarge, api.CodeVideoTooManyFrames, api.CodeExtremeAspectRatio, api.CodeInvalidKeyframeIndex),
			"401": p401, "403": perr("Key, team, enablement, consent or finish parent.", api.CodeOrgKeyRequired, api.CodeTeamForbidden, api.CodeProductNotEnabled, api.CodeModelConsentRequired, api.CodeParentNotOwned),
			"404": perr("Product, model or finish parent.", api.CodeProductNotFound, api.CodeModelNotFound, api.CodeParentNotFound),
			"409": perr("Finish parent not finished.", api.CodeParentNotSuccessful),
			"413": perr("Body too large.", api.CodeRequestTooLarge),
			"422": perr("Invalid input or finish parent.", api.CodeInvalidInput, api.CodeParentNotProductJob, api.CodeParentFastMode, api.CodeParentIsFinish),
			"500": p500}}}
	paths["/v1/products/{product}/jobs"] = api.Obj{"post": api.Obj{"operationId": "createProductJob", "summary": "Start a product job (idempotent by idempotency_key).", "tags": productTag,
		"parameters":  []any{pathParam("product", "vfx or vfx_finish."), team},
		"requestBody": api.JSONBody(api.Ref("ProductJobRequest")),
		"responses": api.Obj{"202": api.Response("The job: new, or the existing job of this idempotency_key and body.", api.Ref("ProductJob")),
			"400": perr("Billing unit, callback URL or the inputs' media.", api.CodeUnsupportedBillingUnit, api.CodeInvalidCallbackURL, api.CodeInvalidURI, api.CodeSourceUnreachable, api.CodeInvalidFileFormat, api.CodeAlphaTypeMismatch, api.CodeAlphaMustBeImage, api.CodeSourceTooLarge, api.CodeVideoTooManyFrames, api.CodeExtremeAspectRatio, api.CodeInvalidKeyframeIndex),
			"401": p401,
			"402": perr("Balance, team budget or max_credits.", api.CodeBudgetExceeded),
			"403": perr("Key, team, enablement, consent or finish parent.", api.CodeOrgKeyRequired, api.CodeTeamForbidden, api.CodeProductNotEnabled, api.CodeModelConsentRequired, api.CodeParentNotOwned),
			"404": perr("Product, model or finish parent.", api.CodeProductNotFound, api.CodeModelNotFound, api.CodeParentNotFound),
			"409": perr("idempotency_key reused with another body, or finish parent not finished.", api.CodeIdempotencyConflict, api.CodeParentNotSuccessful),
			"413": perr("Body too large.", api.CodeRequestTooLarge),
			"422": perr("Invalid input or finish parent.", api.CodeInvalidInput, api.CodeParentNotProductJob, api.CodeParentFastMode, api.CodeParentIsFinish),
			"500": p500, "503": p500}}}
	paths["/v1/product-jobs/{job_id}"] = api.Obj{"get": api.Obj{"operationId": "getProductJob", "summary": "Read a product job (readable after its product is disabled).", "tags": productTag,
		"parameters": []any{pathParam("job_id", "dap_…"), team},
		"responses": api.Obj{"200": api.Response("The job.", api.Ref("ProductJob")), "401": p401, "403": p403auth,
			"404": perr("No such job of this organization and team.", api.CodeJobNotFound), "500": p500}}}
	paths["/v1/product-jobs/{job_id}/cancel"] = api.Obj{"post": api.Obj{"operationId": "cancelProductJob", "summary": "Cancel a job that has not finished (credits refunded); a finished job is returned unchanged.", "tags": productTag,
		"parameters": []any{pathParam("job_id", "dap_…"), team},
		"responses": api.Obj{"200": api.Response("The job.", api.Ref("ProductJob")), "401": p401, "403": p403auth,
			"404": perr("No such job of this organization and team.", api.CodeJobNotFound), "500": p500}}}

	admin := []any{api.Obj{"AdminToken": []any{}}}
	adminTag := []any{"admin"}
	orgID := pathParam("id", "Organization id (org_…).")
	a404 := api.ErrResp("No such organization.", api.CodeOrgNotFound)
	a400 := api.ErrResp("Invalid argument.", api.CodeInvalidInput)
	aOp := func(id, summary string, params []any, body api.Obj, ok string, okResp api.Obj, extra api.Obj) api.Obj {
		o := api.Obj{"operationId": id, "summary": summary, "security": admin, "tags": adminTag, "parameters": params,
			"responses": api.Obj{ok: okResp, "401": api.RespAdmin401, "404": a404, "500": api.Resp500}}
		if body != nil {
			o["requestBody"] = api.JSONBody(body)
			o["responses"].(api.Obj)["400"] = a400
			o["responses"].(api.Obj)["422"] = api.Resp422
		}
		for k, v := range extra {
			o["responses"].(api.Obj)[k] = v
		}
		return o
	}
	paths["/admin/v1/orgs"] = api.Obj{"post": api.Obj{"operationId": "adminCreateOrg", "summary": "Create an organization.", "security": admin, "tags": adminTag,
		"requestBody": api.JSONBody(api.Obj{"type": "object", "required": []any{"name"}, "additionalProperties": false, "properties": api.Obj{"name": api.Obj{"type": "string", "minLength": 1, "maxLength": 200}}}),
		"responses":   api.Obj{"201": api.Response("The organization, with its id.", api.Ref("Org")), "400": a400, "401": api.RespAdmin401, "422": api.Resp422, "500": api.Resp500}}}
	paths["/admin/v1/orgs/{id}"] = api.Obj{"get": aOp("adminGetOrg", "Read an organization.", []any{orgID}, nil, "200", api.Response("The organization.", api.Ref("Org")), nil)}
	paths["/admin/v1/orgs/{id}/credits"] = api.Obj{
		"post": aOp("adminAddCredits", "Add credits to the organization's balance.", []any{orgID},
			api.Obj{"type": "object", "required": []any{"amount"}, "additionalProperties": false, "properties": api.Obj{"amount": api.Obj{"type": "integer", "minimum": 1}}},
			"200", api.Response("The new credit aggregate.", api.Ref("OrgCredits")), nil),
		"get": aOp("adminGetCredits", "The organization's credit aggregate.", []any{orgID}, nil, "200", api.Response("Credits.", api.Ref("OrgCredits")), nil),
	}
	paths["/admin/v1/orgs/{id}/teams"] = api.Obj{"post": aOp("adminCreateTeam", "Create a team, with an optional credit budget.", []any{orgID},
		api.Obj{"type": "object", "required": []any{"name"}, "additionalProperties": false, "properties": api.Obj{"name": api.Obj{"type": "string"},
			"budget_credits": api.Obj{"type": []any{"integer", "null"}, "minimum": 0, "description": "Cap on the team's reserved plus charged credits; null: none."}}},
		"201", api.Response("The team, with its id.", api.Ref("Team")), nil)}
	paths["/admin/v1/orgs/{id}/keys"] = api.Obj{"post": aOp("adminCreateOrgKey", "Create an organization key (optionally bound to a team); the secret is shown this once.", []any{orgID},
		api.Obj{"type": "object", "additionalProperties": false, "properties": api.Obj{"team_id": api.Obj{"type": "string"}}},
		"201", api.Response("The key.", api.Obj{"type": "object", "required": []any{"id", "key", "org_id"}, "properties": api.Obj{"id": api.StrS("Key id."), "key": api.StrS("Secret, shown once."), "org_id": api.StrS(""), "team_id": api.StrS("When bound to a team.")}}), nil)}
	paths["/admin/v1/orgs/{id}/products/{product}"] = api.Obj{"put": aOp("adminSetProduct", "Enable or disable a product for the organization.",
		[]any{orgID, pathParam("product", "vfx or vfx_finish.")},
		api.Obj{"type": "object", "required": []any{"enabled"}, "additionalProperties": false, "properties": api.Obj{"enabled": api.Obj{"type": "boolean"}}},
		"200", api.Response("The organization.", api.Ref("Org")), api.Obj{"404": api.ErrResp("No such organization or product.", api.CodeOrgNotFound, api.CodeProductNotFound)})}
	paths["/admin/v1/orgs/{id}/models/{model_id}/consent"] = api.Obj{"put": aOp("adminSetConsent", "Grant or withdraw the organization's consent to a model.",
		[]any{orgID, pathParam("model_id", "vfx-2.0.")},
		api.Obj{"type": "object", "required": []any{"granted"}, "additionalProperties": false, "properties": api.Obj{"granted": api.Obj{"type": "boolean"}}},
		"200", api.Response("The organization.", api.Ref("Org")), api.Obj{"404": api.ErrResp("No such organization or model.", api.CodeOrgNotFound, api.CodeModelNotFound)})}
	paths["/admin/v1/orgs/{id}/webhook-secret"] = api.Obj{"get": aOp("adminOrgWebhookSecret", "The organization's webhook signing secret (created on first read).", []any{orgID}, nil,
		"200", api.Response("The secret.", api.Obj{"type": "object", "required": []any{"secret"}, "properties": api.Obj{"secret": api.StrS("whsec_…")}}), nil)}

	allProductCodes := api.SortedCodes(api.ProductErrorCodes)
	schemas["ProductError"] = api.Obj{"type": "object", "required": []any{"detail"}, "properties": api.Obj{"detail": api.Obj{"type": "object",
		"required": []any{"error_code", "message", "unknown_fields", "missing_fields"}, "properties": api.Obj{
			"error_code": api.Obj{"type": "string", "enum": allProductCodes}, "message": api.StrS("Human-readable."),
			"unknown_fields": api.Obj{"type": "array", "items": api.Obj{"type": "string"}}, "missing_fields": api.Obj{"type": "array", "items": api.Obj{"type": "string"}}}}}}
	schemas["ProductList"] = api.Obj{"type": "object", "required": []any{"products"}, "properties": api.Obj{"products": api.Obj{"type": "array", "items": api.Obj{"type": "object",
		"required": []any{"product", "name", "description", "models"}, "properties": api.Obj{"product": api.StrS(""), "name": api.StrS(""), "description": api.StrS(""),
			"models": api.Obj{"type": "array", "items": api.Obj{"type": "string"}}}}}}}
	schemas["ModelList"] = api.Obj{"type": "object", "required": []any{"models"}, "properties": api.Obj{"models": api.Obj{"type": "array", "items": api.Obj{"type": "object",
		"required": []any{"model_id", "description", "input_schema", "pricing"}, "properties": api.Obj{"model_id": api.StrS(""), "description": api.StrS(""),
			"input_schema": api.Obj{"type": "object", "description": "JSON Schema 2020-12 (additionalProperties false)."},
			"pricing":      api.Obj{"type": "object", "properties": api.Obj{"unit": api.Obj{"const": "credits"}, "description": api.StrS(""), "rates": api.Obj{"type": "object"}}}}}}}}
	schemas["VfxInputs"] = vfxSchemaDoc
	schemas["VfxFinishInputs"] = finishSchemaDoc
	schemas["EstimateRequest"] = api.Obj{"type": "object", "required": []any{"model_id"}, "additionalProperties": false, "properties": api.Obj{
		"model_id": api.Obj{"type": "string", "minLength": 1, "maxLength": 256}, "inputs": api.Obj{"oneOf": []any{api.Ref("VfxInputs"), api.Ref("VfxFinishInputs")}},
		"billing_unit": api.Obj{"type": "string", "enum": []any{"usd", "credits"}, "default": "credits"}, "max_credits": api.Obj{"type": []any{"integer", "null"}, "minimum": 0}}}
	schemas["Estimate"] = api.Obj{"type": "object", "required": []any{"credits", "exact", "billing_unit", "breakdown"}, "properties": api.Obj{
		"credits": api.Obj{"type": "integer"}, "exact": api.Obj{"type": "boolean", "description": "false: an upper bound (source not at hand)."},
		"billing_unit": api.Obj{"const": "credits"}, "breakdown": api.Obj{"type": "array", "items": api.Obj{"type": "object", "properties": api.Obj{
			"item": api.StrS(""), "units": api.Obj{"type": "integer"}, "rate": api.Obj{"type": "integer"}, "credits": api.Obj{"type": "integer"}, "note": api.StrS("")}}}}}
	schemas["ProductJobRequest"] = api.Obj{"type": "object", "required": []any{"model_id", "idempotency_key"}, "additionalProperties": false, "properties": api.Obj{
		"model_id":        api.Obj{"type": "string", "minLength": 1, "maxLength": 256},
		"idempotency_key": api.Obj{"type": "string", "minLength": 1, "maxLength": api.MaxIdempotencyKeyLen, "description": "Same key and body: the same job (202); changed body: 409 IDEMPOTENCY_CONFLICT."},
		"inputs":          api.Obj{"description": "Must match the model's input_schema.", "oneOf": []any{api.Ref("VfxInputs"), api.Ref("VfxFinishInputs")}},
		"billing_unit":    api.Obj{"type": "string", "enum": []any{"usd", "credits"}, "default": "credits", "description": "usd: 400 UNSUPPORTED_BILLING_UNIT."},
		"max_credits":     api.Obj{"type": []any{"integer", "null"}, "minimum": 0, "description": "Ceiling on the job's credits."},
		"callback_url":    api.Obj{"type": []any{"string", "null"}, "maxLength": api.MaxCallbackURLLen, "description": "Receives the product job when it reaches a terminal state."}}}
	schemas["ProductJob"] = api.Obj{"type": "object", "required": []any{"id", "product", "model_id", "organization_id", "status", "created_at"}, "properties": api.Obj{
		"id": api.Obj{"type": "string", "pattern": "^dap_"}, "product": api.StrS(""), "model_id": api.StrS(""), "organization_id": api.StrS(""),
		"team_id": api.Nullable("string", ""), "billing_unit": api.Obj{"const": "credits"},
		"status":          api.Obj{"type": "string", "enum": []any{ProductQueued, ProductRunning, ProductSuccess, ProductFailed, ProductCancelled, ProductCreditRequired}},
		"progress":        api.Obj{"type": []any{"number", "null"}, "minimum": 0, "maximum": 100},
		"credits_charged": api.Obj{"type": []any{"integer", "null"}, "description": "null until settled."},
		"refunded":        api.Obj{"type": []any{"boolean", "null"}, "description": "null until settled; true for failed, cancelled and credit_required."},
		"outputs": api.Obj{"type": "object", "description": "success only: signed URLs (72 h). vfx: render, source, alpha, and foreground when inputs.outputs.foreground was true (the clean relit subject, premultiplied: RGBA PNG, or ProRes 4444 .mov with alpha, BT.709 tags); vfx_finish: render.",
			"properties": api.Obj{"render": api.Obj{"type": "string"}, "source": api.Obj{"type": "string"}, "alpha": api.Obj{"type": "string"}, "foreground": api.Obj{"type": "string"}}},
		"error":      api.Obj{"type": []any{"object", "null"}, "required": []any{"code", "message"}, "properties": api.Obj{"code": api.StrS("For example CANCELLED, CREDIT_REQUIRED, SOURCE_UNREACHABLE."), "message": api.StrS("")}},
		"created_at": api.Obj{"type": "string", "format": "date-time"}}}
	schemas["Org"] = api.Obj{"type": "object", "properties": api.Obj{"id": api.Obj{"type": "string", "pattern": "^org_"}, "name": api.StrS(""),
		"products": api.Obj{"type": "object", "additionalProperties": api.Obj{"type": "boolean"}}, "consent": api.Obj{"type": "object", "additionalProperties": api.Obj{"type": "boolean"}},
		"created_at": api.Obj{"type": "string", "format": "date-time"}}}
	schemas["Team"] = api.Obj{"type": "object", "properties": api.Obj{"id": api.Obj{"type": "string", "pattern": "^team_"}, "org_id": api.StrS(""), "name": api.StrS(""),
		"budget_credits": api.Obj{"type": []any{"integer", "null"}}, "created_at": api.Obj{"type": "string", "format": "date-time"}}}
	schemas["OrgCredits"] = api.Obj{"type": "object", "description": "credited = balance + reserved + charged.", "properties": api.Obj{
		"org_id": api.StrS(""), "credited": api.Obj{"type": "integer"}, "balance": api.Obj{"type": "integer"}, "reserved": api.Obj{"type": "integer"}, "charged": api.Obj{"type": "integer"}}}

	doc["webhooks"].(api.Obj)["productJobFinished"] = api.Obj{"post": api.Obj{
		"summary":     "Sent to a product job's callback_url when it reaches success, failed, cancelled or credit_required.",
		"description": "Same dispatcher, schedule (0, +1 s, +5 s, +30 s, +2 min; 10 s per attempt) and Standard Webhooks signature as jobFinished, with the organization's secret (GET /admin/v1/orgs/{id}/webhook-secret). webhook-id is <job id>_<status>.",
		"requestBody": api.JSONBody(api.Ref("ProductJob")),
		"responses":   api.Obj{"2XX": api.Obj{"description": "Delivered."}},
	}}
}
