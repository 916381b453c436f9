package client

import (
	"net/http"
	"testing"
	"time"
)

func TestParseError(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		want   string
	}{
		{400, `{"error":{"code":"INVALID_SEED","message":"seed -1:\nwant 0 to 4294967295"}}`, "INVALID_SEED: seed -1: want 0 to 4294967295 (HTTP 400)"},
		{422, `{"detail":[{"loc":["body","seed"],"msg":"Input should be a valid integer","type":"int_type"}]}`,
			"VALIDATION_ERROR: body.seed: Input should be a valid integer (HTTP 422)"},
		{422, `{"detail":{"error_code":"INVALID_INPUT","message":"bad inputs","unknown_fields":["x"]}}`,
			"INVALID_INPUT: bad inputs; unknown fields: x (HTTP 422)"},
		{404, `{"detail":"Not Found"}`, "Not Found: Not Found (HTTP 404)"},
		{502, "<html>bad gateway</html>", "Bad Gateway: <html>bad gateway</html> (HTTP 502)"},
	} {
		if got := ParseError(c.status, http.Header{}, []byte(c.body)).Error(); got != c.want {
			t.Errorf("%s: %q, want %q", c.body, got, c.want)
		}
	}
	if d := ParseError(429, http.Header{"Retry-After": {"7"}}, nil).RetryAfter; d != 7*time.Second {
		t.Errorf("Retry-After: %s", d)
	}
}
