package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/store"
)

// Standard Webhooks headers.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// WebhookSecretPrefix marks a Standard Webhooks secret whose key is the
// base64 text after it.
const WebhookSecretPrefix = "whsec_"

// SignWebhook returns the Standard Webhooks signature header value
// "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>". A secret starting with
// "whsec_" uses the base64-decoded rest as the key (the convention); any
// other secret is used as it is.
func SignWebhook(secret, id string, timestamp int64, body []byte) string {
	key := []byte(secret)
	if rest, ok := strings.CutPrefix(secret, WebhookSecretPrefix); ok {
		if k, err := base64.StdEncoding.DecodeString(rest); err == nil {
			key = k
		}
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// webhookBody is the body POSTed to callback_url (docs/api.md, Webhooks).
type webhookBody struct {
	ID          string            `json:"id"`
	Status      string            `json:"status"`
	Output      map[string]string `json:"output,omitempty"`
	CompletedAt string            `json:"completed_at"`
	Error       string            `json:"error,omitempty"`
}

// newHookClient is the webhook HTTP client: the SSRF guard checks every
// dialled address, no proxy, no redirects followed (a 3xx is a failed
// attempt), timeout per attempt.
func newHookClient(guard *store.AddressGuard, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           guard.DialContext(&net.Dialer{Timeout: timeout}),
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// runWebhooks delivers webhooks from the durable consumer until ctx ends.
// Each attempt's outcome is stored on the job's meta before the event is
// settled; the next attempt is scheduled by a Nak with the retry delay, so
// delivery survives a restart of the process.
func (s *Server) runWebhooks(ctx context.Context, ec *queue.EventConsumer) {
	log := s.log.Named("webhooks")
	ec.Consume(ctx, log, func(ctx context.Context, d *queue.EventDelivery) time.Duration {
		delay, err := s.deliver(ctx, d.Event)
		if err != nil {
			log.Warn("webhook delivery step failed; retrying", zap.String("job_id", d.Event.JobID), zap.Error(err))
			return time.Second
		}
		return delay
	})
}

// deliver makes one webhook attempt for ev when one is due and returns the
// delay before the next attempt (0: nothing more to do). An error means
// the state could not be read or stored; the event is retried.
func (s *Server) deliver(ctx context.Context, ev queue.Event) (time.Duration, error) {
	if ev.Kind == queue.KindProduct && ev.Status.Terminal() {
		return s.deliverProduct(ctx, ev)
	}
	if ev.Kind != queue.KindGeneration || !ev.Status.Terminal() {
		return 0, nil
	}
	entry, err := s.meta.Get(ctx, ev.JobID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("api: job meta: %w", err)
	}
	var m genMeta
	if err := json.Unmarshal(entry.Value(), &m); err != nil {
		return 0, nil // not ours to fix
	}
	rec, due, err := s.hookDue(ctx, ev.JobID, m.CallbackURL, m.Webhook)
	if err != nil || !due {
		return 0, err
	}
	body, err := s.hookBody(ctx, rec)
	if err != nil {
		return 0, err
	}
	secret, err := s.acc.WebhookSecret(ctx, m.Owner)
	if err != nil {
		return 0, fmt.Errorf("api: webhook secret: %w", err)
	}
	attemptErr := s.post(ctx, m.CallbackURL, rec.ID+"_"+string(rec.Status), secret, body)
	if ctx.Err() != nil {
		return 0, ctx.Err() // shutting down: the attempt does not count
	}

	m.Webhook.record(attemptErr, s.maxHookAttempts())
	v, _ := json.Marshal(m)
	if _, err := s.meta.Update(context.WithoutCancel(ctx), ev.JobID, v, entry.Revision()); err != nil {
		return 0, fmt.Errorf("api: store webhook state: %w", err)
	}
	s.log.Info("webhook attempt", zap.String("job_id", rec.ID), zap.Int("attempt", m.Webhook.Attempts),
		zap.String("status", m.Webhook.Status), zap.String("last_error", m.Webhook.LastError))
	return s.retryAfter(m.Webhook), nil
}

// hookBody is the webhook body of a finished record, with fresh URLs.
func (s *Server) hookBody(ctx context.Context, rec queue.Record) ([]byte, error) {
	job, err := s.viewWith(ctx, rec, nil)
	if err != nil {
		return nil, err
	}
	b := webhookBody{ID: job.ID, Status: job.Status, Output: job.Output, Error: job.Error}
	if job.CompletedAt != nil {
		b.CompletedAt = *job.CompletedAt
	}
	return json.Marshal(b)
}

// post makes one signed POST; nil means a 2xx answer.
func (s *Server) post(ctx context.Context, url, id, secret string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("bad callback url: %v", err)
	}
	ts := s.now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "vfx-webhooks/1.0")
	req.Header.Set(HeaderWebhookID, id)
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderWebhookSignature, SignWebhook(secret, id, ts, body))
	resp, err := s.hooks.Do(req)
	if err != nil {
		if errors.Is(err, store.ErrForbiddenAddress) {
			return fmt.Errorf("callback address refused: %v", err)
		}
		if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Client.Timeout") {
			return fmt.Errorf("no response within %s", s.cfg.WebhookTimeout)
		}
		return fmt.Errorf("request failed: %v", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("callback answered HTTP %d", resp.StatusCode)
	}
	return nil
}

// record counts a delivery attempt: delivered on success, failed once
// maxAttempts attempts failed, else still pending with the error kept.
func (w *webhookState) record(err error, maxAttempts int) {
	w.Attempts++
	if err == nil {
		w.Status, w.LastError = WebhookDelivered, ""
		return
	}
	w.LastError = err.Error()
	if w.Attempts >= maxAttempts {
		w.Status = WebhookFailed
	}
}

// retryAfter is the wait before the next attempt of a pending webhook
// (0 when no attempt follows).
func (s *Server) retryAfter(w *webhookState) time.Duration {
	if w.Status != WebhookPending {
		return 0
	}
	return max(s.delays[w.Attempts-1], time.Millisecond)
}

// maxHookAttempts is the number of delivery attempts of a webhook.
func (s *Server) maxHookAttempts() int { return len(s.delays) + 1 }

// hookDue returns the job's record when its webhook w is due: a callback
// is set, the webhook is pending with attempts left and the job is
// terminal. A job that no longer exists is not due.
func (s *Server) hookDue(ctx context.Context, jobID, callbackURL string, w *webhookState) (queue.Record, bool, error) {
	if callbackURL == "" || w == nil || w.Status != WebhookPending || w.Attempts >= s.maxHookAttempts() {
		return queue.Record{}, false, nil
	}
	rec, _, err := s.q.Get(ctx, jobID)
	if errors.Is(err, queue.ErrNotFound) {
		return queue.Record{}, false, nil
	}
	if err != nil {
		return queue.Record{}, false, fmt.Errorf("api: job: %w", err)
	}
	return rec, rec.Status.Terminal(), nil
}
