package gen

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/account"
)

// sseEvent is one server-sent event.
type sseEvent struct{ name, data string }

// openStream opens GET /v1/vfx/events with key and returns the response
// and a channel of its events (closed at the end of the stream).
func (e *env) openStream(ctx context.Context, key, query string) (*http.Response, <-chan sseEvent) {
	e.T.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.URL+"/v1/vfx/events"+query, nil)
	req.Header.Set("x-api-key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	ch := make(chan sseEvent, 16)
	if res.StatusCode != 200 {
		close(ch)
		return res, ch
	}
	go func() {
		defer close(ch)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					select {
					case ch <- ev:
					case <-ctx.Done():
						return
					}
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			}
		}
	}()
	return res, ch
}

// nextEvent waits for the next event, failing after d.
func nextEvent(t *testing.T, ch <-chan sseEvent, d time.Duration) (sseEvent, bool) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		return ev, ok
	case <-time.After(d):
		t.Fatalf("no event within %v", d)
		return sseEvent{}, false
	}
}

func pageOf(t *testing.T, ev sseEvent) api.JobPage {
	t.Helper()
	var p api.JobPage
	if ev.name != "jobs" || json.Unmarshal([]byte(ev.data), &p) != nil {
		t.Fatalf("event %q %q", ev.name, ev.data)
	}
	return p
}

// TestEventStream: the stream counts one read, sends the page at once,
// again when a job joins it and when it completes, and ends at its age
// limit and at shutdown; a sixth stream of an account is refused.
func TestEventStream(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true, Mut: func(c *api.Config) {
		c.StreamEvery, c.StreamMaxAge, c.MaxStreamsPerAccount = 50*time.Millisecond, 3*time.Second, 2
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, key := e.NewAccount(account.KindPersonal, account.AccountInput{})
	res, ch := e.openStream(ctx, key, "?limit=5")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("X-RateLimit-Remaining") != "4" {
		t.Fatalf("open: %d %v", res.StatusCode, res.Header)
	}
	ev, _ := nextEvent(t, ch, 5*time.Second)
	if p := pageOf(t, ev); len(p.Jobs) != 0 {
		t.Fatalf("first page %+v", p)
	}

	// A job joins the page, then completes.
	org := e.OrgKey()
	src := e.Upload(key, "src.png", apitest.PNGBytes(t, 64, 48, false))
	r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(src))
	if r.Status != 201 {
		t.Fatalf("submit: %d %s", r.Status, r.Body)
	}
	id := r.JSON(t)["id"].(string)
	ev, _ = nextEvent(t, ch, 5*time.Second)
	if p := pageOf(t, ev); len(p.Jobs) != 1 || p.Jobs[0].ID != id || p.Jobs[0].Status != "in_queue" {
		t.Fatalf("after submit %+v", p)
	}
	e.Finish(id, true)
	for {
		ev, _ = nextEvent(t, ch, 5*time.Second)
		p := pageOf(t, ev)
		if p.Jobs[0].Status == "completed" {
			if p.Jobs[0].Output["render"] == "" {
				t.Fatalf("completed without outputs: %+v", p.Jobs[0])
			}
			break
		}
	}

	// Two streams per account at most (here): the third is refused with
	// 429 and Retry-After, and counts a read as every open does.
	res2, ch2 := e.openStream(ctx, key, "")
	if res2.StatusCode != 200 {
		t.Fatalf("second: %d", res2.StatusCode)
	}
	nextEvent(t, ch2, 5*time.Second)
	res3, _ := e.openStream(ctx, key, "")
	if res3.StatusCode != 429 || res3.Header.Get("Retry-After") == "" {
		t.Fatalf("third: %d %v", res3.StatusCode, res3.Header)
	}
	res3.Body.Close()
	// A bad limit is the list's 422.
	if r := e.Do("GET", "/v1/vfx/events?limit=101", org, nil); r.Status != 422 {
		t.Fatalf("limit 101: %d %s", r.Status, r.Body)
	}

	// The age limit ends the first stream with an end event.
	for {
		ev, ok := nextEvent(t, ch, 5*time.Second)
		if !ok {
			t.Fatal("stream closed without an end event")
		}
		if ev.name == "end" {
			if !strings.Contains(ev.data, "max_age") {
				t.Fatalf("end %q", ev.data)
			}
			break
		}
	}
	if _, ok := nextEvent(t, ch, 5*time.Second); ok {
		t.Fatal("events after end")
	}

	// Shutdown ends the others at once and refuses new ones.
	e.gen.StopStreams()
	e.gen.StopStreams() // idempotent
	for {
		ev, ok := nextEvent(t, ch2, 2*time.Second)
		if !ok {
			t.Fatal("stream closed without an end event")
		}
		if ev.name == "end" {
			if !strings.Contains(ev.data, "shutdown") {
				t.Fatalf("end %q", ev.data)
			}
			break
		}
	}
	if r := e.Do("GET", "/v1/vfx/events", org, nil); r.Status != 503 {
		t.Fatalf("after StopStreams: %d %s", r.Status, r.Body)
	}
}
