package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/internal/kvcas"
	"github.com/vfxrender/vfx/internal/retry"
)

// Idempotency claims, shared by both APIs (buckets gen_idem and
// product_idem, one key per owner and idempotency_key).
//
// A submission with an idempotency_key first claims the key: it creates the
// key's entry naming a new job id, the body's hash, who claims it (this
// Server's instance and the request) and when. While the submission runs,
// its owner renews the claim (an update of the same value, every third of
// Config.IdemClaimLease), so the entry's revision time says the owner is
// alive. Once the job record exists the renewals stop and the entry stays
// as the key's answer: the same key and body get that job.
//
// A request that finds a claim whose job record does not exist waits for
// it (up to idemCreateWait); when the claim has not been renewed for the
// lease, its owner is taken for dead (the process crashed, or the request
// was cut off without its clean-up), and the request takes the claim over
// by compare-and-set at the revision it read: one winner. The winner names
// a new job id, releases what the dead submission held (recoverSubmission:
// its reservation or credits, its stored inline inputs, its meta and index
// entries) and submits normally. A claim is therefore never stuck for
// longer than the lease, and a dead submission's resources are freed by
// the same recovery.
//
// The residual risk is an owner that is alive but frozen (no renewals)
// for a whole lease and then resumes: its job record could appear beside
// the one of the taker. Owners check that they still hold the claim right
// before the job record is created (heldClaim.check), and a lost renewal
// cancels the owner's context, which narrows that window to the time
// between that check and the record's creation.

// DefaultIdemClaimLease is how long an idempotency claim whose job record
// does not exist may go without renewal before another request with the
// same key and body takes it over (Config.IdemClaimLease).
const DefaultIdemClaimLease = 10 * time.Second

// IdemEntry is the value of an idempotency key: the claim of a job id.
type IdemEntry struct {
	JobID    string `json:"job_id"`
	BodyHash string `json:"body_hash"`
	// Holder is who made the claim: the Server's instance id and a
	// request id ("" in entries written before claims were recorded).
	Holder string `json:"holder,omitempty"`
	// ClaimedAt is when the claim was made; the job's created_at.
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	// TookOver names the job id of the dead claim this one replaced.
	TookOver string `json:"took_over,omitempty"`
}

// idemConflictError is a claim of the same key with another body.
type idemConflictError struct{ JobID string }

func (e *idemConflictError) Error() string {
	return "api: idempotency key names job " + e.JobID + " with another body"
}

// Claims is one bucket of idempotency claims.
type Claims struct {
	kv     jetstream.KeyValue
	lease  time.Duration
	wait   time.Duration
	holder string // this Server's instance id
	newID  func() string
	now    func() time.Time
	log    *zap.Logger
}

// claimResult is what acquire found or took.
type claimResult struct {
	// JobID is the job the key names (Found) or the new claim's job id.
	JobID string
	// Found: the key names an existing job record.
	Found bool
	// Claim is the claim this request holds (nil when Found).
	Claim *HeldClaim
	// Dead is the claim taken over, whose submission died (nil if none).
	Dead *IdemEntry
}

// acquire claims key for a new job, or finds the job it names. exists
// reports whether a job record exists. A claim of another body is an
// *idemConflictError. A live claim whose job does not appear within
// c.wait gives 503 with Retry-After; a claim not renewed for c.lease is
// taken over. request names the request in the claim's Holder.
func (c *Claims) acquire(ctx context.Context, key, hash, request string, exists func(context.Context, string) (bool, error)) (claimResult, error) {
	deadline := time.Now().Add(c.wait)
	for {
		e, err := c.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			ie := IdemEntry{JobID: c.newID(), BodyHash: hash, Holder: c.holder + "/" + request, ClaimedAt: c.now().UTC()}
			v, _ := json.Marshal(ie)
			rev, err := c.kv.Create(ctx, key, v)
			if err == nil {
				return claimResult{JobID: ie.JobID, Claim: c.hold(key, v, rev, ie)}, nil
			}
			if kvcas.Conflict(err) {
				continue
			}
			return claimResult{}, fmt.Errorf("api: idempotency key: %w", err)
		}
		if err != nil {
			return claimResult{}, fmt.Errorf("api: idempotency key: %w", err)
		}
		var ie IdemEntry
		if err := json.Unmarshal(e.Value(), &ie); err != nil {
			return claimResult{}, fmt.Errorf("api: idempotency key: %w", err)
		}
		if ie.BodyHash != hash {
			return claimResult{}, &idemConflictError{JobID: ie.JobID}
		}
		found, err := exists(ctx, ie.JobID)
		if err != nil {
			return claimResult{}, err
		}
		if found {
			return claimResult{JobID: ie.JobID, Found: true}, nil
		}
		if time.Since(e.Created()) > c.lease {
			next := IdemEntry{JobID: c.newID(), BodyHash: hash, Holder: c.holder + "/" + request, ClaimedAt: c.now().UTC(), TookOver: ie.JobID}
			v, _ := json.Marshal(next)
			rev, err := c.kv.Update(ctx, key, v, e.Revision())
			if err == nil {
				c.log.Warn("idempotency claim taken over: its submission died before creating the job",
					zap.String("dead_job_id", ie.JobID), zap.String("dead_holder", ie.Holder),
					zap.Time("claimed_at", ie.ClaimedAt), zap.String("job_id", next.JobID))
				return claimResult{JobID: next.JobID, Claim: c.hold(key, v, rev, next), Dead: &ie}, nil
			}
			if kvcas.Conflict(err) || errors.Is(err, jetstream.ErrKeyNotFound) {
				continue // renewed, taken or released meanwhile: look again
			}
			return claimResult{}, fmt.Errorf("api: idempotency key: %w", err)
		}
		if time.Now().After(deadline) {
			return claimResult{}, Unavailable(1,
				"a job with this idempotency_key is still being created; retry the same request")
		}
		if err := retry.Sleep(ctx, 25*time.Millisecond); err != nil {
			return claimResult{}, err
		}
	}
}

// Submission is one submission's hold on its idempotency key, the one
// create-and-wait of both APIs: the job id and created time it uses, and
// the claim it holds (none without a key) until end.
type Submission struct {
	JobID     string
	CreatedAt time.Time
	// Created is set once the job record exists: end then keeps the claim
	// as the key's answer instead of releasing it.
	Created bool
	Claim   *HeldClaim
	// Ctx ends when the claim is lost to another request.
	Ctx    context.Context
	cancel context.CancelFunc
}

// BeginSubmission claims key (of owner, in claims; "" for no key) for a
// new job of the body whose digest is hash. When the key already names a
// job, that job (read by existing) is the answer, written to w with
// status, and the submission is nil: nothing is created. A claim of
// another body is 409 IDEMPOTENCY_CONFLICT with conflict (%s: that job's
// id); a job still being created by a live claim is waited for (acquire).
// The submission a taken-over claim belonged to died: what it held is
// given back first.
func (s *Server) BeginSubmission(ctx context.Context, w http.ResponseWriter, claims *Claims, owner, key, hash, conflict string,
	status int, existing func(ctx context.Context, jobID string) (any, error)) (*Submission, error) {
	sub := &Submission{JobID: claims.newID(), CreatedAt: s.Now().UTC(), Ctx: ctx, cancel: func() {}}
	if key == "" {
		return sub, nil
	}
	res, err := claims.acquire(ctx, IdemKey(owner, key), hash, randomToken(4), s.jobExists)
	if err != nil {
		return nil, idemError(err, conflict)
	}
	if res.Found {
		job, err := existing(ctx, res.JobID)
		if err != nil {
			return nil, err
		}
		WriteJSON(w, status, job)
		return nil, nil
	}
	sub.Claim, sub.JobID, sub.CreatedAt = res.Claim, res.JobID, res.Claim.entry.ClaimedAt
	if res.Dead != nil {
		s.recoverDead(ctx, res.Dead.JobID)
	}
	sub.Ctx, sub.cancel = sub.Claim.context(ctx)
	return sub, nil
}

// End keeps the claim as the key's answer when the job was created, and
// releases it otherwise (a resend starts afresh).
func (sub *Submission) End() {
	if sub.Claim != nil {
		if sub.Created {
			sub.Claim.finish()
		} else {
			sub.Claim.release(sub.Ctx)
		}
	}
	sub.cancel()
}

// HeldClaim is a claim this request holds; it is renewed until finish or
// release.
type HeldClaim struct {
	c     *Claims
	key   string
	val   []byte
	entry IdemEntry

	mu   sync.Mutex
	rev  uint64
	lost bool

	stop chan struct{}
	done chan struct{}
	once sync.Once
	// lostCh is closed when a renewal finds the claim changed.
	lostCh chan struct{}
}

func (c *Claims) hold(key string, val []byte, rev uint64, ie IdemEntry) *HeldClaim {
	h := &HeldClaim{c: c, key: key, val: val, entry: ie, rev: rev,
		stop: make(chan struct{}), done: make(chan struct{}), lostCh: make(chan struct{})}
	go h.renew()
	return h
}

// renew updates the claim every third of the lease until stopped; a
// revision mismatch means another request took it over: the claim is lost.
func (h *HeldClaim) renew() {
	defer close(h.done)
	every := max(h.c.lease/3, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		h.mu.Lock()
		rev := h.rev
		h.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), every)
		nrev, err := h.c.kv.Update(ctx, h.key, h.val, rev)
		cancel()
		switch {
		case err == nil:
			h.mu.Lock()
			h.rev = nrev
			h.mu.Unlock()
		case kvcas.Conflict(err) || errors.Is(err, jetstream.ErrKeyNotFound):
			h.mu.Lock()
			h.lost = true
			h.mu.Unlock()
			close(h.lostCh)
			h.c.log.Warn("idempotency claim lost to another request", zap.String("job_id", h.entry.JobID))
			return
		default:
			h.c.log.Warn("idempotency claim: renewal failed; retrying", zap.String("job_id", h.entry.JobID), zap.Error(err))
		}
	}
}

// context returns ctx, cancelled when the claim is lost.
func (h *HeldClaim) context(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-h.lostCh:
			cancel(errors.New("api: the idempotency claim was taken over"))
		case <-cctx.Done():
		}
	}()
	return cctx, func() { cancel(context.Canceled) }
}

// halt stops the renewals and waits for them to end.
func (h *HeldClaim) halt() {
	h.once.Do(func() { close(h.stop) })
	<-h.done
}

// Check reports an error unless the claim is still this request's: call
// it right before the job record is created.
func (h *HeldClaim) Check(ctx context.Context) error {
	h.mu.Lock()
	lost, rev := h.lost, h.rev
	h.mu.Unlock()
	if lost {
		return Unavailable(1, "this request's idempotency claim was taken over by a retry; resend the same request")
	}
	e, err := h.c.kv.Get(ctx, h.key)
	if err != nil {
		return fmt.Errorf("api: idempotency key: %w", err)
	}
	if e.Revision() != rev {
		// A renewal may have landed after we read rev: same value is ours.
		var ie IdemEntry
		if json.Unmarshal(e.Value(), &ie) != nil || ie.JobID != h.entry.JobID || ie.Holder != h.entry.Holder {
			return Unavailable(1, "this request's idempotency claim was taken over by a retry; resend the same request")
		}
	}
	return nil
}

// finish stops the renewals: the job record exists, and the claim stays
// as the key's answer.
func (h *HeldClaim) finish() { h.halt() }

// release stops the renewals and deletes the claim if it is still this
// request's (nothing was created: a resend starts afresh).
func (h *HeldClaim) release(ctx context.Context) {
	h.halt()
	h.mu.Lock()
	lost, rev := h.lost, h.rev
	h.mu.Unlock()
	if lost {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := h.c.kv.Delete(dctx, h.key, jetstream.LastRevision(rev)); err != nil &&
		!kvcas.Conflict(err) && !errors.Is(err, jetstream.ErrKeyNotFound) {
		h.c.log.Warn("idempotency claim: release", zap.String("job_id", h.entry.JobID), zap.Error(err))
	}
}

// randomToken is n random bytes in hex.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
