package gen

import (
	"bufio"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSlowBodyRefused: a client that sends 10 of 100,000 declared bytes and
// stalls gets 408 REQUEST_TIMEOUT once it falls under the minimum body
// rate, and its budget is returned; a body at full speed is read.
func TestSlowBodyRefused(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true, Mut: func(c *api.Config) {
		c.MinBodyRate = 1000
		c.MinBodyGrace = 100 * time.Millisecond
	}})
	key := e.OrgKey()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/vfx/generations HTTP/1.1\r\nHost: x\r\nx-api-key: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"prompt\":", key)
	// The answer must come while the client still holds the connection
	// open without sending: the bound is only against a hung test.
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled body: %d", res.StatusCode)
	}
	if n := e.Srv.Budget.InUse(); n != 0 {
		t.Fatalf("%d budget bytes still held", n)
	}
	if r := e.Do("POST", "/v1/uploads", key, map[string]any{"filename": "a.png"}); r.Status != 200 {
		t.Fatalf("a body at full speed: %d %s", r.Status, r.Body)
	}
}

// TestBodyBudget: bodies that fit the in-flight budget are read; one that
// does not gets 503 SERVICE_UNAVAILABLE with Retry-After, at the edge.
func TestBodyBudget(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true, Mut: func(c *api.Config) { c.MaxInflightBodyBytes = 1000 }})
	key := e.OrgKey()
	body := `{"filename":"a.png"}`
	// Hold all but len(body) bytes of the budget, as concurrent requests would.
	if !e.Srv.Budget.Take(1000 - int64(len(body))) {
		t.Fatal("take")
	}
	if r := e.Do("POST", "/v1/uploads", key, body); r.Status != 200 {
		t.Fatalf("a body that just fits: %d %s", r.Status, r.Body)
	}
	if r := e.Do("POST", "/v1/uploads", key, body+" "); r.Status != 503 || r.Code() != api.CodeUnavailable || r.Header.Get("Retry-After") == "" {
		t.Fatalf("one byte over: %d %v %s", r.Status, r.Header, r.Body)
	}
	e.Srv.Budget.Give(1000 - int64(len(body)))
	if r := e.Do("POST", "/v1/uploads", key, body+" "); r.Status != 200 {
		t.Fatalf("after the budget was returned: %d %s", r.Status, r.Body)
	}
	if n := e.Srv.Budget.InUse(); n != 0 {
		t.Fatalf("%d budget bytes still held", n)
	}
}
