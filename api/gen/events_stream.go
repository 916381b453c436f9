package gen

import (
	"encoding/json"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/vfxrender/vfx/account"
)

// Defaults of the job event stream (GET /v1/vfx/events; Config.Stream*).
const (
	// DefaultStreamEvery is how often a stream looks at its page of jobs.
	DefaultStreamEvery = 2 * time.Second
	// DefaultStreamMaxAge is how long one stream lasts before it ends with
	// an "end" event (the client opens another, one read).
	DefaultStreamMaxAge = 5 * time.Minute
	// DefaultMaxStreamsPerAccount is how many streams an account may hold
	// open at once on one API replica.
	DefaultMaxStreamsPerAccount = 5
	// streamPing is the pause between keep-alive comments.
	streamPing = 15 * time.Second
)

// streams counts the open event streams per account and ends them all at
// shutdown (StopStreams).
type streams struct {
	mu   sync.Mutex
	open map[string]int
	stop chan struct{}
	once sync.Once
}

func newStreams() *streams { return &streams{open: map[string]int{}, stop: make(chan struct{})} }

// acquire takes one of the account's max streams; release gives it back.
func (st *streams) acquire(acct string, max int) (release func(), ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.open[acct] >= max {
		return nil, false
	}
	st.open[acct]++
	return func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.open[acct]--; st.open[acct] <= 0 {
			delete(st.open, acct)
		}
	}, true
}

// StopStreams ends every open event stream of GET /v1/vfx/events with an
// "end" event and refuses new ones, so that an http.Server's Shutdown
// does not wait for them: register it with RegisterOnShutdown. It is
// idempotent.
func (s *API) StopStreams() { s.streams.once.Do(func() { close(s.streams.stop) }) }

// streamGenerations is GET /v1/vfx/events: the page of the caller's jobs
// that GET /v1/vfx/generations with the same limit and page_token would
// answer, as server-sent events. It counts as one read when it opens; an
// "jobs" event carries the page (signed URLs included) at once and then
// whenever a job on it changes (status, progress, error) or a job joins
// it; a comment keeps the connection alive; after Config.StreamMaxAge,
// or when the server shuts down, an "end" event closes it.
func (s *API) streamGenerations(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	if err := s.Limit(ctx, w, account.ClassRead); err != nil {
		return err
	}
	limit, token, err := listQuery(r)
	if err != nil {
		return err
	}
	owner := api.PrincipalOf(ctx).Account.ID
	select {
	case <-s.streams.stop:
		return api.Unavailable(1, "the server is shutting down")
	default:
	}
	release, ok := s.streams.acquire(owner, s.Cfg.MaxStreamsPerAccount)
	if !ok {
		e := api.NewError(api.CodeRateLimitExceeded, "at most %d event streams per account at once; close one, or read GET /v1/vfx/generations", s.Cfg.MaxStreamsPerAccount)
		e.Header = http.Header{"Retry-After": {strconv.Itoa(int(s.Cfg.StreamEvery/time.Second) + 1)}}
		return e
	}
	defer release()
	page, err := s.jobPage(ctx, owner, limit, token)
	if err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("api: event stream: %w", err)
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if _, err := io.WriteString(w, "retry: 3000\n\n"); err != nil {
		return nil
	}
	last := pageFingerprint(page)
	if send("jobs", page) != nil {
		return nil // the client went away
	}
	tick := time.NewTicker(s.Cfg.StreamEvery)
	defer tick.Stop()
	ping := time.NewTicker(streamPing)
	defer ping.Stop()
	end := time.NewTimer(s.Cfg.StreamMaxAge)
	defer end.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.streams.stop:
			_ = send("end", map[string]string{"reason": "shutdown"})
			return nil
		case <-end.C:
			_ = send("end", map[string]string{"reason": "max_age"})
			return nil
		case <-ping.C:
			if _, err := io.WriteString(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		case <-tick.C:
			page, err := s.jobPage(ctx, owner, limit, token)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				s.Log.Warn("event stream: job page", zap.Error(err))
				continue // the next tick tries again
			}
			if fp := pageFingerprint(page); fp != last {
				last = fp
				if send("jobs", page) != nil {
					return nil
				}
			}
		}
	}
}

// pageFingerprint names what a client sees change on a page of jobs
// (not the signed URLs, which change on every read).
func pageFingerprint(p api.JobPage) string {
	var b strings.Builder
	for _, j := range p.Jobs {
		prog := -1
		if j.Progress != nil {
			prog = *j.Progress
		}
		hook := ""
		if j.Webhook != nil {
			hook = fmt.Sprint(j.Webhook.Status)
		}
		fmt.Fprintf(&b, "%s|%s|%d|%s|%s|%s\n", j.ID, j.Status, prog, j.ModifiedAt, j.Error, hook)
	}
	if p.NextPageToken != nil {
		b.WriteString(*p.NextPageToken)
	}
	return b.String()
}
