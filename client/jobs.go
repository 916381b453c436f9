package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Polling of Wait: the first read after pollMin, then each pause 1.5
// times longer up to pollMax; a 429 waits its Retry-After.
const (
	pollMin = 500 * time.Millisecond
	pollMax = 2 * time.Second
	// MaxTransient is how many transient failures in a row (5xx, network)
	// polling or a transfer survives.
	MaxTransient = 5
)

// Job is a generation job as the API answers it (GET
// /v1/vfx/generations/{id}; docs/api.md).
type Job struct {
	ID             string            `json:"id"`
	Status         string            `json:"status"` // in_queue, processing, completed, failed
	Progress       *int              `json:"progress"`
	GenerationType *string           `json:"generation_type"`
	AlphaMode      *string           `json:"alpha_mode"`
	Prompt         string            `json:"prompt,omitempty"`
	Frames         int               `json:"frames,omitempty"`
	Output         map[string]string `json:"output,omitempty"` // output name -> signed URL
	Seed           uint32            `json:"seed"`
	Error          string            `json:"error,omitempty"`
	CreatedAt      string            `json:"created_at"`
	ModifiedAt     string            `json:"modified_at"`
	CompletedAt    *string           `json:"completed_at"`
}

// Terminal reports whether the job has finished (completed or failed).
func (j Job) Terminal() bool { return j.Status == "completed" || j.Status == "failed" }

// JobPage is one page of GET /v1/vfx/generations.
type JobPage struct {
	Jobs          []Job   `json:"jobs"`
	NextPageToken *string `json:"next_page_token"`
}

// generations is the path of the generation API's jobs.
const generations = "/v1/vfx/generations"

// jobPath is the path of one job.
func jobPath(id string) string { return generations + "/" + url.PathEscape(id) }

// Submit creates a generation job from request (the JSON body of POST
// /v1/vfx/generations). Without an idempotency_key it adds one of its
// own, which makes resending after a 5xx or a lost answer safe; request
// is changed in place.
func (c *Client) Submit(ctx context.Context, request map[string]any) (Job, error) {
	if _, ok := request["idempotency_key"]; !ok {
		var b [12]byte
		_, _ = rand.Read(b[:])
		request["idempotency_key"] = "vfx-cli-" + hex.EncodeToString(b[:])
	}
	_, _, raw, err := c.Call(ctx, http.MethodPost, generations, request, CallOptions{Retry: true})
	if err != nil {
		return Job{}, err
	}
	var j Job
	if err := json.Unmarshal(raw, &j); err != nil || j.ID == "" {
		return Job{}, fmt.Errorf("submit: %w: %s", ErrUnexpectedAnswer, OneLine(string(raw)))
	}
	return j, nil
}

// JobJSON returns the API's JSON answer for one job.
func (c *Client) JobJSON(ctx context.Context, id string) ([]byte, error) {
	_, _, raw, err := c.Call(ctx, http.MethodGet, jobPath(id), nil, CallOptions{Retry: true})
	return raw, err
}

// Job reads one job.
func (c *Client) Job(ctx context.Context, id string) (Job, error) {
	raw, err := c.JobJSON(ctx, id)
	if err != nil {
		return Job{}, err
	}
	var j Job
	if err := json.Unmarshal(raw, &j); err != nil || j.ID == "" {
		return Job{}, fmt.Errorf("%w: %.200s", ErrUnexpectedAnswer, raw)
	}
	return j, nil
}

// ListJSON returns the API's JSON answer for a page of the caller's jobs,
// newest first: limit per page (0: the server's default) from pageToken
// (the previous page's next_page_token; "" for the first page). The
// answer decodes into a JobPage.
func (c *Client) ListJSON(ctx context.Context, limit int, pageToken string) ([]byte, error) {
	q := make([]string, 0, 2)
	if limit != 0 {
		q = append(q, "limit="+strconv.Itoa(limit))
	}
	if pageToken != "" {
		q = append(q, "page_token="+url.QueryEscape(pageToken))
	}
	path := generations
	if len(q) > 0 {
		path += "?" + strings.Join(q, "&")
	}
	_, _, raw, err := c.Call(ctx, http.MethodGet, path, nil, CallOptions{Retry: true})
	return raw, err
}

// Progress hears about a job that Wait polls.
type Progress interface {
	// Update is called with the job as first given and after each read.
	Update(Job)
	// Waiting says that polling pauses for d (rate limited).
	Waiting(j Job, d time.Duration)
}

// Wait polls the job until it ends, with a growing pause between reads,
// and returns it; p (nil for none) hears each read. A 429 waits its
// Retry-After, an exhausted read budget (X-RateLimit-Remaining 0) waits
// for X-RateLimit-Reset, and up to MaxTransient failures in a row (5xx,
// network) are retried. It returns the last job read with ctx's error
// when ctx ends first.
func (c *Client) Wait(ctx context.Context, j Job, p Progress) (Job, error) {
	if p == nil {
		p = noProgress{}
	}
	p.Update(j)
	if j.Terminal() {
		return j, nil
	}
	path := jobPath(j.ID)
	delay := pollMin
	transient := 0
	// Each round sleeps at least pollMin, so the context's deadline
	// bounds the loop; maxRounds is a backstop for a context without one.
	const maxRounds = 1_000_000
	for range maxRounds {
		if err := c.sleep(ctx, delay); err != nil {
			return j, err
		}
		_, h, raw, err := c.once(ctx, http.MethodGet, path, nil, false)
		var ae *Error
		switch {
		case err == nil:
			transient = 0
		case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests:
			delay = max(ae.RetryAfter, pollMin)
			p.Waiting(j, delay)
			continue
		case ctx.Err() != nil:
			return j, ctx.Err()
		case (!errors.As(err, &ae) || ae.Status >= 500) && transient < MaxTransient:
			transient++
			delay = min(delay*2, 8*time.Second)
			continue
		default:
			return j, err
		}
		var next Job
		if err := json.Unmarshal(raw, &next); err != nil || next.ID == "" {
			return j, fmt.Errorf("%w: %s", ErrUnexpectedAnswer, OneLine(string(raw)))
		}
		j = next
		p.Update(j)
		if j.Terminal() {
			return j, nil
		}
		delay = min(delay*3/2, pollMax)
		if h.Get("X-RateLimit-Remaining") == "0" {
			if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
				if d := time.Until(time.Unix(reset, 0)); d > delay {
					delay = min(d, maxRetryWait)
					p.Waiting(j, delay)
				}
			}
		}
	}
	return j, fmt.Errorf("gave up after %d reads", maxRounds)
}

type noProgress struct{}

func (noProgress) Update(Job)                 {}
func (noProgress) Waiting(Job, time.Duration) {}

// Admin calls the operator API (/admin/v1/…) with the operator token and
// returns the status and body of a 2xx answer, or an *Error. GETs are
// retried like any read; other methods are sent once (a 429 is waited out).
func (c *Client) Admin(ctx context.Context, method, path string, body any) (int, []byte, error) {
	status, _, raw, err := c.Call(ctx, method, path, body, CallOptions{Admin: true, Retry: method == http.MethodGet})
	return status, raw, err
}
