// The HTTP client of the commands that call the API: connection flags,
// requests with retries, and the API's error answers read back.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/internal/retry"
	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/job"
)

// Client-side defaults of the HTTP commands (`vfx submit`, `vfx jobs`,
// `vfx admin`).
const (
	defaultServerURL = "http://127.0.0.1:8080"
	// maxResponseBytes caps an API response body read into memory.
	maxResponseBytes = 16 << 20
	// maxCallAttempts bounds the attempts of one API call (429 and, where
	// retrying is safe, 5xx and network errors).
	maxCallAttempts = 5
	// maxRetryWait caps one wait before a retry, whatever Retry-After says.
	maxRetryWait = 65 * time.Second
)

// apiClient calls the generation API (x-api-key) and the operator API
// (Authorization: Bearer) of a vfx server.
type apiClient struct {
	base       string // server URL without a trailing slash
	key        string // API key for /v1
	adminToken string // operator token for /admin/v1
	hc         *http.Client
	// sleep waits d or until ctx ends (tests may shorten it).
	sleep func(ctx context.Context, d time.Duration) error
}

// newAPIClient returns a client of the server at base.
func newAPIClient(base, key, adminToken string) *apiClient {
	return &apiClient{
		base: strings.TrimRight(strings.TrimSpace(base), "/"), key: strings.TrimSpace(key),
		adminToken: strings.TrimSpace(adminToken),
		// No overall timeout: uploads and downloads may be large. Calls
		// are bounded by their contexts.
		hc:    &http.Client{Transport: http.DefaultTransport},
		sleep: retry.Sleep,
	}
}

// apiError is an error answer of the server, in either body shape
// (docs/api.md, Errors): the envelope {"error":{"code","message"}} or a `detail` value.
type apiError struct {
	Status     int
	Code       job.Code // envelope code or detail error_code; empty when none
	Message    string   // one line
	RetryAfter time.Duration
}

// Error renders the answer on one line: "CODE: message (HTTP status)".
func (e *apiError) Error() string {
	code := string(e.Code)
	if code == "" {
		code = http.StatusText(e.Status)
	}
	return fmt.Sprintf("%s: %s (HTTP %d)", code, e.Message, e.Status)
}

// oneLine folds s onto one line and caps its length.
func oneLine(s string) string {
	return trunc.String(strings.Join(strings.Fields(s), " "), 500)
}

// parseAPIError reads an error answer: the envelope, a FastAPI-style
// detail (string, object or validation-error array), or plain text.
func parseAPIError(status int, h http.Header, body []byte) *apiError {
	e := &apiError{Status: status, RetryAfter: retryAfter(h)}
	var env struct {
		Error  *api.ErrorBody  `json:"error"`
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &env) != nil {
		e.Message = oneLine(string(body))
		if e.Message == "" {
			e.Message = http.StatusText(status)
		}
		return e
	}
	switch {
	case env.Error != nil:
		e.Code, e.Message = env.Error.Code, oneLine(env.Error.Message)
	case len(env.Detail) > 0:
		e.Code, e.Message = describeDetail(env.Detail)
	default:
		e.Message = oneLine(string(body))
	}
	return e
}

// describeDetail returns the code and a one-line message of a `detail`
// value.
func describeDetail(raw json.RawMessage) (code job.Code, msg string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return "", oneLine(s)
	}
	var obj api.ErrorDetail
	if json.Unmarshal(raw, &obj) == nil && (obj.ErrorCode != "" || obj.Message != "") {
		m := obj.Message
		if len(obj.UnknownFields) > 0 {
			m += "; unknown fields: " + strings.Join(obj.UnknownFields, ", ")
		}
		if len(obj.MissingFields) > 0 {
			m += "; missing fields: " + strings.Join(obj.MissingFields, ", ")
		}
		return obj.ErrorCode, oneLine(m)
	}
	var list []api.ValidationError
	if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
		parts := make([]string, 0, len(list))
		for _, v := range list {
			loc := make([]string, 0, len(v.Loc))
			for _, l := range v.Loc {
				loc = append(loc, fmt.Sprint(l))
			}
			parts = append(parts, fmt.Sprintf("%s: %s", strings.Join(loc, "."), v.Msg))
		}
		return "VALIDATION_ERROR", oneLine(strings.Join(parts, "; "))
	}
	return "", oneLine(string(raw))
}

// retryAfter reads Retry-After in seconds (0 when absent or not a number).
func retryAfter(h http.Header) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// callOptions say how apiClient.call authenticates and retries.
type callOptions struct {
	admin bool // operator token instead of the API key
	// retry resends on 5xx and network errors; only for requests that are
	// safe to repeat (reads, and submissions with an idempotency key). A
	// 429 is always waited out and resent.
	retry bool
}

// call sends a JSON request and returns the status, headers and body of
// a 2xx answer, or an *apiError. It resends a 429 after Retry-After, and
// with opt.retry a 5xx or network failure after a growing pause, at most
// maxCallAttempts times in all.
func (c *apiClient) call(ctx context.Context, method, path string, in any, opt callOptions) (int, http.Header, []byte, error) {
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
		Attempts: maxCallAttempts,
		MaxPause: maxRetryWait,
		Sleep:    c.sleep,
		Retryable: func(err error) (bool, time.Duration) {
			var ae *apiError
			switch {
			case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests:
				return true, ae.RetryAfter // 0: the backoff's pause
			case errors.As(err, &ae):
				return ae.Status >= 500 && opt.retry, 0
			default: // network error
				return opt.retry, 0
			}
		},
	}, func(ctx context.Context) (err error) {
		status, h, body, err = c.once(ctx, method, path, payload, opt.admin)
		return err
	})
	if err != nil {
		return 0, nil, nil, err
	}
	return status, h, body, nil
}

// once sends one request.
func (c *apiClient) once(ctx context.Context, method, path string, payload []byte, admin bool) (int, http.Header, []byte, error) {
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
	req.Header.Set("User-Agent", "vfx-cli/"+version)
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
		return res.StatusCode, res.Header, raw, parseAPIError(res.StatusCode, res.Header, raw)
	}
	return res.StatusCode, res.Header, raw, nil
}

// printJSON writes a JSON answer indented, with a final newline.
func printJSON(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(raw), "", "  "); err != nil {
		return fmt.Errorf("answer is not JSON: %s", oneLine(string(raw)))
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// connFlags are the connection flags shared by the HTTP commands.
type connFlags struct {
	server, key, adminToken *string
	// envKey and envAdmin are VFX_API_KEY and VFX_ADMIN_TOKEN: used when
	// the flag is not given, and never a flag default (-h prints
	// defaults).
	envKey, envAdmin string
}

// addConnFlags defines --server and, as asked, --key and --admin-token on
// fs, defaulting to VFX_API_URL, VFX_API_KEY and VFX_ADMIN_TOKEN (the
// secrets are read at use, so that -h never prints them).
func addConnFlags(fs *flag.FlagSet, getenv func(string) string, withKey, withAdmin bool) connFlags {
	def := func(name, fallback string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return fallback
	}
	cf := connFlags{server: fs.String("server", def("VFX_API_URL", defaultServerURL), "API base URL [VFX_API_URL]")}
	empty := ""
	cf.key, cf.adminToken = &empty, &empty
	if withKey {
		cf.key = fs.String("key", "", "API key, sent as x-api-key (default: VFX_API_KEY; prefer it: flags show in ps) [VFX_API_KEY]")
		cf.envKey = def("VFX_API_KEY", "")
	}
	if withAdmin {
		cf.adminToken = fs.String("admin-token", "", "operator token of /admin/v1 (default: VFX_ADMIN_TOKEN; prefer it) [VFX_ADMIN_TOKEN]")
		cf.envAdmin = def("VFX_ADMIN_TOKEN", "")
	}
	return cf
}

// client checks the connection flags and returns a client.
func (cf connFlags) client(needKey, needAdmin bool) (*apiClient, error) {
	s := strings.TrimSpace(*cf.server)
	if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
		return nil, usageError{fmt.Sprintf("--server %q: want an http:// or https:// URL", s)}
	}
	key, admin := strings.TrimSpace(*cf.key), strings.TrimSpace(*cf.adminToken)
	if key == "" {
		key = cf.envKey
	}
	if admin == "" {
		admin = cf.envAdmin
	}
	if needKey && key == "" {
		return nil, usageError{"an API key is required: --key or VFX_API_KEY"}
	}
	if needAdmin && admin == "" {
		return nil, usageError{"an operator token is required: --admin-token or VFX_ADMIN_TOKEN"}
	}
	return newAPIClient(s, key, admin), nil
}
