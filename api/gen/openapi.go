package gen

import (
	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/dispatch"
	"github.com/vfxrender/vfx/job"
)

// intS is an integer property described by desc.
func intS(desc string) api.Obj { return api.Obj{"type": "integer", "description": desc} }

// sseResponse gives r a text/event-stream body.
func sseResponse(r api.Obj) api.Obj {
	r["content"] = api.Obj{"text/event-stream": api.Obj{"schema": api.Obj{"type": "string"}}}
	return r
}

// rateLimited is the 429 of a personal key's limits, with its headers.
func rateLimited(codes ...job.Code) api.Obj {
	r := api.ErrResp("Rate or concurrency limit of a personal key exceeded (organization keys have none). Retry after Retry-After seconds.", codes...)
	r["headers"] = api.Obj{
		"Retry-After":           api.Obj{"$ref": "#/components/headers/Retry-After"},
		"X-RateLimit-Limit":     api.Obj{"$ref": "#/components/headers/X-RateLimit-Limit"},
		"X-RateLimit-Remaining": api.Obj{"$ref": "#/components/headers/X-RateLimit-Remaining"},
		"X-RateLimit-Reset":     api.Obj{"$ref": "#/components/headers/X-RateLimit-Reset"},
	}
	return r
}

// GenerationCodes are the 400 codes of POST /v1/vfx/generations.
var GenerationCodes = []job.Code{
	api.CodeInvalidGenerationType, api.CodeInvalidAlphaMode, api.CodeInvalidMaxResolution, api.CodeMissingStyleInput,
	api.CodeMissingSource, api.CodeMissingAlpha, api.CodePromptTooLong, api.CodeInvalidPrompt, api.CodeInvalidSeed, api.CodeInvalidKeyframeIndex,
	api.CodeInvalidIdempotencyKey, api.CodeInvalidURI, api.CodeSourceUnreachable, api.CodeInvalidFileFormat,
	api.CodeAlphaTypeMismatch, api.CodeAlphaMustBeImage, api.CodeSourceTooLarge, api.CodeVideoTooManyFrames,
	api.CodeExtremeAspectRatio, api.CodeInvalidCallbackURL, api.CodeInvalidOutputFormat, api.CodeInvalidFrameRange, api.CodeInvalidArchive,
	api.CodeInvalidPlacement,
}

// addDoc adds the generation API, its account reads, its webhook and the
// operator routes it serves to the OpenAPI document (api.Server.AddDoc).
func (g *API) addDoc(doc api.Obj) {
	jobSchema := api.Obj{"type": "object", "required": []any{"id", "status", "progress", "generation_type", "alpha_mode", "seed", "created_at", "modified_at", "completed_at"},
		"properties": api.Obj{
			"id":              api.Obj{"type": "string", "pattern": "^vfx_", "description": "Job identifier, prefix vfx_."},
			"status":          api.Obj{"type": "string", "enum": []any{"in_queue", "processing", "completed", "failed"}},
			"progress":        api.Obj{"type": []any{"integer", "null"}, "minimum": 0, "maximum": 100, "description": "Percentage 0-100."},
			"generation_type": api.Obj{"type": []any{"string", "null"}, "enum": []any{"image", "video", nil}},
			"alpha_mode":      api.Obj{"type": []any{"string", "null"}, "enum": []any{"auto", "fill", "custom", "select", nil}},
			"prompt":          api.StrS("The request's prompt; absent when it had none."),
			"frames":          api.Obj{"type": "integer", "minimum": 1, "description": "Frames of the render: the estimate from the source until the job completes, then the count rendered; absent when not known."},
			"output": api.Obj{"type": "object", "description": "Present when status is completed: signed URLs valid 72 hours, freshly signed on every read.",
				"properties": api.Obj{"render": api.Obj{"type": "string", "format": "uri"}, "source": api.Obj{"type": "string", "format": "uri"}, "alpha": api.Obj{"type": "string", "format": "uri"},
					"foreground": api.Obj{"type": "string", "format": "uri", "description": "Extension: present when the request set foreground true."}},
				"patternProperties": api.Obj{"^exr_(composite|foreground|alpha|gain|shadow|wrap|backdrop|normals|grain)$": api.Obj{"type": "string", "format": "uri",
					"description": "Extension: present when the request set output_format exr, one per pass: a ZIP (stored) of the pass's sequence, <pass>/<pass>.<frame>.exr, half-float, ZIP-compressed, linear Rec.709, frames numbered from 1001. The passes and the formula that rebuilds the composite: docs/compositing.md in the repository."}},
				"required": []any{"render", "source", "alpha"}},
			"seed":         api.Obj{"type": "integer", "minimum": 0, "maximum": api.MaxSeed, "description": "Seed used; always present."},
			"error":        api.StrS("Present when status is failed; starts with an error code (for example SOURCE_TOO_LARGE: …)."),
			"created_at":   api.Obj{"type": "string", "format": "date-time"},
			"modified_at":  api.Obj{"type": "string", "format": "date-time", "description": "Time of the last change."},
			"completed_at": api.Obj{"type": []any{"string", "null"}, "format": "date-time", "description": "Time of completion or failure; null before."},
			"webhook":      api.Ref("WebhookState"),
		}}
	genReq := api.Obj{"type": "object", "required": []any{"generation_type", "source_uri", "alpha_mode"},
		"description": "One of prompt or reference_image_uri is required (MISSING_STYLE_INPUT).",
		"properties": api.Obj{
			"generation_type":      api.Obj{"type": "string", "enum": []any{"image", "video"}, "description": "Output type. Image sources: PNG, JPEG, WebP. Video sources: MP4, MOV (H.264 or HEVC), at most 240 frames. At most 2,770,000 pixels; aspect within 1:4..4:1."},
			"source_uri":           api.StrS("vfx://uploads/{id}/{filename}, an https:// URL, or data:{mime};base64,… of at most 50 MB. Extension beyond SPEC.md: for a video, an upload named .zip or .tar holding PNG (8 or 16-bit) or EXR frames, read in name order at 24 fps, within the video limits (240 frames, 2,770,000 pixels, 1:4..4:1), judged from its index before anything is extracted (INVALID_ARCHIVE)."),
			"alpha_mode":           api.Obj{"type": "string", "enum": []any{"auto", "fill", "custom", "select"}},
			"prompt":               api.Obj{"type": "string", "maxLength": 2000, "description": "At most 2000 characters (PROMPT_TOO_LONG)."},
			"reference_image_uri":  api.StrS("Reference image (PNG, JPEG, WebP); same URI forms as source_uri."),
			"alpha_uri":            api.StrS("Matte for custom (same kind, size and frame count as the source) or select (one PNG or JPEG keyframe of the source's size or aspect ratio that selects something); required for those modes, ignored for auto and fill. White or opaque = keep. An image matte may be grey, grey+alpha, RGB or RGBA, 8 or 16 bits per channel: its alpha is the matte where the alpha is not all opaque (nor all transparent), else its luminance (Rec.709 weights; a JPEG's own luma). A video matte's luma (Y) is the matte."),
			"alpha_keyframe_index": api.Obj{"type": "integer", "minimum": 0, "default": 0, "description": "Keyframe of a select matte on a video; 0..frame_count-1; ignored otherwise."},
			"seed":                 api.Obj{"type": "integer", "minimum": 0, "maximum": api.MaxSeed, "description": "Random when omitted."},
			"max_resolution":       api.Obj{"type": "integer", "enum": []any{720, 1080}, "default": 1080},
			"idempotency_key":      api.Obj{"type": "string", "minLength": 1, "maxLength": api.MaxIdempotencyKeyLen, "description": "Same key and body again: 200 with the existing job; different body: 409."},
			"callback_url":         api.Obj{"type": "string", "format": "uri", "maxLength": api.MaxCallbackURLLen, "description": "https:// URL that receives the jobFinished webhook."},
			"foreground":           api.Obj{"type": "boolean", "default": false, "description": "Extension beyond SPEC.md (SPEC clients may leave it out): also return output.foreground, the clean relit subject (no new background, light wrap or shadow) premultiplied with its alpha: an RGBA PNG for an image, a ProRes 4444 .mov (BT.709 tags) for a video."},
			"output_format":        api.Obj{"type": "string", "enum": []any{"mp4", "exr"}, "default": "mp4", "description": "Extension beyond SPEC.md (SPEC clients may leave it out): exr also returns the EXR pass sequences (composite, foreground, alpha, gain, shadow, wrap, backdrop, normals, grain) as output.exr_<pass>, one ZIP each; render, source and alpha are returned as with mp4. Anything else: 400 INVALID_OUTPUT_FORMAT."},
			"placement": api.Obj{"type": "object", "additionalProperties": false,
				"description": "Extension beyond SPEC.md (SPEC clients may leave it out): place the subject (the source and its matte) over the cover-fitted plate, as `vfx render --placement`: scaled by scale about the frame's centre, then moved by x times the frame's width (positive: right) and y times its height (positive: down). The area the subject leaves is plate; the cast and contact shadows follow the placed subject; the output size, the source and alpha outputs are unchanged (alpha stays the source's matte; foreground and the EXR alpha pass are placed). Omitted, or {\"scale\":1,\"x\":0,\"y\":0}: the subject stays where the source has it. Out of range, or with alpha_mode fill: 400 INVALID_PLACEMENT; a member that is not a number, or another member: 422.",
				"properties": api.Obj{
					"scale": api.Obj{"type": "number", "minimum": job.MinPlacementScale, "maximum": job.MaxPlacementScale, "default": 1, "description": "Size of the subject, times the source's (0.25..4)."},
					"x":     api.Obj{"type": "number", "minimum": -job.MaxPlacementOffset, "maximum": job.MaxPlacementOffset, "default": 0, "description": "Horizontal move, a fraction of the frame's width (-1..1, positive: right)."},
					"y":     api.Obj{"type": "number", "minimum": -job.MaxPlacementOffset, "maximum": job.MaxPlacementOffset, "default": 0, "description": "Vertical move, a fraction of the frame's height (-1..1, positive: down)."},
				}},
			"frames": api.Obj{"type": "string", "pattern": "^ *[0-9]+ *- *[0-9]+ *$", "description": "Extension beyond SPEC.md (SPEC clients may leave it out): render only source frames A-B of a video, 0-based and inclusive (\"10-19\" is ten frames), as `vfx render --frames`; the job's frames, cost and outputs are those of the range. 0 <= A <= B < the source's frame count, video only, and a select keyframe (alpha_keyframe_index, still counted from the source's first frame) inside the range; else 400 INVALID_FRAME_RANGE (INVALID_KEYFRAME_INDEX for the keyframe)."},
		}}
	rateHdr := []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}
	admin := []any{api.Obj{"AdminToken": []any{}}}
	idParam := func(name, desc string) []any {
		return []any{api.Obj{"name": name, "in": "path", "required": true, "schema": api.Obj{"type": "string"}, "description": desc}}
	}
	webhookHeaders := api.Obj{
		"webhook-id":        api.Obj{"required": true, "schema": api.Obj{"type": "string"}, "description": "Stable across retries of the same event: <job id>_<status>."},
		"webhook-timestamp": api.Obj{"required": true, "schema": api.Obj{"type": "integer"}, "description": "Unix seconds of this attempt."},
		"webhook-signature": api.Obj{"required": true, "schema": api.Obj{"type": "string"}, "description": "v1,<base64 HMAC-SHA256(key, webhook-id + \".\" + webhook-timestamp + \".\" + body)>, key = base64-decoded part after whsec_ of the account's webhook secret (GET /admin/v1/accounts/{id}/webhook-secret)."},
	}
	paths := api.Obj{
		"/v1/vfx/generations": api.Obj{
			"post": api.Obj{"operationId": "createGeneration", "summary": "Start a generation job.", "tags": []any{"generations"},
				"requestBody": api.Obj{"required": true, "content": api.Obj{"application/json": api.Obj{"schema": api.Ref("GenerationRequest")}}},
				"responses": api.Obj{
					"201": api.Response("Job created.", api.Ref("GenerationJob"), rateHdr...),
					"200": api.Response("idempotency_key already names a job of this account with the same body: that job.", api.Ref("GenerationJob"), rateHdr...),
					"400": api.ErrResp("A rule of the request is broken.", GenerationCodes...),
					"401": api.Resp401,
					"402": api.ErrResp("Spending limit or prepaid balance.", api.CodeHardLimitExceeded, api.CodeInsufficientBalance),
					"409": api.ErrResp("idempotency_key reused with a different body.", api.CodeIdempotencyConflict),
					"408": api.ErrResp("Request body too slow.", api.CodeRequestTimeout),
					"413": api.ErrResp("Request body too large.", api.CodeRequestTooLarge),
					"422": api.Resp422,
					"429": rateLimited(api.CodeRateLimitExceeded, api.CodeConcurrentLimitExceeded),
					"500": api.Resp500, "503": api.Resp500,
				}},
			"get": api.Obj{"operationId": "listGenerations", "summary": "List the caller's generation jobs, newest first.", "tags": []any{"generations"},
				"parameters": []any{
					api.Obj{"name": "limit", "in": "query", "schema": api.Obj{"type": "integer", "minimum": 1, "maximum": 100, "default": 20}},
					api.Obj{"name": "page_token", "in": "query", "schema": api.Obj{"type": []any{"string", "null"}}, "description": "next_page_token of the previous page."},
				},
				"responses": api.Obj{"200": api.Response("A page of jobs.", api.Ref("GenerationList"), rateHdr...), "401": api.Resp401, "422": api.Resp422,
					"429": rateLimited(api.CodeRateLimitExceeded), "500": api.Resp500}},
		},
		"/v1/vfx/generations/{job_id}": api.Obj{
			"get": api.Obj{"operationId": "getGeneration", "summary": "Read a generation job (fresh signed URLs on every call).", "tags": []any{"generations"},
				"parameters": idParam("job_id", "Job id (vfx_…)."),
				"responses": api.Obj{"200": api.Response("The job.", api.Ref("GenerationJob"), rateHdr...), "401": api.Resp401,
					"404": api.ErrResp("No such job of this account.", api.CodeJobNotFound), "429": rateLimited(api.CodeRateLimitExceeded), "500": api.Resp500}},
		},
		"/v1/vfx/events": api.Obj{
			"get": api.Obj{"operationId": "streamGenerations",
				"summary":     "The page of the caller's jobs that GET /v1/vfx/generations would answer, as server-sent events (the web page's live list).",
				"description": "Counts as one read of the read limit when it opens. Events: `jobs` (data: a GenerationList, at once and whenever a job on the page changes status, progress or error, or a job joins the page; signed URLs are fresh in each), `end` (data: {\"reason\": \"max_age\"|\"shutdown\"}; the stream lasts 5 minutes), and `: ping` comments every 15 s. At most 5 open streams per account on one API replica; a sixth gets 429.",
				"tags":        []any{"generations"},
				"parameters": []any{
					api.Obj{"name": "limit", "in": "query", "schema": api.Obj{"type": "integer", "minimum": 1, "maximum": 100, "default": 20}},
					api.Obj{"name": "page_token", "in": "query", "schema": api.Obj{"type": []any{"string", "null"}}, "description": "next_page_token of the previous page."},
				},
				"responses": api.Obj{"200": sseResponse(api.Response("An event stream.", nil, rateHdr...)),
					"401": api.Resp401, "422": api.Resp422, "429": rateLimited(api.CodeRateLimitExceeded), "500": api.Resp500, "503": api.Resp500}},
		},
		"/v1/account/info": api.Obj{
			"get": api.Obj{"operationId": "getAccountInfo", "summary": "Account, live rate-limit usage and limits (read rate class).", "tags": []any{"account"},
				"responses": api.Obj{"200": api.Response("Account info.", api.Ref("AccountInfo"), rateHdr...), "401": api.Resp401, "429": rateLimited(api.CodeRateLimitExceeded), "500": api.Resp500}},
		},
		"/v1/account/billing": api.Obj{
			"get": api.Obj{"operationId": "getAccountBilling", "summary": "Billing period, balance, usage and meters (billing rate class).", "tags": []any{"account"},
				"responses": api.Obj{"200": api.Response("Billing info.", api.Ref("BillingInfo"), rateHdr...), "401": api.Resp401, "429": rateLimited(api.CodeRateLimitExceeded), "500": api.Resp500}},
		},
		"/admin/v1/accounts": api.Obj{
			"post": api.Obj{"operationId": "adminCreateAccount", "summary": "Create an account.", "security": admin, "tags": []any{"admin"},
				"requestBody": api.JSONBody(api.Ref("AccountCreate")),
				"responses": api.Obj{"201": api.Response("The account, with its id.", api.Ref("Account")), "400": api.ErrResp("Invalid argument.", api.CodeInvalidInput),
					"401": api.RespAdmin401, "409": api.ErrResp("E-mail taken.", api.CodeAccountExists), "422": api.Resp422, "500": api.Resp500}},
		},
		"/admin/v1/accounts/{id}": api.Obj{
			"patch": api.Obj{"operationId": "adminUpdateAccount", "summary": "Change limits and balance of an account.", "security": admin, "tags": []any{"admin"},
				"parameters": idParam("id", "Account id."), "requestBody": api.JSONBody(api.Ref("AccountPatch")),
				"responses": api.Obj{"200": api.Response("The account.", api.Ref("Account")), "400": api.ErrResp("Invalid argument.", api.CodeInvalidInput),
					"401": api.RespAdmin401, "404": api.ErrResp("No such account.", api.CodeAccountNotFound), "422": api.Resp422, "500": api.Resp500}},
		},
		"/admin/v1/accounts/{id}/keys": api.Obj{
			"post": api.Obj{"operationId": "adminCreateKey", "summary": "Create an API key; the secret is shown this once.", "security": admin, "tags": []any{"admin"},
				"parameters":  idParam("id", "Account id."),
				"requestBody": api.Obj{"required": false, "content": api.Obj{"application/json": api.Obj{"schema": api.Ref("KeyCreate")}}},
				"responses": api.Obj{"201": api.Response("The key id and secret.", api.Ref("KeyCreated")), "400": api.ErrResp("Invalid kind.", api.CodeInvalidInput),
					"401": api.RespAdmin401, "404": api.ErrResp("No such account.", api.CodeAccountNotFound), "422": api.Resp422, "500": api.Resp500}},
		},
		"/admin/v1/keys/{key_id}": api.Obj{
			"delete": api.Obj{"operationId": "adminRevokeKey", "summary": "Revoke a key; it stops working at once.", "security": admin, "tags": []any{"admin"},
				"parameters": idParam("key_id", "Key id."),
				"responses":  api.Obj{"204": api.Obj{"description": "Revoked."}, "401": api.RespAdmin401, "404": api.ErrResp("No such key.", api.CodeKeyNotFound), "500": api.Resp500}},
		},
		"/admin/v1/accounts/{id}/webhook-secret": api.Obj{
			"get": api.Obj{"operationId": "adminWebhookSecret", "summary": "The account's webhook signing secret (created on first read).", "security": admin, "tags": []any{"admin"},
				"parameters": idParam("id", "Account id."),
				"responses": api.Obj{"200": api.Response("The secret.", api.Obj{"type": "object", "required": []any{"secret"}, "properties": api.Obj{"secret": api.StrS("whsec_<base64 of 32 bytes>.")}}),
					"401": api.RespAdmin401, "404": api.ErrResp("No such account.", api.CodeAccountNotFound), "500": api.Resp500}},
		},
		"/admin/v1/queue": api.Obj{
			"get": api.Obj{"operationId": "adminQueue", "summary": "Queue depth, the workers running jobs and the newest dead letters (the web page's operator view).", "security": admin, "tags": []any{"admin"},
				"responses": api.Obj{"200": api.Response("The queue.", api.Obj{"type": "object",
					"required": []any{"pending", "in_flight", "redelivered", "waiting_pulls", "messages", "dead_letters", "running", "recent_dead", "workers"},
					"properties": api.Obj{
						"pending":       api.Obj{"type": "integer", "description": "Jobs waiting for a worker (queue depth)."},
						"in_flight":     api.Obj{"type": "integer", "description": "Jobs delivered to a worker and not yet settled."},
						"redelivered":   api.Obj{"type": "integer", "description": "Of those, on a second or later attempt."},
						"waiting_pulls": api.Obj{"type": "integer", "description": "Free worker slots waiting for a job."},
						"messages":      api.Obj{"type": "integer", "description": "Messages in VFX_JOBS."},
						"dead_letters":  api.Obj{"type": "integer", "description": "Dead-letter copies in VFX_DLQ."},
						"running": api.Obj{"type": "array", "description": "Claimed jobs (status processing), up to 100.", "items": api.Obj{"type": "object", "properties": api.Obj{
							"job_id": api.StrS("Job id."), "worker": api.StrS("Worker name."), "attempt": api.Obj{"type": "integer"}, "progress": api.Obj{"type": "integer"},
							"started_at": api.Obj{"type": "string", "format": "date-time"}, "heartbeat_at": api.Obj{"type": "string", "format": "date-time"}}}},
						"recent_dead": api.Obj{"type": "array", "description": "The newest dead letters first, up to 20.", "items": api.Obj{"type": "object", "properties": api.Obj{
							"job_id": api.StrS("Job id."), "kind": api.StrS("generation or product."), "subject": api.StrS("Subject of the job message."),
							"stream_seq": api.Obj{"type": "integer"}, "attempts": api.Obj{"type": "integer"}, "reason": api.StrS("Why the job failed for good."),
							"at": api.Obj{"type": "string", "format": "date-time"}}}},
						"workers": api.Obj{"type": "array", "description": "The workers of the running jobs.", "items": api.Obj{"type": "object", "properties": api.Obj{
							"name": api.StrS("Worker name."), "state": api.Obj{"type": "string", "enum": []any{"running", "silent"}, "description": "silent: no heartbeat for two heartbeat periods."},
							"jobs": api.Obj{"type": "array", "items": api.Obj{"type": "string"}}, "last_seen": api.Obj{"type": "string", "format": "date-time"}}}},
					}}),
					"401": api.RespAdmin401, "500": api.Resp500}},
		},
	}
	for p, ops := range paths {
		doc["paths"].(api.Obj)[p] = ops
	}
	doc["webhooks"].(api.Obj)["jobFinished"] = api.Obj{"post": api.Obj{
		"summary":     "Sent to callback_url when a generation job completes or fails.",
		"description": "Attempts at 0, +1 s, +5 s, +30 s, +2 min (5 in all); each must be answered with a 2xx within 10 s; redirects are not followed. After 5 failed attempts the job's webhook.status is failed with last_error. The body carries freshly signed output URLs.",
		"parameters": []any{
			api.Obj{"name": "webhook-id", "in": "header", "required": true, "schema": api.Obj{"type": "string"}, "description": webhookHeaders["webhook-id"].(api.Obj)["description"]},
			api.Obj{"name": "webhook-timestamp", "in": "header", "required": true, "schema": api.Obj{"type": "integer"}, "description": webhookHeaders["webhook-timestamp"].(api.Obj)["description"]},
			api.Obj{"name": "webhook-signature", "in": "header", "required": true, "schema": api.Obj{"type": "string"}, "description": webhookHeaders["webhook-signature"].(api.Obj)["description"]},
		},
		"requestBody": api.JSONBody(api.Ref("WebhookEvent")),
		"responses":   api.Obj{"2XX": api.Obj{"description": "Delivered."}},
	}}
	schemas := api.Obj{
		"GenerationRequest": genReq,
		"GenerationJob":     jobSchema,
		"GenerationList": api.Obj{"type": "object", "required": []any{"jobs", "next_page_token"}, "properties": api.Obj{
			"jobs": api.Obj{"type": "array", "items": api.Ref("GenerationJob")}, "next_page_token": api.Nullable("string", "Pass as page_token; null on the last page.")}},
		"WebhookState": api.Obj{"type": "object", "description": "Present only when callback_url was given.", "required": []any{"status", "attempts", "last_error"},
			"properties": api.Obj{"status": api.Obj{"type": "string", "enum": []any{dispatch.Pending, dispatch.Delivered, dispatch.Failed}},
				"attempts": api.Obj{"type": "integer", "minimum": 0, "maximum": 5}, "last_error": api.StrS("The last failure; empty when none.")}},
		"WebhookEvent": api.Obj{"type": "object", "required": []any{"id", "status", "completed_at"}, "properties": api.Obj{
			"id": api.StrS("Job id."), "status": api.Obj{"type": "string", "enum": []any{"completed", "failed"}},
			"output":       api.Obj{"type": "object", "description": "When completed.", "properties": api.Obj{"render": api.Obj{"type": "string"}, "source": api.Obj{"type": "string"}, "alpha": api.Obj{"type": "string"}}},
			"completed_at": api.Obj{"type": "string", "format": "date-time"}, "error": api.StrS("When failed.")}},
		"UsageLimit": api.Obj{"type": "object", "required": []any{"usage", "limit"}, "properties": api.Obj{"usage": intS("Live usage."), "limit": intS("The account's limit (personal keys).")}},
		"AccountInfo": api.Obj{"type": "object", "required": []any{"email", "billing_type", "spending_limit", "rate_limits"}, "properties": api.Obj{
			"email": api.StrS(""), "billing_type": api.Obj{"type": "string", "enum": []any{account.BillingPrepaid, account.BillingPostpaid}},
			"spending_limit": api.Obj{"type": "number", "description": "Dollars per billing period."},
			"rate_limits": api.Obj{"type": "object", "required": []any{"rpm", "concurrency"}, "properties": api.Obj{
				"rpm": api.Ref("UsageLimit"), "concurrency": api.Ref("UsageLimit")}}}},
		"BillingInfo": api.Obj{"type": "object", "required": []any{"billing_period_start", "billing_period_end", "prepaid_balance", "current_period_usage", "meters"}, "properties": api.Obj{
			"billing_period_start": intS("Unix seconds (calendar month, UTC)."), "billing_period_end": intS("Unix seconds."),
			"prepaid_balance": api.Obj{"type": "number"}, "current_period_usage": api.Obj{"type": "number", "description": "Dollars charged in the period."},
			"meters": api.Obj{"type": "array", "items": api.Ref("Meter")}}},
		"Meter": api.Obj{"type": "object", "required": []any{"id", "label", "unit", "total_usage"}, "properties": api.Obj{
			"id":    api.Obj{"type": "string", "enum": []any{account.MeterImage720p, account.MeterImage1080p, account.MeterVideo720p, account.MeterVideo1080p}},
			"label": api.StrS(""), "unit": api.Obj{"type": "string", "enum": []any{"image", "frame"}}, "total_usage": api.Obj{"type": "number"}}},
		"RateLimits": api.Obj{"type": "object", "properties": api.Obj{"rpm": intS("Submissions per minute."), "read_rpm": intS("Reads per minute."),
			"billing_rpm": intS("Billing reads per minute."), "concurrency": intS("Jobs in flight.")}},
		"Account": api.Obj{"type": "object", "properties": api.Obj{"id": api.Obj{"type": "string", "pattern": "^acct_"}, "email": api.StrS(""),
			"billing_type":   api.Obj{"type": "string", "enum": []any{account.BillingPrepaid, account.BillingPostpaid}},
			"spending_limit": api.Obj{"type": "number"}, "prepaid_balance": api.Obj{"type": "number"}, "rate_limits": api.Ref("RateLimits"),
			"created_at": api.Obj{"type": "string", "format": "date-time"}}},
		"AccountCreate": api.Obj{"type": "object", "required": []any{"email"}, "additionalProperties": false, "properties": api.Obj{
			"email": api.StrS(""), "billing_type": api.Obj{"type": "string", "enum": []any{account.BillingPrepaid, account.BillingPostpaid}},
			"spending_limit": api.Obj{"type": "number", "minimum": 0, "default": account.DefaultSpendingLimit}, "prepaid_balance": api.Obj{"type": "number", "minimum": 0}}},
		"AccountPatch": api.Obj{"type": "object", "additionalProperties": false, "properties": api.Obj{
			"spending_limit": api.Obj{"type": "number", "minimum": 0}, "prepaid_balance": api.Obj{"type": "number", "minimum": 0}, "rate_limits": api.Ref("RateLimits")}},
		"KeyCreate": api.Obj{"type": "object", "additionalProperties": false, "properties": api.Obj{
			"kind": api.Obj{"type": "string", "enum": []any{string(account.KindPersonal), string(account.KindOrganization)}, "default": string(account.KindPersonal)}}},
		"KeyCreated": api.Obj{"type": "object", "required": []any{"id", "key"}, "properties": api.Obj{"id": api.StrS("Key id."), "key": api.StrS("The secret, shown this once."),
			"kind": api.Obj{"type": "string", "enum": []any{string(account.KindPersonal), string(account.KindOrganization)}}}},
	}
	for name, schema := range schemas {
		doc["components"].(api.Obj)["schemas"].(api.Obj)[name] = schema
	}
}
