package api

import (
	"encoding/json"
	"strings"

	"github.com/vfxrender/vfx/job"
)

// productErrorCodes describes every code of the product API, answered in
// the detail shape {"detail":{"error_code","message","unknown_fields",
// "missing_fields"}}.
var productErrorCodes = map[job.Code]string{
	CodeInvalidAPIKey:          "401: the x-api-key header is missing, unknown or revoked.",
	CodeOrgKeyRequired:         "403: the key is not an organization key of the product API (personal keys, and account keys of kind organization, are refused).",
	CodeTeamForbidden:          "403: X-Service-Team-Id names a team that is not the key's team, or not a team of the key's organization.",
	CodeProductNotEnabled:      "403: the product is not enabled for the organization (existing jobs stay readable).",
	CodeModelConsentRequired:   "403: the organization has not consented to the model.",
	CodeParentNotOwned:         "403 (vfx_finish): the parent job belongs to another key owner or team of the organization.",
	CodeProductNotFound:        "404: no such product.",
	CodeModelNotFound:          "404: no such model of the product.",
	CodeJobNotFound:            "404: no such product job of this organization and team (existence is never revealed).",
	CodeParentNotFound:         "404 (vfx_finish): no such parent product job of this organization.",
	CodeUnsupportedBillingUnit: "400: billing_unit usd; product endpoints bill credits only: omit billing_unit or use credits.",
	CodeInvalidCallbackURL:     "400: callback_url not an absolute https:// URL of at most 2048 characters, or its host resolves to a non-public address.",
	CodeInvalidURI:             "400: an input URI of no accepted form, or an https:// host that resolves to a non-public address.",
	CodeSourceUnreachable:      "400: the named upload does not exist or belongs to another organization or team (the same answer), or an https:// host does not resolve.",
	CodeInvalidFileFormat:      "400: media of no accepted format (judged by content, when at hand).",
	CodeAlphaTypeMismatch:      "400: a custom matte of the wrong kind, size or frame count, or a select keyframe of another aspect ratio or that selects nothing (its alpha and its colour both empty).",
	CodeAlphaMustBeImage:       "400: alpha_mode select needs a keyframe image.",
	CodeSourceTooLarge:         "400: source over 2,770,000 pixels, or an inline data: URI over 50 MB.",
	CodeVideoTooManyFrames:     "400: video over 240 frames.",
	CodeExtremeAspectRatio:     "400: aspect ratio outside 1:4..4:1.",
	CodeInvalidKeyframeIndex:   "400: alpha_keyframe_index not below the video's frame count.",
	CodeBudgetExceeded:         "402: the organization's credit balance, the team's budget_credits or the request's max_credits does not cover the job's credits; nothing was reserved.",
	CodeIdempotencyConflict:    "409: idempotency_key already names a job of this organization and team submitted with a different body; nothing was created. Resend the original body, or use a new key only for a new job.",
	CodeParentNotSuccessful:    "409 (vfx_finish): the parent job has not reached success.",
	CodeInvalidInput:           "422: malformed JSON (a key repeated in any object included), an unknown or missing top-level field, a wrong type, inputs that do not match the model's input_schema, an empty inputs.prompt with no inputs.reference_image, or inputs.prompt not valid UTF-8 or holding a control character (tab, line feed and carriage return are allowed); unknown_fields and missing_fields list the field names.",
	CodeParentNotProductJob:    "422 (vfx_finish): the parent is a generation API job (vfx_…), not a vfx product job.",
	CodeParentFastMode:         "422 (vfx_finish): the parent is a fast-mode vfx job; only standard-mode jobs can be finished.",
	CodeParentIsFinish:         "422 (vfx_finish): the parent is itself a vfx_finish job.",
	CodeMethodNotAllowed:       "405: the path exists but does not serve the request's method; the Allow header lists the methods it does.",
	CodeRequestTooLarge:        "413: request body over the cap.",
	CodeRequestTimeout:         "408: the request body arrived slower than 32 KiB/s on average after its first 10 s, or took over 10 minutes.",
	CodeInternal:               "500: internal error; the outcome is uncertain: resend the exact request with the same idempotency_key.",
	CodeUnavailable:            "503 (with Retry-After): NATS unreachable for a moment (the job could not be queued; nothing was created, the reservation is released), a job with the same idempotency_key is still being created, or the server is reading its limit of request body bytes at once; resend the same request.",
}

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
func (s *Server) addProductAPI(doc obj) {
	paths := doc["paths"].(obj)
	schemas := doc["components"].(obj)["schemas"].(obj)
	info := doc["info"].(obj)
	info["description"] = info["description"].(string) + "\n\n" + productDescription
	doc["x-product-error-codes"] = productErrorCodes

	codesOf := func(codes ...job.Code) []any {
		out := make([]any, len(codes))
		for i, c := range codes {
			out[i] = c
		}
		return out
	}
	perr := func(desc string, codes ...job.Code) obj {
		names := make([]string, len(codes))
		for i, c := range codes {
			names[i] = string(c)
		}
		return response(desc+" Codes: "+strings.Join(names, ", ")+".", obj{
			"allOf": []any{ref("ProductError"), obj{"properties": obj{"detail": obj{"properties": obj{"error_code": obj{"enum": codesOf(codes...)}}}}}},
		})
	}
	team := obj{"name": HeaderTeamID, "in": "header", "required": false, "schema": obj{"type": "string"}, "description": "Team context (see the product API notes)."}
	pathParam := func(name, desc string) obj {
		return obj{"name": name, "in": "path", "required": true, "schema": obj{"type": "string"}, "description": desc}
	}
	p401 := perr("Missing, unknown or revoked key.", CodeInvalidAPIKey)
	p403auth := perr("Not an organization key, or a foreign team.", CodeOrgKeyRequired, CodeTeamForbidden)
	p500 := perr("Internal error; resend the same request.", CodeInternal, CodeUnavailable)
	productTag := []any{"products"}

	var vfxSchemaDoc, finishSchemaDoc any
	_ = json.Unmarshal([]byte(vfxSchema), &vfxSchemaDoc)
	_ = json.Unmarshal([]byte(finishSchema), &finishSchemaDoc)

	paths["/v1/products"] = obj{"get": obj{"operationId": "listProducts", "summary": "List the products.", "tags": productTag,
		"parameters": []any{team},
		"responses":  obj{"200": response("Products.", ref("ProductList")), "401": p401, "403": p403auth, "500": p500}}}
	paths["/v1/products/{product}/models"] = obj{"get": obj{"operationId": "listProductModels", "summary": "A product's models with their input_schema and pricing.", "tags": productTag,
		"parameters": []any{pathParam("product", "vfx or vfx_finish."), team},
		"responses": obj{"200": response("Models.", ref("ModelList")), "401": p401, "403": p403auth,
			"404": perr("No such product.", CodeProductNotFound), "500": p500}}}
	paths["/v1/products/{product}/estimate"] = obj{"post": obj{"operationId": "estimateProductJob", "summary": "Estimate a job's credits; nothing is created or reserved.", "tags": productTag,
		"parameters":  []any{pathParam("product", "vfx or vfx_finish."), team},
		"requestBody": jsonBody(ref("EstimateRequest")),
		"responses": obj{"200": response("The estimate.", ref("Estimate")),
			"400": perr("A rule of the inputs' media.", CodeUnsupportedBillingUnit, CodeInvalidURI, CodeSourceUnreachable, CodeInvalidFileFormat, CodeAlphaTypeMismatch, CodeAlphaMustBeImage, CodeSourceTooLarge, CodeVideoTooManyFrames, CodeExtremeAspectRatio, CodeInvalidKeyframeIndex),
			"401": p401, "403": perr("Key, team, enablement, consent or finish parent.", CodeOrgKeyRequired, CodeTeamForbidden, CodeProductNotEnabled, CodeModelConsentRequired, CodeParentNotOwned),
			"404": perr("Product, model or finish parent.", CodeProductNotFound, CodeModelNotFound, CodeParentNotFound),
			"409": perr("Finish parent not finished.", CodeParentNotSuccessful),
			"413": perr("Body too large.", CodeRequestTooLarge),
			"422": perr("Invalid input or finish parent.", CodeInvalidInput, CodeParentNotProductJob, CodeParentFastMode, CodeParentIsFinish),
			"500": p500}}}
	paths["/v1/products/{product}/jobs"] = obj{"post": obj{"operationId": "createProductJob", "summary": "Start a product job (idempotent by idempotency_key).", "tags": productTag,
		"parameters":  []any{pathParam("product", "vfx or vfx_finish."), team},
		"requestBody": jsonBody(ref("ProductJobRequest")),
		"responses": obj{"202": response("The job: new, or the existing job of this idempotency_key and body.", ref("ProductJob")),
			"400": perr("Billing unit, callback URL or the inputs' media.", CodeUnsupportedBillingUnit, CodeInvalidCallbackURL, CodeInvalidURI, CodeSourceUnreachable, CodeInvalidFileFormat, CodeAlphaTypeMismatch, CodeAlphaMustBeImage, CodeSourceTooLarge, CodeVideoTooManyFrames, CodeExtremeAspectRatio, CodeInvalidKeyframeIndex),
			"401": p401,
			"402": perr("Balance, team budget or max_credits.", CodeBudgetExceeded),
			"403": perr("Key, team, enablement, consent or finish parent.", CodeOrgKeyRequired, CodeTeamForbidden, CodeProductNotEnabled, CodeModelConsentRequired, CodeParentNotOwned),
			"404": perr("Product, model or finish parent.", CodeProductNotFound, CodeModelNotFound, CodeParentNotFound),
			"409": perr("idempotency_key reused with another body, or finish parent not finished.", CodeIdempotencyConflict, CodeParentNotSuccessful),
			"413": perr("Body too large.", CodeRequestTooLarge),
			"422": perr("Invalid input or finish parent.", CodeInvalidInput, CodeParentNotProductJob, CodeParentFastMode, CodeParentIsFinish),
			"500": p500, "503": p500}}}
	paths["/v1/product-jobs/{job_id}"] = obj{"get": obj{"operationId": "getProductJob", "summary": "Read a product job (readable after its product is disabled).", "tags": productTag,
		"parameters": []any{pathParam("job_id", "dap_…"), team},
		"responses": obj{"200": response("The job.", ref("ProductJob")), "401": p401, "403": p403auth,
			"404": perr("No such job of this organization and team.", CodeJobNotFound), "500": p500}}}
	paths["/v1/product-jobs/{job_id}/cancel"] = obj{"post": obj{"operationId": "cancelProductJob", "summary": "Cancel a job that has not finished (credits refunded); a finished job is returned unchanged.", "tags": productTag,
		"parameters": []any{pathParam("job_id", "dap_…"), team},
		"responses": obj{"200": response("The job.", ref("ProductJob")), "401": p401, "403": p403auth,
			"404": perr("No such job of this organization and team.", CodeJobNotFound), "500": p500}}}

	admin := []any{obj{"AdminToken": []any{}}}
	adminTag := []any{"admin"}
	orgID := pathParam("id", "Organization id (org_…).")
	a404 := errResp("No such organization.", CodeOrgNotFound)
	a400 := errResp("Invalid argument.", CodeInvalidInput)
	aOp := func(id, summary string, params []any, body obj, ok string, okResp obj, extra obj) obj {
		o := obj{"operationId": id, "summary": summary, "security": admin, "tags": adminTag, "parameters": params,
			"responses": obj{ok: okResp, "401": respAdmin401, "404": a404, "500": resp500}}
		if body != nil {
			o["requestBody"] = jsonBody(body)
			o["responses"].(obj)["400"] = a400
			o["responses"].(obj)["422"] = resp422
		}
		for k, v := range extra {
			o["responses"].(obj)[k] = v
		}
		return o
	}
	paths["/admin/v1/orgs"] = obj{"post": obj{"operationId": "adminCreateOrg", "summary": "Create an organization.", "security": admin, "tags": adminTag,
		"requestBody": jsonBody(obj{"type": "object", "required": []any{"name"}, "additionalProperties": false, "properties": obj{"name": obj{"type": "string", "minLength": 1, "maxLength": 200}}}),
		"responses":   obj{"201": response("The organization, with its id.", ref("Org")), "400": a400, "401": respAdmin401, "422": resp422, "500": resp500}}}
	paths["/admin/v1/orgs/{id}"] = obj{"get": aOp("adminGetOrg", "Read an organization.", []any{orgID}, nil, "200", response("The organization.", ref("Org")), nil)}
	paths["/admin/v1/orgs/{id}/credits"] = obj{
		"post": aOp("adminAddCredits", "Add credits to the organization's balance.", []any{orgID},
			obj{"type": "object", "required": []any{"amount"}, "additionalProperties": false, "properties": obj{"amount": obj{"type": "integer", "minimum": 1}}},
			"200", response("The new credit aggregate.", ref("OrgCredits")), nil),
		"get": aOp("adminGetCredits", "The organization's credit aggregate.", []any{orgID}, nil, "200", response("Credits.", ref("OrgCredits")), nil),
	}
	paths["/admin/v1/orgs/{id}/teams"] = obj{"post": aOp("adminCreateTeam", "Create a team, with an optional credit budget.", []any{orgID},
		obj{"type": "object", "required": []any{"name"}, "additionalProperties": false, "properties": obj{"name": obj{"type": "string"},
			"budget_credits": obj{"type": []any{"integer", "null"}, "minimum": 0, "description": "Cap on the team's reserved plus charged credits; null: none."}}},
		"201", response("The team, with its id.", ref("Team")), nil)}
	paths["/admin/v1/orgs/{id}/keys"] = obj{"post": aOp("adminCreateOrgKey", "Create an organization key (optionally bound to a team); the secret is shown this once.", []any{orgID},
		obj{"type": "object", "additionalProperties": false, "properties": obj{"team_id": obj{"type": "string"}}},
		"201", response("The key.", obj{"type": "object", "required": []any{"id", "key", "org_id"}, "properties": obj{"id": strS("Key id."), "key": strS("Secret, shown once."), "org_id": strS(""), "team_id": strS("When bound to a team.")}}), nil)}
	paths["/admin/v1/orgs/{id}/products/{product}"] = obj{"put": aOp("adminSetProduct", "Enable or disable a product for the organization.",
		[]any{orgID, pathParam("product", "vfx or vfx_finish.")},
		obj{"type": "object", "required": []any{"enabled"}, "additionalProperties": false, "properties": obj{"enabled": obj{"type": "boolean"}}},
		"200", response("The organization.", ref("Org")), obj{"404": errResp("No such organization or product.", CodeOrgNotFound, CodeProductNotFound)})}
	paths["/admin/v1/orgs/{id}/models/{model_id}/consent"] = obj{"put": aOp("adminSetConsent", "Grant or withdraw the organization's consent to a model.",
		[]any{orgID, pathParam("model_id", "vfx-2.0.")},
		obj{"type": "object", "required": []any{"granted"}, "additionalProperties": false, "properties": obj{"granted": obj{"type": "boolean"}}},
		"200", response("The organization.", ref("Org")), obj{"404": errResp("No such organization or model.", CodeOrgNotFound, CodeModelNotFound)})}
	paths["/admin/v1/orgs/{id}/webhook-secret"] = obj{"get": aOp("adminOrgWebhookSecret", "The organization's webhook signing secret (created on first read).", []any{orgID}, nil,
		"200", response("The secret.", obj{"type": "object", "required": []any{"secret"}, "properties": obj{"secret": strS("whsec_…")}}), nil)}

	allProductCodes := make([]any, 0, len(productErrorCodes))
	for c := range productErrorCodes {
		allProductCodes = append(allProductCodes, c)
	}
	schemas["ProductError"] = obj{"type": "object", "required": []any{"detail"}, "properties": obj{"detail": obj{"type": "object",
		"required": []any{"error_code", "message", "unknown_fields", "missing_fields"}, "properties": obj{
			"error_code": obj{"type": "string", "enum": allProductCodes}, "message": strS("Human-readable."),
			"unknown_fields": obj{"type": "array", "items": obj{"type": "string"}}, "missing_fields": obj{"type": "array", "items": obj{"type": "string"}}}}}}
	schemas["ProductList"] = obj{"type": "object", "required": []any{"products"}, "properties": obj{"products": obj{"type": "array", "items": obj{"type": "object",
		"required": []any{"product", "name", "description", "models"}, "properties": obj{"product": strS(""), "name": strS(""), "description": strS(""),
			"models": obj{"type": "array", "items": obj{"type": "string"}}}}}}}
	schemas["ModelList"] = obj{"type": "object", "required": []any{"models"}, "properties": obj{"models": obj{"type": "array", "items": obj{"type": "object",
		"required": []any{"model_id", "description", "input_schema", "pricing"}, "properties": obj{"model_id": strS(""), "description": strS(""),
			"input_schema": obj{"type": "object", "description": "JSON Schema 2020-12 (additionalProperties false)."},
			"pricing":      obj{"type": "object", "properties": obj{"unit": obj{"const": "credits"}, "description": strS(""), "rates": obj{"type": "object"}}}}}}}}
	schemas["VfxInputs"] = vfxSchemaDoc
	schemas["VfxFinishInputs"] = finishSchemaDoc
	schemas["EstimateRequest"] = obj{"type": "object", "required": []any{"model_id"}, "additionalProperties": false, "properties": obj{
		"model_id": obj{"type": "string", "minLength": 1, "maxLength": 256}, "inputs": obj{"oneOf": []any{ref("VfxInputs"), ref("VfxFinishInputs")}},
		"billing_unit": obj{"type": "string", "enum": []any{"usd", "credits"}, "default": "credits"}, "max_credits": obj{"type": []any{"integer", "null"}, "minimum": 0}}}
	schemas["Estimate"] = obj{"type": "object", "required": []any{"credits", "exact", "billing_unit", "breakdown"}, "properties": obj{
		"credits": obj{"type": "integer"}, "exact": obj{"type": "boolean", "description": "false: an upper bound (source not at hand)."},
		"billing_unit": obj{"const": "credits"}, "breakdown": obj{"type": "array", "items": obj{"type": "object", "properties": obj{
			"item": strS(""), "units": obj{"type": "integer"}, "rate": obj{"type": "integer"}, "credits": obj{"type": "integer"}, "note": strS("")}}}}}
	schemas["ProductJobRequest"] = obj{"type": "object", "required": []any{"model_id", "idempotency_key"}, "additionalProperties": false, "properties": obj{
		"model_id":        obj{"type": "string", "minLength": 1, "maxLength": 256},
		"idempotency_key": obj{"type": "string", "minLength": 1, "maxLength": MaxIdempotencyKeyLen, "description": "Same key and body: the same job (202); changed body: 409 IDEMPOTENCY_CONFLICT."},
		"inputs":          obj{"description": "Must match the model's input_schema.", "oneOf": []any{ref("VfxInputs"), ref("VfxFinishInputs")}},
		"billing_unit":    obj{"type": "string", "enum": []any{"usd", "credits"}, "default": "credits", "description": "usd: 400 UNSUPPORTED_BILLING_UNIT."},
		"max_credits":     obj{"type": []any{"integer", "null"}, "minimum": 0, "description": "Ceiling on the job's credits."},
		"callback_url":    obj{"type": []any{"string", "null"}, "maxLength": MaxCallbackURLLen, "description": "Receives the product job when it reaches a terminal state."}}}
	schemas["ProductJob"] = obj{"type": "object", "required": []any{"id", "product", "model_id", "organization_id", "status", "created_at"}, "properties": obj{
		"id": obj{"type": "string", "pattern": "^dap_"}, "product": strS(""), "model_id": strS(""), "organization_id": strS(""),
		"team_id": nullable("string", ""), "billing_unit": obj{"const": "credits"},
		"status":          obj{"type": "string", "enum": []any{ProductQueued, ProductRunning, ProductSuccess, ProductFailed, ProductCancelled, ProductCreditRequired}},
		"progress":        obj{"type": []any{"number", "null"}, "minimum": 0, "maximum": 100},
		"credits_charged": obj{"type": []any{"integer", "null"}, "description": "null until settled."},
		"refunded":        obj{"type": []any{"boolean", "null"}, "description": "null until settled; true for failed, cancelled and credit_required."},
		"outputs": obj{"type": "object", "description": "success only: signed URLs (72 h). vfx: render, source, alpha, and foreground when inputs.outputs.foreground was true (the clean relit subject, premultiplied: RGBA PNG, or ProRes 4444 .mov with alpha, BT.709 tags); vfx_finish: render.",
			"properties": obj{"render": obj{"type": "string"}, "source": obj{"type": "string"}, "alpha": obj{"type": "string"}, "foreground": obj{"type": "string"}}},
		"error":      obj{"type": []any{"object", "null"}, "required": []any{"code", "message"}, "properties": obj{"code": strS("For example CANCELLED, CREDIT_REQUIRED, SOURCE_UNREACHABLE."), "message": strS("")}},
		"created_at": obj{"type": "string", "format": "date-time"}}}
	schemas["Org"] = obj{"type": "object", "properties": obj{"id": obj{"type": "string", "pattern": "^org_"}, "name": strS(""),
		"products": obj{"type": "object", "additionalProperties": obj{"type": "boolean"}}, "consent": obj{"type": "object", "additionalProperties": obj{"type": "boolean"}},
		"created_at": obj{"type": "string", "format": "date-time"}}}
	schemas["Team"] = obj{"type": "object", "properties": obj{"id": obj{"type": "string", "pattern": "^team_"}, "org_id": strS(""), "name": strS(""),
		"budget_credits": obj{"type": []any{"integer", "null"}}, "created_at": obj{"type": "string", "format": "date-time"}}}
	schemas["OrgCredits"] = obj{"type": "object", "description": "credited = balance + reserved + charged.", "properties": obj{
		"org_id": strS(""), "credited": obj{"type": "integer"}, "balance": obj{"type": "integer"}, "reserved": obj{"type": "integer"}, "charged": obj{"type": "integer"}}}

	doc["webhooks"].(obj)["productJobFinished"] = obj{"post": obj{
		"summary":     "Sent to a product job's callback_url when it reaches success, failed, cancelled or credit_required.",
		"description": "Same dispatcher, schedule (0, +1 s, +5 s, +30 s, +2 min; 10 s per attempt) and Standard Webhooks signature as jobFinished, with the organization's secret (GET /admin/v1/orgs/{id}/webhook-secret). webhook-id is <job id>_<status>.",
		"requestBody": jsonBody(ref("ProductJob")),
		"responses":   obj{"2XX": obj{"description": "Delivered."}},
	}}
}
