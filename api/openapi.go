package api

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/job"
)

// openAPI is GET /v1/openapi.json (no key needed).
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) error {
	WriteJSON(w, http.StatusOK, s.OpenAPI())
	return nil
}

// Obj is a JSON object of the document.
type Obj = map[string]any

func Ref(name string) Obj { return Obj{"$ref": "#/components/schemas/" + name} }

func StrS(desc string) Obj { return Obj{"type": "string", "description": desc} }

func Nullable(t string, desc string) Obj {
	return Obj{"type": []any{t, "null"}, "description": desc}
}

func JSONBody(schema Obj) Obj {
	return Obj{"content": Obj{"application/json": Obj{"schema": schema}}}
}

func Response(desc string, schema Obj, headers ...string) Obj {
	r := Obj{"description": desc}
	if schema != nil {
		r["content"] = Obj{"application/json": Obj{"schema": schema}}
	}
	if len(headers) > 0 {
		h := Obj{}
		for _, name := range headers {
			h[name] = Obj{"$ref": "#/components/headers/" + name}
		}
		r["headers"] = h
	}
	return r
}

// ErrResp is an envelope error response whose codes are listed.
func ErrResp(desc string, codes ...job.Code) Obj {
	names := make([]string, len(codes))
	for i, c := range codes {
		names[i] = string(c)
	}
	return Response(desc+" Codes: "+strings.Join(names, ", ")+".", Obj{
		"allOf": []any{Ref("ErrorEnvelope"), Obj{"properties": Obj{"error": Obj{"properties": Obj{"code": Obj{"enum": codes}}}}}},
	})
}

var (
	Resp401      = ErrResp("Missing, unknown or revoked x-api-key.", CodeInvalidAPIKey)
	Resp422      = Response("Malformed JSON, a wrong JSON type or a bad query parameter (FastAPI-style detail array).", Ref("ValidationErrorBody"))
	RespAdmin401 = ErrResp("Missing or wrong operator token.", CodeUnauthorized)
	Resp500      = ErrResp("Internal error: the outcome is uncertain; resend the exact request with the same idempotency_key.", CodeInternal, CodeUnavailable)
)

// SortedCodes lists the codes of m in order, for an enum: the document is
// the same bytes on every request.
func SortedCodes(m map[job.Code]string) []any {
	codes := slices.Sorted(maps.Keys(m))
	out := make([]any, len(codes))
	for i, c := range codes {
		out[i] = c
	}
	return out
}

// ErrorCodes describes every error code the API answers.
var ErrorCodes = map[job.Code]string{
	CodeInvalidAPIKey:           "401: the x-api-key header is missing, unknown or revoked.",
	CodeJobNotFound:             "404: no such job, or it belongs to another account (existence is never revealed; never 403).",
	CodeRateLimitExceeded:       "429: personal-key requests-per-minute limit (write, read or billing class) exceeded; Retry-After and X-RateLimit-* headers are set. On POST /v1/uploads (any key): the owner's open uploads (50) or bytes of the last 24 hours (20 GiB) are at their limit; Retry-After is set.",
	CodeConcurrentLimitExceeded: "429: personal-key limit on generations in flight reached; Retry-After and X-RateLimit-* headers are set.",
	CodeHardLimitExceeded:       "402: the job's estimated cost would push the billing period's usage (with jobs in flight) over spending_limit; the message gives current usage and the job's cost.",
	CodeInsufficientBalance:     "402: a prepaid account's balance does not cover the job's estimated cost (with jobs in flight).",
	CodeIdempotencyConflict:     "409: idempotency_key already names a job of this account that was submitted with a different body; nothing was created.",
	CodeInvalidGenerationType:   "400: generation_type missing or not image|video.",
	CodeInvalidAlphaMode:        "400: alpha_mode missing or not auto|fill|custom|select.",
	CodeInvalidMaxResolution:    "400: max_resolution is not 720 or 1080.",
	CodeMissingStyleInput:       "400: neither prompt nor reference_image_uri given.",
	CodeMissingSource:           "400: source_uri missing.",
	CodeMissingAlpha:            "400: alpha_mode custom or select without alpha_uri.",
	CodePromptTooLong:           "400: prompt longer than 2000 characters.",
	CodeInvalidPrompt:           "400: prompt not valid UTF-8, or holding a control character (C0 other than tab, line feed and carriage return; DEL; C1 U+0080-U+009F).",
	CodeInvalidSeed:             "400: seed outside 0..4294967295.",
	CodeInvalidKeyframeIndex:    "400: alpha_keyframe_index below 0, or (select on a video at hand) not below the frame count.",
	CodeInvalidIdempotencyKey:   "400: idempotency_key not 1-256 characters.",
	CodeInvalidURI:              "400: a URI of no accepted form (vfx://uploads/{id}/{filename}, https://, data:{mime};base64,…), or an https:// host that resolves to a loopback, private, link-local or metadata address.",
	CodeSourceUnreachable:       "400: the named upload does not exist or belongs to someone else (the same answer, word for word), or an https:// host does not resolve. Jobs whose https:// input cannot be fetched end failed with this code.",
	CodeInvalidFileFormat:       "400: the media is not of an accepted format (by content), or its content is not the type its upload filename or data: header declares (one sniffing rule; MP4 and QuickTime stand for each other), or not of the kind generation_type asks for, or a reference image that is not PNG/JPEG/WebP.",
	CodeAlphaTypeMismatch:       "400: a custom matte of the wrong kind, size or frame count for the source, or a select keyframe that is not a PNG/JPEG of the source's size or aspect ratio, or that selects nothing (its alpha and its colour both empty).",
	CodeAlphaMustBeImage:        "400: alpha_mode select needs a keyframe image, not a video.",
	CodeSourceTooLarge:          "400: source over 2,770,000 pixels, or an inline data: URI over 50 MB.",
	CodeVideoTooManyFrames:      "400: video over 240 frames.",
	CodeExtremeAspectRatio:      "400: aspect ratio outside 1:4..4:1.",
	CodeInvalidOutputFormat:     "400 (extension): output_format is not mp4 or exr.",
	CodeInvalidArchive:          "400 (extension): a source given as a ZIP or TAR of frames is refused from its index, before anything is extracted: more entries than 240 frames and 64 others, a name that is absolute or leads out of its folder (..), a backslash or drive letter, a link or other non-regular entry, a name twice, a ZIP entry declaring over 100 times its packed size (a zip bomb), a frame declaring more bytes than a frame within the pixel limit can take, or over 4 GiB in all. Its frame count, pixel and aspect limits give the usual codes; files other than .png or .exr frames, or both kinds, INVALID_FILE_FORMAT.",
	CodeInvalidFrameRange:       "400 (extension): frames is not A-B with 0 <= A <= B, is given for an image, or (a video at hand) its last frame B is not below the source's frame count. A job whose source was not at hand fails with this code.",
	CodeInvalidPlacement:        "400 (extension): placement.scale outside 0.25..4, placement.x or placement.y outside -1..1, or a placement with alpha_mode fill (no plate to place the subject over). The message names the member.",
	CodeInvalidCallbackURL:      "400: callback_url not an absolute https:// URL (http:// only when the operator allows it) of at most 2048 characters, or its host resolves to a non-public address.",
	CodeInvalidFilename:         "400: upload filename not 3-255 characters with one of the accepted extensions, or with a path separator or control character.",
	CodeRequestTooLarge:         "413: request body over the cap (about 70 MB: a 50 MB inline data: URI in base64 and the rest of the request).",
	CodeRequestTimeout:          "408: the request body arrived slower than 32 KiB/s on average after its first 10 s, or took over 10 minutes; the connection is closed.",
	CodeInternal:                "500: internal error; the outcome of a submission is uncertain: resend it with the same idempotency_key.",
	CodeUnavailable:             "503 (with Retry-After): NATS or object storage unreachable for a moment, a job with the same idempotency_key still being created, or the server already reading its limit of request body bytes at once (256 MiB in flight across all requests); nothing was created, resend the same request.",
	CodeNotFound:                "404: no such route.",
	CodeMethodNotAllowed:        "405: the path exists but does not serve the request's method; the Allow header lists the methods it does (GET implies HEAD). Product API paths answer it in the detail shape.",
	CodeUnauthorized:            "401 (operator API): missing or wrong Authorization: Bearer token.",
	CodeAccountNotFound:         "404 (operator API): no such account.",
	CodeKeyNotFound:             "404 (operator API): no such key.",
	CodeInvalidInput:            "400 (operator API): an invalid argument (e-mail, billing type, key kind, an amount out of bounds: spending_limit and prepaid_balance 0 to 1e9 USD, credits 1 to 1e12 an addition and 1e15 a balance).",
	CodeAccountExists:           "409 (operator API): an account with this e-mail exists.",
	CodeAccountKeyRequired:      "403: an organization key of the product API on a generation API route; use an account key.",
	CodeOrgNotFound:             "404 (operator API): no such organization.",
	CodeTeamNotFound:            "404 (operator API): no such team.",
	CodeProductNotFound:         "404 (operator API): no such product.",
	CodeModelNotFound:           "404 (operator API): no such model.",
}

const apiDescription = `HTTP API of the vfx compositing and relighting service (generation API, uploads, account reads, operator API).

Decisions of this service (docs/api.md in the repository gathers them):

- POST /v1/vfx/generations answers **201** with the job when it is created and **200** with the existing job when idempotency_key already names a job of this account with the same body; the same key with a different body gets **409** IDEMPOTENCY_CONFLICT and nothing is created. Concurrent identical submissions create exactly one job.
- Required fields: generation_type, source_uri, alpha_mode, and one of prompt / reference_image_uri. Defaults: max_resolution 1080, alpha_keyframe_index 0, seed random in [0, 2^32-1]. Unknown fields are ignored; null counts as omitted.
- Reference images: PNG, JPEG or WebP, judged by content. Source formats are judged by content, not by extension.
- Errors use the envelope {"error":{"code","message"}}. Malformed JSON or wrong JSON types: **422** with a FastAPI-style detail array of {loc, msg, type}. Rule violations: **400** with one of the codes in x-error-codes. Content checks (format, pixels, frames, aspect, matte kind/size/frames, keyframe index, a keyframe that selects nothing) run at submission when the media is at hand (uploads and data: URIs); otherwise the job ends failed with the same code at the start of its error string.
- **401** INVALID_API_KEY for a missing, unknown or revoked key. **404** JOB_NOT_FOUND for a job that does not exist or belongs to another account (never 403).
- **429** RATE_LIMIT_EXCEEDED or CONCURRENT_LIMIT_EXCEEDED with Retry-After (seconds) and X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (Unix seconds when the window resets). Personal keys only, counted per account (not per key) and shared by every API replica: write (POST /v1/vfx/generations) 5/min, read (GET job, list, account info) 5/min, billing (GET /v1/account/billing) 5/min, 10 generations in flight; operators can override them per account. Organization keys have no request or concurrency limits. Successful personal-key requests also carry the X-RateLimit-* headers.
- **402** HARD_LIMIT_EXCEEDED when the job's estimated cost plus the period's usage plus the estimates of jobs in flight exceeds spending_limit (the message gives current usage and job cost), INSUFFICIENT_BALANCE when a prepaid balance does not cover it. The estimate uses the source's frame count when it is at hand, else 240 frames for a video. A job is charged once, when it completes, for its actual frames; a failed job costs nothing.
- Lists are newest first with opaque page tokens; every element, like GET, carries freshly signed output URLs (72 h).
- Transitions: in_queue -> processing -> completed|failed, and in_queue -> failed for input rejected before work starts. Terminal states never change; modified_at moves with each change; completed_at is set on completion or failure; progress is 100 when completed.
- Uploads: upload_url is a presigned S3 PUT, or with the local store a signed URL served by this API under /v1/files/ that accepts one successful PUT (then 409), answering errors in the error envelope {"error":{"code","message"}} with code NOT_FOUND, FORBIDDEN (bad, expired or other-method signature), CONFLICT, REQUEST_TOO_LARGE, BAD_REQUEST, METHOD_NOT_ALLOWED or INTERNAL_ERROR; no header is required on the PUT, a Content-Type is accepted and ignored: the content is sniffed and must be the type of the filename's extension (INVALID_FILE_FORMAT at submission otherwise; the same rule judges data: URIs against their declared type). Maximum upload 2 GiB; the URL expires after 1 hour.
- An upload belongs to the account (account keys), or to the organization and team (organization keys, team from the key or X-Service-Team-Id), that created it; any other caller naming it gets exactly the answer of an upload that does not exist (400 SOURCE_UNREACHABLE). Per owner: at most 50 open uploads (URL not expired and not used by a job) and 20 GiB in uploads of the last 24 hours; over either, POST /v1/uploads is 429 RATE_LIMIT_EXCEEDED with Retry-After. Uploads that no job used are deleted 24 hours after creation; jobs may name an upload for 7 days.
- Inline data: inputs (source, alpha, reference) are decoded once at submission and stored as input objects of the job; the job carries only their reference, so a 50 MB inline input is queued like an upload.
- Request bodies are capped at about 70 MB (an inline data: URI of at most 50 MB decoded); larger bodies get 413 REQUEST_TOO_LARGE. Bodies are read once, under a server-wide budget of 256 MiB of body bytes in flight: a body that does not fit gets 503 SERVICE_UNAVAILABLE with Retry-After. A body slower than 32 KiB/s on average after its first 10 s, or taking over 10 minutes, gets 408 REQUEST_TIMEOUT. A JSON key repeated in any object of a body is refused with 422.
- Webhooks: callback_url must be https:// unless the operator allows http:// (development). Callback and https:// source hosts that resolve to loopback, private, link-local or metadata addresses are refused at submission and again at connection time, unless the operator allows private networks. See the jobFinished webhook for the body, the Standard Webhooks signature headers and the retry schedule (attempts at 0, +1 s, +5 s, +30 s, +2 min; 10 s timeout per attempt; only 2xx counts; redirects are not followed; delivery state survives restarts and is shown as the job's webhook object).
- Billing meters: api_image_720p, api_image_1080p, api_video_720p, api_video_1080p (unit: image or frame); prices are a documented, configurable table (x-price-table). billing_type is prepaid or postpaid.
- Operator API under /admin/v1, behind Authorization: Bearer <operator token>.`

// OpenAPI returns the OpenAPI 3.1 document of the API (version 1.0.0):
// the core's skeleton (info and its description, x-error-codes, x-limits,
// x-price-table, the security schemes, the shared headers, the upload and
// document routes, the error bodies) with each registered API's part added
// (AddDoc: api/gen's paths, schemas and jobFinished webhook, api/product's)
// and every operation's 405.
func (s *Server) OpenAPI() map[string]any {
	codes := Obj{}
	for c, d := range ErrorCodes {
		codes[string(c)] = d
	}
	allCodes := SortedCodes(ErrorCodes)
	prices := Obj{}
	for m, p := range s.Prices {
		prices[m] = p
	}
	labels := Obj{}
	for m, l := range account.MeterLabels() {
		labels[m] = l
	}
	keyed := []any{Obj{"ApiKey": []any{}}}
	doc := Obj{
		"openapi": "3.1.0",
		"info": Obj{"title": "vfx API", "version": "1.0.0", "description": apiDescription,
			"x-spec-notes": "Every decision of this service for the generation API, uploads, account, webhooks, errors and limits is listed in info.description, x-error-codes, x-limits and x-price-table."},
		"servers":       []any{Obj{"url": "/"}},
		"security":      keyed,
		"x-error-codes": codes,
		"x-limits": Obj{
			"personal_keys":     Obj{"rpm": 5, "read_rpm": 5, "billing_rpm": 5, "concurrency": 10, "spending_limit_usd": account.DefaultSpendingLimit, "scope": "per account, shared by all replicas"},
			"organization_keys": "no request-per-minute or concurrency limits; spending limit, balance and source limits still apply",
			"prompt_chars":      2000, "idempotency_key_chars": "1-256", "callback_url_chars": 2048, "filename_chars": "3-255",
			"list_limit": "1-100, default 20", "seed": "0-4294967295", "max_resolution": "720 or 1080, default 1080",
			"inline_data_bytes": 50_000_000, "request_body_bytes": DefaultMaxBodyBytes, "video_frames": 240, "source_pixels": 2_770_000,
			"aspect_ratio": "1:4..4:1", "output_url_ttl": "72h", "upload_url_ttl": "1h", "upload_bytes": "2 GiB",
			"inflight_body_bytes": DefaultMaxInflightBodyBytes, "min_body_rate": "32 KiB/s after 10 s", "body_timeout": "10m",
			"open_uploads_per_owner": DefaultMaxOpenUploads, "upload_bytes_per_owner_per_day": DefaultMaxUploadBytesPerDay,
			"unused_upload_expiry": "24h", "upload_usable_for": "7d", "upload_puts": 1,
			"operator_usd_amounts": "0 to 1e9", "credits_per_addition": "1 to 1e12", "credit_balance_max": "1e15",
			"webhook_timeout": "10s", "webhook_attempts": 5, "webhook_retry_delays": "1s, 5s, 30s, 2m (configurable by the operator)",
		},
		"x-price-table": Obj{"unit": "USD per image (image meters) or per frame (video meters)", "prices": prices, "labels": labels},
		"paths": Obj{
			"/v1/uploads": Obj{
				"post": Obj{"operationId": "createUpload", "summary": "Create a presigned upload URL (PUT the file to it within 1 hour).", "tags": []any{"uploads"},
					"requestBody": Obj{"required": true, "content": Obj{"application/json": Obj{"schema": Ref("UploadRequest")}}},
					"responses": Obj{"200": Response("Upload record.", Ref("UploadRecord")), "400": ErrResp("Bad filename.", CodeInvalidFilename),
						"401": Resp401, "403": ErrResp("X-Service-Team-Id names a team this organization key may not act for.", CodeTeamForbidden),
						"408": ErrResp("Request body too slow.", CodeRequestTimeout), "422": Resp422,
						"429": ErrResp("The owner's open uploads or bytes of the last 24 hours are at their limit (Retry-After).", CodeRateLimitExceeded),
						"500": Resp500, "503": ErrResp("Request body budget full (Retry-After).", CodeUnavailable)}},
			},
			"/v1/openapi.json": Obj{
				"get": Obj{"operationId": "getOpenAPI", "summary": "This document.", "security": []any{}, "tags": []any{"meta"},
					"responses": Obj{"200": Response("OpenAPI 3.1 document.", Obj{"type": "object"})}},
			},
		},
		"webhooks": Obj{},
		"components": Obj{
			"securitySchemes": Obj{
				"ApiKey":     Obj{"type": "apiKey", "in": "header", "name": "x-api-key", "description": "Personal or organization API key (vfx_sk_…)."},
				"AdminToken": Obj{"type": "http", "scheme": "bearer", "description": "Operator token (--admin-token or VFX_ADMIN_TOKEN)."},
			},
			"headers": Obj{
				"Retry-After":           Obj{"schema": Obj{"type": "integer"}, "description": "Seconds to wait before retrying."},
				"X-RateLimit-Limit":     Obj{"schema": Obj{"type": "integer"}, "description": "The limit of the class (personal keys)."},
				"X-RateLimit-Remaining": Obj{"schema": Obj{"type": "integer"}, "description": "Requests left in the current window."},
				"X-RateLimit-Reset":     Obj{"schema": Obj{"type": "integer"}, "description": "Unix seconds when the window resets."},
			},
			"schemas": Obj{
				"UploadRequest": Obj{"type": "object", "required": []any{"filename"}, "properties": Obj{
					"filename": Obj{"type": "string", "minLength": 3, "maxLength": 255, "description": "With one of the extensions .mp4 .mov .png .jpg .jpeg .webp .mp3 .wav, or .zip .tar (extension: a video source given as an archive of PNG or EXR frames, checked from its index before anything is extracted; see source_uri)."}}},
				"UploadRecord": Obj{"type": "object", "required": []any{"id", "upload_url", "vfx_uri"}, "properties": Obj{
					"id": Obj{"type": "string", "pattern": "^upload_"}, "upload_url": StrS("Presigned PUT URL, valid 1 hour; no header required."),
					"vfx_uri": StrS("vfx://uploads/{id}/{filename}, accepted as source_uri, alpha_uri and reference_image_uri.")}},
				"ErrorEnvelope": Obj{"type": "object", "required": []any{"error"}, "properties": Obj{"error": Obj{"type": "object", "required": []any{"code", "message"},
					"properties": Obj{"code": Obj{"type": "string", "enum": allCodes}, "message": StrS("Human-readable.")}}}},
				"ValidationErrorBody": Obj{"type": "object", "required": []any{"detail"}, "properties": Obj{"detail": Obj{"type": "array", "items": Obj{
					"type": "object", "required": []any{"loc", "msg", "type"}, "properties": Obj{
						"loc": Obj{"type": "array", "items": Obj{"type": []any{"string", "integer"}}}, "msg": StrS(""), "type": StrS("json_invalid, string_type, int_type, …")}}}}},
			},
		},
	}
	for _, add := range s.docs {
		add(doc)
	}
	s.addMethodNotAllowed(doc)
	return doc
}

// addMethodNotAllowed documents the 405 of every operation: a known path
// reached with a method it does not serve, with an Allow header.
func (s *Server) addMethodNotAllowed(doc Obj) {
	product := map[string]bool{}
	for _, rt := range s.routes {
		product[rt.Path] = product[rt.Path] || rt.Product
	}
	doc["components"].(Obj)["headers"].(Obj)["Allow"] = Obj{"schema": Obj{"type": "string"},
		"description": "The methods the path serves, comma-separated (GET implies HEAD)."}
	const desc = "The path exists but does not serve this method; Allow lists the methods it does. Codes: " + string(CodeMethodNotAllowed) + "."
	for path, ops := range doc["paths"].(Obj) {
		schema := Obj{"allOf": []any{Ref("ErrorEnvelope"), Obj{"properties": Obj{"error": Obj{"properties": Obj{"code": Obj{"enum": []any{CodeMethodNotAllowed}}}}}}}}
		if product[path] {
			schema = Obj{"allOf": []any{Ref("ProductError"), Obj{"properties": Obj{"detail": Obj{"properties": Obj{"error_code": Obj{"enum": []any{CodeMethodNotAllowed}}}}}}}}
		}
		for _, op := range ops.(Obj) {
			o, ok := op.(Obj)
			if !ok {
				continue
			}
			if rs, ok := o["responses"].(Obj); ok {
				rs["405"] = Response(desc, schema, "Allow")
			}
		}
	}
}
