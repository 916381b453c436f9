// Package client is a small Go client of the vfx service's HTTP API: the
// generation API (x-api-key) and the operator API (Authorization: Bearer).
// It sends JSON requests with bounded retries (a 429 waits its
// Retry-After; 5xx and network failures are resent only where that is
// safe), reads the API's error answers in both body shapes into *Error,
// uploads local files, polls a job until it ends and downloads its outputs.
// The command line's client commands (`vfx submit`, `vfx jobs`, `vfx
// admin`) are built on it. It links no server code: its wire types are
// the fields of the API's answers that it reads (docs/api.md).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/vfxrender/vfx/internal/retry"
	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/job"
)

// Defaults and bounds of a Client.
const (
	// DefaultURL is the server of a local `vfx serve`.
	DefaultURL = "http://127.0.0.1:8080"
	// maxResponseBytes caps an API response body read into memory.
	maxResponseBytes = 16 << 20
	// MaxCallAttempts bounds the attempts of one API call (429 and, where
	// retrying is safe, 5xx and network errors).
	MaxCallAttempts = 5
	// maxRetryWait caps one wait before a retry, whatever Retry-After says.
	maxRetryWait = 65 * time.Second
)

// ErrUnexpectedAnswer reports a 2xx answer that is not what the call
// expects (not JSON, or without a job id).
var ErrUnexpectedAnswer = errors.New("unexpected answer")

// Client calls the generation API and the operator API of a vfx server.
// A Client is safe for concurrent use.
type Client struct {
	base       string // server URL without a trailing slash
	key        string // API key for /v1
	adminToken string // operator token for /admin/v1
	hc         *http.Client
	// sleep waits d or until ctx ends (tests may shorten it).
	sleep func(ctx context.Context, d time.Duration) error
	// UserAgent is sent with every API request.
	UserAgent string
}

// New returns a client of the server at base (an http:// or https://
// URL) with an API key and an operator token (either may be empty).
func New(base, key, adminToken string) *Client {
	return &Client{
		base: strings.TrimRight(strings.TrimSpace(base), "/"), key: strings.TrimSpace(key),
		adminToken: strings.TrimSpace(adminToken),
		// No overall timeout: uploads and downloads may be large. Calls
		// are bounded by their contexts.
		hc:        &http.Client{Transport: http.DefaultTransport},
		sleep:     retry.Sleep,
		UserAgent: "vfx-client",
	}
}

// Error is an error answer of the server, in either body shape
// (docs/api.md, Errors): the envelope {"error":{"code","message"}} or a `detail` value.
type Error struct {
	Status     int
	Code       job.Code // envelope code or detail error_code; empty when none
	Message    string   // one line
	RetryAfter time.Duration
}

// Error renders the answer on one line: "CODE: message (HTTP status)".
func (e *Error) Error() string {
	code := string(e.Code)
	if code == "" {
		code = http.StatusText(e.Status)
	}
	return fmt.Sprintf("%s: %s (HTTP %d)", code, e.Message, e.Status)
}

// OneLine folds s onto one line and caps its length.
func OneLine(s string) string {
	return trunc.String(strings.Join(strings.Fields(s), " "), 500)
}

// The error bodies of the API, as far as the client reads them.
type (
	errorBody struct {
		Code    job.Code `json:"code"`
		Message string   `json:"message"`
	}
	errorDetail struct {
		ErrorCode     job.Code `json:"error_code"`
		Message       string   `json:"message"`
		UnknownFields []string `json:"unknown_fields"`
		MissingFields []string `json:"missing_fields"`
	}
	validationError struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
)

// ParseError reads an error answer: the envelope, a FastAPI-style
// detail (string, object or validation-error array), or plain text.
func ParseError(status int, h http.Header, body []byte) *Error {
	e := &Error{Status: status, RetryAfter: retryAfter(h)}
	var env struct {
		Error  *errorBody      `json:"error"`
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &env) != nil {
		e.Message = OneLine(string(body))
		if e.Message == "" {
			e.Message = http.StatusText(status)
		}
		return e
	}
	switch {
	case env.Error != nil:
		e.Code, e.Message = env.Error.Code, OneLine(env.Error.Message)
	case len(env.Detail) > 0:
		e.Code, e.Message = describeDetail(env.Detail)
	default:
		e.Message = OneLine(string(body))
	}
	return e
}

// describeDetail returns the code and a one-line message of a `detail`
// value.
func describeDetail(raw json.RawMessage) (code job.Code, msg string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return "", OneLine(s)
	}
	var obj errorDetail
	if json.Unmarshal(raw, &obj) == nil && (obj.ErrorCode != "" || obj.Message != "") {
		m := obj.Message
		if len(obj.UnknownFields) > 0 {
			m += "; unknown fields: " + strings.Join(obj.UnknownFields, ", ")
		}
		if len(obj.MissingFields) > 0 {
			m += "; missing fields: " + strings.Join(obj.MissingFields, ", ")
		}
		return obj.ErrorCode, OneLine(m)
	}
	var list []validationError
	if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
		parts := make([]string, 0, len(list))
		for _, v := range list {
			loc := make([]string, 0, len(v.Loc))
			for _, l := range v.Loc {
				loc = append(loc, fmt.Sprint(l))
			}
			parts = append(parts, fmt.Sprintf("%s: %s", strings.Join(loc, "."), v.Msg))
		}
		return "VALIDATION_ERROR", OneLine(strings.Join(parts, "; "))
	}
	return "", OneLine(string(raw))
}

// retryAfter reads Retry-After in seconds (0 when absent or not a number).
func retryAfter(h http.Header) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// CallOptions say how Call authenticates and retries.
type CallOptions struct {
	Admin bool // operator token instead of the API key
	// Retry resends on 5xx and network errors; only for requests that are
	// safe to repeat (reads, and submissions with an idempotency key). A
	// 429 is always waited out and resent.
	Retry bool
}

// Call sends a JSON request (in: nil for none) to path and returns the
// status, headers and body of a 2xx answer, or an *Error. It resends a
// 429 after Retry-After, and with opt.Retry a 5xx or network failure
// after a growing pause, at most MaxCallAttempts times in all.
func (c *Client) Call(ctx context.Context, method, path string, in any, opt CallOptions) (int, http.Header, []byte, error) {
	var payload []byte
	if in != nil {
		var err error
		if payload, err = json.Marshal(in); err != nil {
			return 0, nil, nil, fmt.Errorf("encode request: %w", err)
		}
	}
	var status int
	var h http.Header
	var body []byte
	err := retry.Do(ctx, retry.Options{
		Backoff:  retry.Backoff{Initial: 500 * time.Millisecond, Max: 8 * time.Second},
		Attempts: MaxCallAttempts,
		MaxPause: maxRetryWait,
		Sleep:    c.sleep,
		Retryable: func(err error) (bool, time.Duration) {
			var ae *Error
			switch {
			case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests:
				return true, ae.RetryAfter // 0: the backoff's pause
			case errors.As(err, &ae):
				return ae.Status >= 500 && opt.Retry, 0
			default: // network error
				return opt.Retry, 0
			}
		},
	}, func(ctx context.Context) (err error) {
		status, h, body, err = c.once(ctx, method, path, payload, opt.Admin)
		return err
	})
	if err != nil {
		return 0, nil, nil, err
	}
	return status, h, body, nil
}

// once sends one request.
func (c *Client) once(ctx context.Context, method, path string, payload []byte, admin bool) (int, http.Header, []byte, error) {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.UserAgent)
	if admin {
		if c.adminToken != "" {
			req.Header.Set("Authorization", "Bearer "+c.adminToken)
		}
	} else if c.key != "" {
		req.Header.Set("x-api-key", c.key)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s %s: %w", method, c.base+path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBytes))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return res.StatusCode, res.Header, raw, ParseError(res.StatusCode, res.Header, raw)
	}
	return res.StatusCode, res.Header, raw, nil
}
