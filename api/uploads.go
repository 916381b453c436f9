package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/internal/kvcas"
	"github.com/vfxrender/vfx/internal/retry"
	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/store"
)

// Uploads belong to whoever created them: the account of an account key,
// or the organisation and team of an organisation key. The bucket
// gen_uploads holds one record per upload under "{owner}.{upload id}", so
// that a submission finds only its caller's uploads: someone else's
// upload gets exactly the answer of one that does not exist.

// BucketUploads holds the upload records.
const BucketUploads = "gen_uploads"

// Upload limit defaults (Config.MaxOpenUploads, MaxUploadBytesPerDay,
// UploadExpiry, UploadRecordTTL, UploadSweepEvery).
const (
	// DefaultMaxOpenUploads is how many uploads an owner may have open at
	// once: upload URL not yet expired and not yet used by a job.
	DefaultMaxOpenUploads = 50
	// DefaultMaxUploadBytesPerDay caps the bytes an owner's uploads of the
	// last 24 hours hold before another upload URL is refused.
	DefaultMaxUploadBytesPerDay int64 = 20 << 30
	// DefaultUploadExpiry is when an upload that no job used is deleted.
	DefaultUploadExpiry = 24 * time.Hour
	// DefaultUploadRecordTTL is how long jobs may name an upload at all.
	DefaultUploadRecordTTL = 7 * 24 * time.Hour
	// DefaultUploadSweepEvery is the pause between two expiry sweeps.
	DefaultUploadSweepEvery = 10 * time.Minute
	// UploadQuotaWindow is the window of the bytes-a-day limit.
	UploadQuotaWindow = 24 * time.Hour
	// maxUploadRecordsScanned bounds one owner's records read per check.
	maxUploadRecordsScanned = 10000
)

// uploadEntry is an upload's record.
type uploadEntry struct {
	ID        string    `json:"id"`
	Filename  string    `json:"filename"`
	Owner     string    `json:"owner"`
	CreatedAt time.Time `json:"created_at"`
	// Size is the object's final size, known once its URL expired or a
	// job used it (-1 unknown).
	Size int64 `json:"size"`
	// UsedBy is the first job that named it.
	UsedBy string `json:"used_by,omitempty"`
}

// accountOwner and teamOwner name upload owners.
func AccountOwner(accountID string) string { return "acct-" + accountID }
func TeamOwner(orgID, teamID string) string {
	if teamID == "" {
		return "org-" + orgID
	}
	return "org-" + orgID + "-" + teamID
}

func uploadKVKey(owner, id string) string { return KeyPart(owner) + "." + id }

// uploadOwner is who an upload request acts for: the account of an
// account key; the organisation and team of an organisation key (its own
// team, or the team its X-Service-Team-Id header names, as the product
// API resolves it).
func (s *Server) uploadOwner(r *http.Request) (string, error) {
	p := PrincipalOf(r.Context())
	if p.Key.OrgID == "" {
		return AccountOwner(p.Account.ID), nil
	}
	team := p.Key.TeamID
	header := strings.TrimSpace(r.Header.Get(HeaderTeamID))
	switch {
	case team != "" && header != "" && header != team:
		return "", NewError(CodeTeamForbidden, "this key belongs to team %s, not %s", team, trunc.String(header, 80))
	case team == "" && header != "":
		t, err := s.Acc.GetTeam(r.Context(), header)
		if errors.Is(err, account.ErrNotFound) || (err == nil && t.OrgID != p.Key.OrgID) {
			return "", NewError(CodeTeamForbidden, "team %s is not a team of this organization", trunc.String(header, 80))
		}
		if err != nil {
			return "", fmt.Errorf("api: team: %w", err)
		}
		team = t.ID
	}
	return TeamOwner(p.Key.OrgID, team), nil
}

// uploadQuota refuses a new upload with 429 RATE_LIMIT_EXCEEDED when the
// owner has MaxOpenUploads open, or its uploads of the last 24 hours hold
// MaxUploadBytesPerDay bytes or more.
func (s *Server) uploadQuota(ctx context.Context, owner string) error {
	lister, err := s.uploads.ListKeysFiltered(ctx, KeyPart(owner)+".*")
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil
		}
		return fmt.Errorf("api: uploads: %w", err)
	}
	var keys []string
	for k := range lister.Keys() {
		if len(keys) < maxUploadRecordsScanned {
			keys = append(keys, k)
		}
	}
	now := s.Now()
	open, bytes := 0, int64(0)
	var retry time.Duration
	for _, k := range keys {
		e, ent, err := s.getUpload(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		age := now.Sub(ent.CreatedAt)
		if age >= UploadQuotaWindow {
			continue
		}
		live := age < UploadURLTTL
		if live && ent.UsedBy == "" {
			open++
			retry = max(retry, UploadURLTTL-age)
		}
		size := ent.Size
		if size < 0 {
			obj, err := s.Store.Stat(ctx, store.UploadKey(ent.ID, ent.Filename))
			switch {
			case errors.Is(err, store.ErrNotFound):
				size = 0
			case err != nil:
				return fmt.Errorf("api: uploads: %w", err)
			default:
				size = obj.Size
			}
			if !live {
				// The URL expired: the size is final, remember it.
				ent.Size = size
				if v, err := json.Marshal(ent); err == nil {
					_, _ = s.uploads.Update(ctx, k, v, e.Revision())
				}
			}
		}
		bytes += size
	}
	if open >= s.Cfg.MaxOpenUploads {
		return rateLimitedUploads(fmt.Sprintf("%d uploads are open (URL not expired, not used by a job), the limit is %d", open, s.Cfg.MaxOpenUploads), retry)
	}
	if bytes >= s.Cfg.MaxUploadBytesPerDay {
		return rateLimitedUploads(fmt.Sprintf("uploads of the last 24 hours hold %d bytes, the limit is %d", bytes, s.Cfg.MaxUploadBytesPerDay), time.Hour)
	}
	return nil
}

func rateLimitedUploads(why string, retry time.Duration) error {
	secs := max(1, int((retry+time.Second-1)/time.Second))
	e := NewError(CodeRateLimitExceeded, "upload limit: %s; retry in %d s", why, secs)
	e.Header = http.Header{"Retry-After": {fmt.Sprint(secs)}}
	return e
}

func (s *Server) getUpload(ctx context.Context, k string) (jetstream.KeyValueEntry, uploadEntry, error) {
	e, err := s.uploads.Get(ctx, k)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, uploadEntry{}, err
		}
		return nil, uploadEntry{}, fmt.Errorf("api: upload %s: %w", k, err)
	}
	var ent uploadEntry
	if err := json.Unmarshal(e.Value(), &ent); err != nil {
		return nil, uploadEntry{}, fmt.Errorf("api: upload %s: %w", k, err)
	}
	return e, ent, nil
}

// recordUpload writes a new upload's record.
func (s *Server) recordUpload(ctx context.Context, owner, id, filename string) error {
	v, _ := json.Marshal(uploadEntry{ID: id, Filename: filename, Owner: owner, CreatedAt: s.Now().UTC(), Size: -1})
	if _, err := s.uploads.Create(ctx, uploadKVKey(owner, id), v); err != nil {
		return fmt.Errorf("api: upload record: %w", err)
	}
	return nil
}

// CheckOwnedUploads answers every upload URI of uris that is not the
// owner's exactly as a missing upload (the store's not-found, as a 400
// SOURCE_UNREACHABLE through mediaError), and returns the record keys of
// those that are.
func (s *Server) CheckOwnedUploads(ctx context.Context, owner string, uris []NamedURI) ([]string, error) {
	var keys []string
	for _, in := range uris {
		u, err := s.resolver.Parse(in.URI)
		if err != nil || u.Kind != store.KindUpload {
			continue
		}
		k := uploadKVKey(owner, u.UploadID)
		_, ent, err := s.getUpload(ctx, k)
		if err == nil && ent.Filename != u.Filename {
			err = jetstream.ErrKeyNotFound
		}
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, MediaError(in.What, fmt.Errorf("store: open %s: %w", u, store.ErrNotFound))
		}
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// NamedURI is an input URI and what it is for.
type NamedURI struct{ What, URI string }

// MarkUsed records the first job that used each upload (which keeps it
// from expiring) and its final size.
func (s *Server) MarkUsed(ctx context.Context, keys []string, jobID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, k := range keys {
		e, ent, err := s.getUpload(ctx, k)
		if err != nil || ent.UsedBy != "" {
			continue
		}
		ent.UsedBy = jobID
		if obj, err := s.Store.Stat(ctx, store.UploadKey(ent.ID, ent.Filename)); err == nil {
			ent.Size = obj.Size
		}
		v, _ := json.Marshal(ent)
		if _, err := s.uploads.Update(ctx, k, v, e.Revision()); err != nil {
			s.Log.Warn("upload: mark used", zap.String("key", k), zap.Error(err))
		}
	}
}

// SweepUploads deletes the uploads (object and record) that no job used
// within Config.UploadExpiry of their creation, and returns how many.
func (s *Server) SweepUploads(ctx context.Context) (int, error) {
	lister, err := s.uploads.ListKeys(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return 0, nil
		}
		return 0, fmt.Errorf("api: uploads: %w", err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	now, n := s.Now(), 0
	for _, k := range keys {
		e, ent, err := s.getUpload(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return n, err
		}
		if ent.UsedBy != "" || now.Sub(ent.CreatedAt) < s.Cfg.UploadExpiry {
			continue
		}
		if err := s.Store.Delete(ctx, store.UploadKey(ent.ID, ent.Filename)); err != nil {
			return n, fmt.Errorf("api: delete upload %s: %w", ent.ID, err)
		}
		// Only if no job took it meanwhile (compare and delete).
		if err := s.uploads.Delete(ctx, k, jetstream.LastRevision(e.Revision())); err != nil && !kvcas.Conflict(err) {
			return n, fmt.Errorf("api: upload record %s: %w", k, err)
		}
		n++
	}
	return n, nil
}

// RunUploadSweeper runs, every Config.UploadSweepEvery until ctx ends (at
// once when that is negative: off), SweepUploads and then SweepPending.
// The command's wiring starts it beside the Server.
func (s *Server) RunUploadSweeper(ctx context.Context) {
	if s.Cfg.UploadSweepEvery <= 0 {
		return
	}
	log := s.Log.Named("uploads")
	for {
		pctx, cancel := context.WithTimeout(ctx, max(s.Cfg.UploadSweepEvery, time.Minute))
		n, err := s.SweepUploads(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			log.Warn("upload sweep", zap.Error(err))
		}
		if n > 0 {
			log.Info("unused uploads deleted", zap.Int("uploads", n))
		}
		// Submissions that died (their process crashed) and whose
		// idempotency key was not resent: their slots, credits and inline
		// inputs go back (pending.go).
		pctx, cancel = context.WithTimeout(ctx, max(s.Cfg.UploadSweepEvery, time.Minute))
		n, err = s.SweepPending(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			log.Warn("pending submission sweep", zap.Error(err))
		}
		if n > 0 {
			log.Info("dead submissions recovered", zap.Int("submissions", n))
		}
		if retry.Sleep(ctx, s.Cfg.UploadSweepEvery) != nil {
			return
		}
	}
}

// uploadRecord is the body of POST /v1/uploads.
type uploadRecord struct {
	ID        string `json:"id"`
	UploadURL string `json:"upload_url"`
	VfxURI    string `json:"vfx_uri"`
}

// postUpload is POST /v1/uploads: a presigned PUT URL (1 h) for a new
// upload and its vfx:// URI.
func (s *Server) postUpload(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	body, err := s.ReadBody(w, r)
	if err != nil {
		return err
	}
	fields, err := DecodeObject(body)
	if err != nil {
		return err
	}
	raw, ok := fields["filename"]
	if !ok || strings.TrimSpace(string(raw)) == "null" {
		return Unprocessable([]any{"body", "filename"}, "Field required", "missing")
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return Unprocessable([]any{"body", "filename"}, "Input should be a valid string", "string_type")
	}
	if err := store.ValidateUploadFilename(name); err != nil {
		return BadRequest(CodeInvalidFilename, "filename: %s (3-255 characters with one of the extensions .mp4 .mov .png .jpg .jpeg .webp .mp3 .wav .zip .tar)",
			strings.TrimPrefix(err.Error(), "store: "))
	}
	owner, err := s.uploadOwner(r)
	if err != nil {
		return err
	}
	if err := s.uploadQuota(ctx, owner); err != nil {
		return err
	}
	id := store.NewUploadID()
	u, err := s.Store.PresignPut(ctx, store.UploadKey(id, name), UploadURLTTL)
	if err != nil {
		return fmt.Errorf("api: presign upload: %w", err)
	}
	if err := s.recordUpload(ctx, owner, id, name); err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, uploadRecord{ID: id, UploadURL: u, VfxURI: store.UploadURI(id, name)})
	return nil
}
