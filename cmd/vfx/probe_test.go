package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestProbe: 2xx exits 0, 503 and a refused connection exit 1, a bad URL
// exits 2.
func TestProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/livez" {
			_, _ = w.Write([]byte("ok\n"))
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"probe", srv.URL + "/livez"}, 0, "200 OK"},
		{[]string{"probe", srv.URL + "/readyz"}, 1, "answered 503 Service Unavailable"},
		{[]string{"probe", "--timeout", "1s", "http://127.0.0.1:1/livez"}, 1, "unhealthy"},
		{[]string{"probe", "ftp://x/y"}, 2, "not an http"},
		{[]string{"probe"}, 2, "want one URL"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), c.args, &out, &errOut)
		if code != c.code || !strings.Contains(out.String()+errOut.String(), c.want) {
			t.Errorf("%v: exit %d (%s%s), want %d with %q", c.args, code, out.String(), errOut.String(), c.code, c.want)
		}
	}
}
