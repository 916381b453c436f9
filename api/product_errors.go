package api

import (
	"net/http"

	"github.com/vfxrender/vfx/job"
)

// Error codes of the product API (docs/api.md, Errors). They are
// answered in the detail shape, never in the generation API's envelope.
const (
	CodeOrgKeyRequired         job.Code = "ORG_KEY_REQUIRED"
	CodeProductNotEnabled      job.Code = "PRODUCT_NOT_ENABLED"
	CodeTeamForbidden          job.Code = "TEAM_FORBIDDEN"
	CodeModelConsentRequired   job.Code = "MODEL_CONSENT_REQUIRED"
	CodeUnsupportedBillingUnit job.Code = "UNSUPPORTED_BILLING_UNIT"
	CodeBudgetExceeded         job.Code = "BUDGET_EXCEEDED"
	CodeProductNotFound        job.Code = "PRODUCT_NOT_FOUND"
	CodeModelNotFound          job.Code = "MODEL_NOT_FOUND"
	// vfx_finish parents.
	CodeParentNotFound      job.Code = "PARENT_NOT_FOUND"
	CodeParentNotOwned      job.Code = "PARENT_NOT_OWNED"
	CodeParentNotProductJob job.Code = "PARENT_NOT_PRODUCT_JOB"
	CodeParentFastMode      job.Code = "PARENT_FAST_MODE"
	CodeParentIsFinish      job.Code = "PARENT_IS_FINISH"
	CodeParentNotSuccessful job.Code = "PARENT_NOT_SUCCESSFUL"
	// CodeAccountKeyRequired: an organisation key of the product API on a
	// generation route (envelope shape).
	CodeAccountKeyRequired job.Code = "ACCOUNT_KEY_REQUIRED"
	// CodeOrgNotFound, CodeTeamNotFound: operator API.
	CodeOrgNotFound  job.Code = "ORG_NOT_FOUND"
	CodeTeamNotFound job.Code = "TEAM_NOT_FOUND"
)

// ProductDetail is the detail shape of an error (see WriteError).
type ProductDetail struct {
	Detail ErrorDetail `json:"detail"`
}

// ErrorDetail is the detail of the product API's error shape.
type ErrorDetail struct {
	ErrorCode     job.Code `json:"error_code"`
	Message       string   `json:"message"`
	UnknownFields []string `json:"unknown_fields"`
	MissingFields []string `json:"missing_fields"`
}

// InvalidInput is the product API's 422 INVALID_INPUT: its inputs failed
// their schema or rules (as FastAPI answers). It is the one code whose
// status is not codeStatus's: elsewhere INVALID_INPUT is a 400.
func InvalidInput(format string, args ...any) *Error {
	e := NewError(CodeInvalidInput, format, args...)
	e.Status = http.StatusUnprocessableEntity
	return e
}

// HandleProduct registers a product API route: every error is answered in
// the detail shape.
func (s *Server) HandleProduct(method, path string, h HandlerFunc) {
	s.routes = append(s.routes, Route{Method: method, Path: path, Product: true})
	s.buildMethodRoutes()
	s.mux.HandleFunc(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
		r, release := s.withCharge(r)
		defer release()
		if err := h(w, r); err != nil {
			s.WriteError(w, r, err, DetailShape)
		}
	})
}

// ProductErrorCodes describes every code of the product API, answered in
// the detail shape {"detail":{"error_code","message","unknown_fields",
// "missing_fields"}}.
var ProductErrorCodes = map[job.Code]string{
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
