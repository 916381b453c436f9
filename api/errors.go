package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/account"
)

// Error codes of the generation API (SPEC-NOTES.md) and of the admin API.
const (
	CodeInvalidAPIKey           = "INVALID_API_KEY"
	CodeJobNotFound             = "JOB_NOT_FOUND"
	CodeRateLimitExceeded       = "RATE_LIMIT_EXCEEDED"
	CodeConcurrentLimitExceeded = "CONCURRENT_LIMIT_EXCEEDED"
	CodeHardLimitExceeded       = "HARD_LIMIT_EXCEEDED"
	CodeInsufficientBalance     = "INSUFFICIENT_BALANCE"
	CodeIdempotencyConflict     = "IDEMPOTENCY_CONFLICT"
	CodeInvalidGenerationType   = "INVALID_GENERATION_TYPE"
	CodeInvalidAlphaMode        = "INVALID_ALPHA_MODE"
	CodeInvalidMaxResolution    = "INVALID_MAX_RESOLUTION"
	CodeMissingStyleInput       = "MISSING_STYLE_INPUT"
	CodeMissingSource           = "MISSING_SOURCE"
	CodeMissingAlpha            = "MISSING_ALPHA"
	CodePromptTooLong           = "PROMPT_TOO_LONG"
	CodeInvalidPrompt           = "INVALID_PROMPT"
	CodeInvalidSeed             = "INVALID_SEED"
	CodeInvalidKeyframeIndex    = "INVALID_KEYFRAME_INDEX"
	CodeInvalidIdempotencyKey   = "INVALID_IDEMPOTENCY_KEY"
	CodeInvalidURI              = "INVALID_URI"
	CodeSourceUnreachable       = "SOURCE_UNREACHABLE"
	CodeInvalidFileFormat       = "INVALID_FILE_FORMAT"
	CodeAlphaTypeMismatch       = "ALPHA_TYPE_MISMATCH"
	CodeAlphaMustBeImage        = "ALPHA_MUST_BE_IMAGE"
	CodeSourceTooLarge          = "SOURCE_TOO_LARGE"
	CodeVideoTooManyFrames      = "VIDEO_TOO_MANY_FRAMES"
	CodeExtremeAspectRatio      = "EXTREME_ASPECT_RATIO"
	CodeInvalidCallbackURL      = "INVALID_CALLBACK_URL"
	CodeInvalidFilename         = "INVALID_FILENAME"
	CodeRequestTooLarge         = "REQUEST_TOO_LARGE"
	CodeRequestTimeout          = "REQUEST_TIMEOUT"
	CodeInternal                = "INTERNAL_ERROR"
	CodeUnavailable             = "SERVICE_UNAVAILABLE"
	CodeNotFound                = "NOT_FOUND"
	CodeMethodNotAllowed        = "METHOD_NOT_ALLOWED"
	CodeUnauthorized            = "UNAUTHORIZED"
	CodeAccountNotFound         = "ACCOUNT_NOT_FOUND"
	CodeKeyNotFound             = "KEY_NOT_FOUND"
	CodeInvalidInput            = "INVALID_INPUT"
	CodeAccountExists           = "ACCOUNT_EXISTS"
)

// apiError is an error answered with the envelope
// {"error":{"code","message"}} and an HTTP status.
type apiError struct {
	Status  int
	Code    string
	Message string
	// Header holds extra response headers (Retry-After, X-RateLimit-*).
	Header http.Header
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func newError(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(code, format string, args ...any) *apiError {
	return newError(http.StatusBadRequest, code, format, args...)
}

// envelope is the error body of SPEC.md's first shape.
type envelope struct {
	Error envelopeBody `json:"error"`
}

type envelopeBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// validationError is one element of a FastAPI-style 422 detail array.
type validationError struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// detailError is a 422 answered as {"detail":[…]}.
type detailError struct {
	Detail []validationError `json:"detail"`
}

func (e *detailError) Error() string {
	if len(e.Detail) == 0 {
		return "validation error"
	}
	return fmt.Sprintf("validation error: %v: %s", e.Detail[0].Loc, e.Detail[0].Msg)
}

func unprocessable(loc []any, msg, typ string) *detailError {
	return &detailError{Detail: []validationError{{Loc: loc, Msg: msg, Type: typ}}}
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
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

// writeError answers err: an *apiError or *detailError as it says, anything
// else as a 500 whose message hides the cause (the cause is logged).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	var de *detailError
	switch {
	case errors.As(err, &de):
		writeJSON(w, http.StatusUnprocessableEntity, de)
	case errors.As(err, &ae):
		for k, vs := range ae.Header {
			w.Header()[k] = vs
		}
		writeJSON(w, ae.Status, envelope{Error: envelopeBody{Code: ae.Code, Message: ae.Message}})
	case natsUnavailable(err):
		s.log.Warn("request failed: NATS unreachable", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, envelope{Error: envelopeBody{Code: CodeUnavailable,
			Message: "the job system is unreachable for a moment (NATS restarting); resend the request, with the same idempotency_key if it had one"}})
	default:
		s.log.Error("request failed", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
		writeJSON(w, http.StatusInternalServerError, envelope{Error: envelopeBody{Code: CodeInternal, Message: "internal error"}})
	}
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
func accountError(err error) error {
	var le *account.LimitError
	hasLE := errors.As(err, &le)
	switch {
	case errors.Is(err, account.ErrConcurrencyLimit):
		e := newError(http.StatusTooManyRequests, CodeConcurrentLimitExceeded, "too many generations in flight")
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
			return newError(http.StatusPaymentRequired, CodeHardLimitExceeded,
				"spending limit exceeded: current period usage $%.2f (plus $%.2f reserved by jobs in flight) and this job's estimated cost $%.2f would exceed the spending limit of $%.2f",
				le.Usage, le.Reserved, le.Cost, le.Limit)
		}
		return newError(http.StatusPaymentRequired, CodeHardLimitExceeded, "spending limit exceeded: %v", err)
	case errors.Is(err, account.ErrInsufficientBalance):
		if hasLE {
			return newError(http.StatusPaymentRequired, CodeInsufficientBalance,
				"prepaid balance $%.2f does not cover this job's estimated cost $%.2f plus $%.2f reserved by jobs in flight",
				le.Limit, le.Cost, le.Reserved)
		}
		return newError(http.StatusPaymentRequired, CodeInsufficientBalance, "prepaid balance is below the job's estimated cost")
	}
	return err
}
