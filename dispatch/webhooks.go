package dispatch

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

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

// Webhook delivery states (State.Status).
const (
	Pending   = "pending"
	Delivered = "delivered"
	Failed    = "failed"
)

// State is the delivery state of a job's webhook, kept by the job's API
// beside the job and shown in its view.
type State struct {
	Status    string `json:"status"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error"`
}

// record counts a delivery attempt: delivered on success, failed once
// maxAttempts attempts failed, else still pending with the error kept.
func (w *State) record(err error, maxAttempts int) {
	w.Attempts++
	if err == nil {
		w.Status, w.LastError = Delivered, ""
		return
	}
	w.LastError = err.Error()
	if w.Attempts >= maxAttempts {
		w.Status = Failed
	}
}

// newClient is the webhook HTTP client: the SSRF guard checks every
// dialled address, no proxy, no redirects followed (a 3xx is a failed
// attempt), timeout per attempt.
func newClient(guard *store.AddressGuard, timeout time.Duration) *http.Client {
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
// Each attempt's outcome is stored beside the job before the event is
// settled; the next attempt is scheduled by a Nak with the retry delay, so
// delivery survives a restart of the process.
func (d *Dispatcher) runWebhooks(ctx context.Context, ec *queue.EventConsumer) {
	log := d.log.Named("webhooks")
	ec.Consume(ctx, log, func(ctx context.Context, del *queue.EventDelivery) time.Duration {
		delay, err := d.deliver(ctx, del.Event)
		if err != nil {
			log.Warn("webhook delivery step failed; retrying", zap.String("job_id", del.Event.JobID), zap.Error(err))
			return time.Second
		}
		return delay
	})
}

// deliver makes one webhook attempt for ev when one is due and returns the
// delay before the next attempt (0: nothing more to do). An error means
// the state could not be read or stored; the event is retried.
func (d *Dispatcher) deliver(ctx context.Context, ev queue.Event) (time.Duration, error) {
	a := d.cfg.APIs[ev.Kind]
	if a == nil || !ev.Status.Terminal() {
		return 0, nil
	}
	h, ok, err := a.Hook(ctx, ev.JobID)
	if err != nil || !ok {
		return 0, err
	}
	if h.URL == "" || h.State == nil || h.State.Status != Pending || h.State.Attempts >= d.maxAttempts() {
		return 0, nil
	}
	rec, _, ok, err := d.finished(ctx, ev)
	if err != nil || !ok || !rec.Status.Terminal() {
		return 0, err
	}
	status, body, secret, err := a.Message(ctx, rec, h)
	if err != nil {
		return 0, err
	}
	attemptErr := d.post(ctx, h.URL, rec.ID+"_"+status, secret, body)
	if ctx.Err() != nil {
		return 0, ctx.Err() // shutting down: the attempt does not count
	}
	h.State.record(attemptErr, d.maxAttempts())
	if err := a.SaveHook(context.WithoutCancel(ctx), ev.JobID, h); err != nil {
		return 0, fmt.Errorf("dispatch: store webhook state: %w", err)
	}
	d.log.Info("webhook attempt", zap.String("job_id", rec.ID), zap.Int("attempt", h.State.Attempts),
		zap.String("status", h.State.Status), zap.String("last_error", h.State.LastError))
	return d.retryAfter(h.State), nil
}

// post makes one signed POST; nil means a 2xx answer.
func (d *Dispatcher) post(ctx context.Context, url, id, secret string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("bad callback url: %v", err)
	}
	ts := d.now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "vfx-webhooks/1.0")
	req.Header.Set(HeaderWebhookID, id)
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderWebhookSignature, SignWebhook(secret, id, ts, body))
	resp, err := d.client.Do(req)
	if err != nil {
		if errors.Is(err, store.ErrForbiddenAddress) {
			return fmt.Errorf("callback address refused: %v", err)
		}
		if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Client.Timeout") {
			return fmt.Errorf("no response within %s", d.cfg.Timeout)
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

// retryAfter is the wait before the next attempt of a pending webhook
// (0 when no attempt follows).
func (d *Dispatcher) retryAfter(w *State) time.Duration {
	if w.Status != Pending {
		return 0
	}
	return max(d.delays[w.Attempts-1], time.Millisecond)
}

// maxAttempts is the number of delivery attempts of a webhook.
func (d *Dispatcher) maxAttempts() int { return len(d.delays) + 1 }
