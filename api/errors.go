package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/job"
)

// Error codes of the generation API and of the admin API (docs/api.md,
// Errors; each is described in the OpenAPI document's x-error-codes),
// beside the codes of a rejected job input, which are job's (below).
const (
	CodeInvalidAPIKey           job.Code = "INVALID_API_KEY"
	CodeJobNotFound             job.Code = "JOB_NOT_FOUND"
	CodeRateLimitExceeded       job.Code = "RATE_LIMIT_EXCEEDED"
	CodeConcurrentLimitExceeded job.Code = "CONCURRENT_LIMIT_EXCEEDED"
	CodeHardLimitExceeded       job.Code = "HARD_LIMIT_EXCEEDED"
	CodeInsufficientBalance     job.Code = "INSUFFICIENT_BALANCE"
	CodeIdempotencyConflict     job.Code = "IDEMPOTENCY_CONFLICT"
	CodeInvalidPrompt           job.Code = "INVALID_PROMPT"
	CodeInvalidSeed             job.Code = "INVALID_SEED"
	CodeInvalidIdempotencyKey   job.Code = "INVALID_IDEMPOTENCY_KEY"
	CodeInvalidCallbackURL      job.Code = "INVALID_CALLBACK_URL"
	CodeInvalidFilename         job.Code = "INVALID_FILENAME"
	CodeRequestTooLarge         job.Code = "REQUEST_TOO_LARGE"
	CodeRequestTimeout          job.Code = "REQUEST_TIMEOUT"
	CodeInternal                job.Code = "INTERNAL_ERROR"
	CodeUnavailable             job.Code = "SERVICE_UNAVAILABLE"
	CodeNotFound                job.Code = "NOT_FOUND"
	CodeMethodNotAllowed        job.Code = "METHOD_NOT_ALLOWED"
	CodeUnauthorized            job.Code = "UNAUTHORIZED"
	CodeAccountNotFound         job.Code = "ACCOUNT_NOT_FOUND"
	CodeKeyNotFound             job.Code = "KEY_NOT_FOUND"
	CodeAccountExists           job.Code = "ACCOUNT_EXISTS"
)

// The codes of a rejected job input: job's own values (job.Code), under
// the names the API's handlers and tables use.
const (
	CodeInvalidInput          = job.CodeInvalidInput
	CodeInvalidGenerationType = job.CodeInvalidGenerationType
	CodeInvalidAlphaMode      = job.CodeInvalidAlphaMode
	CodeInvalidMaxResolution  = job.CodeInvalidMaxResolution
	CodeInvalidKeyframeIndex  = job.CodeInvalidKeyframeIndex
	CodeMissingSource         = job.CodeMissingSource
	CodeMissingAlpha          = job.CodeMissingAlpha
	CodeMissingStyleInput     = job.CodeMissingStyleInput
	CodePromptTooLong         = job.CodePromptTooLong
	CodeInvalidURI            = job.CodeInvalidURI
	CodeSourceUnreachable     = job.CodeSourceUnreachable
	CodeInvalidFileFormat     = job.CodeInvalidFileFormat
	CodeAlphaTypeMismatch     = job.CodeAlphaTypeMismatch
	CodeAlphaMustBeImage      = job.CodeAlphaMustBeImage
	CodeSourceTooLarge        = job.CodeSourceTooLarge
	CodeVideoTooManyFrames    = job.CodeVideoTooManyFrames
	CodeExtremeAspectRatio    = job.CodeExtremeAspectRatio
	CodeInvalidOutputFormat   = job.CodeInvalidOutputFormat
	CodeInvalidFrameRange     = job.CodeInvalidFrameRange
	CodeInvalidArchive        = job.CodeInvalidArchive
	CodeInvalidPlacement      = job.CodeInvalidPlacement
)

// codeStatus is the one table from an error code to its HTTP status, for
// both shapes. (The product API's 422 INVALID_INPUT is the one exception:
// see invalidInput.)
var codeStatus = map[job.Code]int{
	CodeInvalidAPIKey:           http.StatusUnauthorized,
	CodeUnauthorized:            http.StatusUnauthorized,
	CodeJobNotFound:             http.StatusNotFound,
	CodeNotFound:                http.StatusNotFound,
	CodeAccountNotFound:         http.StatusNotFound,
	CodeKeyNotFound:             http.StatusNotFound,
	CodeOrgNotFound:             http.StatusNotFound,
	CodeTeamNotFound:            http.StatusNotFound,
	CodeProductNotFound:         http.StatusNotFound,
	CodeModelNotFound:           http.StatusNotFound,
	CodeParentNotFound:          http.StatusNotFound,
	CodeMethodNotAllowed:        http.StatusMethodNotAllowed,
	CodeRateLimitExceeded:       http.StatusTooManyRequests,
	CodeConcurrentLimitExceeded: http.StatusTooManyRequests,
	CodeHardLimitExceeded:       http.StatusPaymentRequired,
	CodeInsufficientBalance:     http.StatusPaymentRequired,
	CodeBudgetExceeded:          http.StatusPaymentRequired,
	CodeIdempotencyConflict:     http.StatusConflict,
	CodeAccountExists:           http.StatusConflict,
	CodeParentNotSuccessful:     http.StatusConflict,
	CodeAccountKeyRequired:      http.StatusForbidden,
	CodeOrgKeyRequired:          http.StatusForbidden,
	CodeProductNotEnabled:       http.StatusForbidden,
	CodeTeamForbidden:           http.StatusForbidden,
	CodeModelConsentRequired:    http.StatusForbidden,
	CodeParentNotOwned:          http.StatusForbidden,
	CodeParentNotProductJob:     http.StatusUnprocessableEntity,
	CodeParentFastMode:          http.StatusUnprocessableEntity,
	CodeParentIsFinish:          http.StatusUnprocessableEntity,
	CodeRequestTooLarge:         http.StatusRequestEntityTooLarge,
	CodeRequestTimeout:          http.StatusRequestTimeout,
	CodeInternal:                http.StatusInternalServerError,
	CodeUnavailable:             http.StatusServiceUnavailable,
	// Request rules.
	CodeInvalidInput:           http.StatusBadRequest,
	CodeInvalidGenerationType:  http.StatusBadRequest,
	CodeInvalidAlphaMode:       http.StatusBadRequest,
	CodeInvalidMaxResolution:   http.StatusBadRequest,
	CodeMissingStyleInput:      http.StatusBadRequest,
	CodeMissingSource:          http.StatusBadRequest,
	CodeMissingAlpha:           http.StatusBadRequest,
	CodePromptTooLong:          http.StatusBadRequest,
	CodeInvalidPrompt:          http.StatusBadRequest,
	CodeInvalidSeed:            http.StatusBadRequest,
	CodeInvalidKeyframeIndex:   http.StatusBadRequest,
	CodeInvalidIdempotencyKey:  http.StatusBadRequest,
	CodeInvalidURI:             http.StatusBadRequest,
	CodeSourceUnreachable:      http.StatusBadRequest,
	CodeInvalidFileFormat:      http.StatusBadRequest,
	CodeAlphaTypeMismatch:      http.StatusBadRequest,
	CodeAlphaMustBeImage:       http.StatusBadRequest,
	CodeSourceTooLarge:         http.StatusBadRequest,
	CodeVideoTooManyFrames:     http.StatusBadRequest,
	CodeExtremeAspectRatio:     http.StatusBadRequest,
	CodeInvalidOutputFormat:    http.StatusBadRequest,
	CodeInvalidFrameRange:      http.StatusBadRequest,
	CodeInvalidArchive:         http.StatusBadRequest,
	CodeInvalidPlacement:       http.StatusBadRequest,
	CodeInvalidCallbackURL:     http.StatusBadRequest,
	CodeInvalidFilename:        http.StatusBadRequest,
	CodeUnsupportedBillingUnit: http.StatusBadRequest,
	// Codes of a rejected job input that the API never answers itself
	// (the worker fails the job with them).
	job.CodeModelUnavailable: http.StatusBadRequest,
}

// statusOf returns code's HTTP status; a code missing from codeStatus is
// a bug, answered as 500 (TestCodeStatus keeps the table whole).
func statusOf(code job.Code) int {
	if st, ok := codeStatus[code]; ok {
		return st
	}
	return http.StatusInternalServerError
}

// Error is an error answered with a code, in the envelope shape
// {"error":{"code","message"}} on generation, account and operator routes
// and in the detail shape {"detail":{"error_code","message",
// "unknown_fields","missing_fields"}} on product routes (see WriteError).
type Error struct {
	// Status is the HTTP status: codeStatus's, set by newError.
	Status  int
	Code    job.Code
	Message string
	// Unknown and Missing list field names (detail shape only).
	Unknown, Missing []string
	// Header holds extra response headers (Retry-After, X-RateLimit-*).
	Header http.Header
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// NewError is an error with code, its status from codeStatus.
func NewError(code job.Code, format string, args ...any) *Error {
	return &Error{Status: statusOf(code), Code: code, Message: fmt.Sprintf(format, args...)}
}

// BadRequest is newError for the codes of a request rule (all 400s).
func BadRequest(code job.Code, format string, args ...any) *Error {
	return NewError(code, format, args...)
}

// inputError answers a *job.InputError (a rule of the job contract or
// of its media) as a 400 with its code.
func inputError(ie *job.InputError) *Error {
	return BadRequest(ie.Code, "%v", ie.Err)
}

// Unavailable is 503 SERVICE_UNAVAILABLE with Retry-After: nothing was
// created, the same request can be sent again.
func Unavailable(retryAfter int, format string, args ...any) *Error {
	e := NewError(CodeUnavailable, format, args...)
	e.Header = http.Header{"Retry-After": {strconv.Itoa(retryAfter)}}
	return e
}

// Envelope is the generation API's error body (docs/api.md, Errors).
type Envelope struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is the error of the envelope shape: its code and message.
type ErrorBody struct {
	Code    job.Code `json:"code"`
	Message string   `json:"message"`
}

// ValidationError is one element of a FastAPI-style 422 detail array.
type ValidationError struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// detailError is a 422 answered as {"detail":[…]}.
type DetailError struct {
	Detail []ValidationError `json:"detail"`
}

func (e *DetailError) Error() string {
	if len(e.Detail) == 0 {
		return "validation error"
	}
	return fmt.Sprintf("validation error: %v: %s", e.Detail[0].Loc, e.Detail[0].Msg)
}

func Unprocessable(loc []any, msg, typ string) *DetailError {
	return &DetailError{Detail: []ValidationError{{Loc: loc, Msg: msg, Type: typ}}}
}

// WriteJSON writes v with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"INTERNAL_ERROR","message":"response encoding failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// Shape is the form of an error body: the generation API's envelope or
// the product API's detail.
type Shape int

const (
	EnvelopeShape Shape = iota
	DetailShape
)

// WriteError answers err in shape: an *apiError as it says; a
// *detailError (a FastAPI-style 422 array) as it is in the envelope shape
// and as 422 INVALID_INPUT in the detail shape; NATS unreachable for a
// moment as 503 SERVICE_UNAVAILABLE with Retry-After; anything else as a
// 500 whose message hides the cause (the cause is logged).
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, err error, sh Shape) {
	var ae *Error
	var de *DetailError
	switch {
	case errors.As(err, &de):
		if sh == EnvelopeShape {
			WriteJSON(w, http.StatusUnprocessableEntity, de)
			return
		}
		msgs := make([]string, 0, len(de.Detail))
		for _, d := range de.Detail {
			msgs = append(msgs, fmt.Sprintf("%v: %s", d.Loc, d.Msg))
		}
		ae = InvalidInput("%s", strings.Join(msgs, "; "))
	case errors.As(err, &ae):
	case natsUnavailable(err):
		s.Log.Warn("request failed: NATS unreachable", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
		ae = Unavailable(1, "the job system is unreachable for a moment (NATS restarting); resend the request, with the same idempotency_key if it had one")
	default:
		s.Log.Error("request failed", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
		ae = NewError(CodeInternal, "internal error")
	}
	for k, vs := range ae.Header {
		w.Header()[k] = vs
	}
	if sh == EnvelopeShape {
		WriteJSON(w, ae.Status, Envelope{Error: ErrorBody{Code: ae.Code, Message: ae.Message}})
		return
	}
	body := ErrorDetail{ErrorCode: ae.Code, Message: ae.Message, UnknownFields: ae.Unknown, MissingFields: ae.Missing}
	if body.UnknownFields == nil {
		body.UnknownFields = []string{}
	}
	if body.MissingFields == nil {
		body.MissingFields = []string{}
	}
	WriteJSON(w, ae.Status, ProductDetail{Detail: body})
}

// natsUnavailable reports an error of NATS being unreachable or without
// a JetStream leader for the moment (a restart, an election): the
// request can be resent.
func natsUnavailable(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrDisconnected) || errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrJetStreamNotEnabled)
}

// rateHeaders returns the X-RateLimit-* headers (and Retry-After when
// the decision refused) of a rate-limit decision. X-RateLimit-Reset is the
// Unix time in seconds when the window resets.
func rateHeaders(d account.Decision) http.Header {
	h := http.Header{}
	h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(0, d.Remaining)))
	if !d.Reset.IsZero() {
		h.Set("X-RateLimit-Reset", strconv.FormatInt(d.Reset.Unix(), 10))
	}
	if !d.Allowed {
		h.Set("Retry-After", strconv.Itoa(retrySeconds(d.RetryAfter)))
	}
	return h
}

// retrySeconds rounds a wait up to whole seconds, at least 1.
func retrySeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(1, s)
}

// accountError maps the account package's reservation errors to answers.
func AccountError(err error) error {
	var le *account.LimitError
	hasLE := errors.As(err, &le)
	switch {
	case errors.Is(err, account.ErrConcurrencyLimit):
		e := NewError(CodeConcurrentLimitExceeded, "too many generations in flight")
		limit, inflight := 0, 0
		if hasLE {
			limit, inflight = le.MaxInFlight, le.InFlight
			e.Message = fmt.Sprintf("%d generations in flight, limit %d; retry when one finishes", inflight, limit)
		}
		e.Header = rateHeaders(account.Decision{Allowed: false, Limit: limit, Remaining: 0,
			RetryAfter: 5 * time.Second, Reset: time.Now().Add(5 * time.Second)})
		return e
	case errors.Is(err, account.ErrHardLimit):
		if hasLE {
			return NewError(CodeHardLimitExceeded,
				"spending limit exceeded: current period usage $%.2f (plus $%.2f reserved by jobs in flight) and this job's estimated cost $%.2f would exceed the spending limit of $%.2f",
				le.Usage, le.Reserved, le.Cost, le.Limit)
		}
		return NewError(CodeHardLimitExceeded, "spending limit exceeded: %v", err)
	case errors.Is(err, account.ErrInsufficientBalance):
		if hasLE {
			return NewError(CodeInsufficientBalance,
				"prepaid balance $%.2f does not cover this job's estimated cost $%.2f plus $%.2f reserved by jobs in flight",
				le.Limit, le.Cost, le.Reserved)
		}
		return NewError(CodeInsufficientBalance, "prepaid balance is below the job's estimated cost")
	}
	return err
}
