package account

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/internal/kvcas"
)

// SecretPrefix starts every API key secret.
const SecretPrefix = "vfx_sk_"

// secretRandLen is the number of random base62 characters after SecretPrefix.
const secretRandLen = 32

// Key is an API key's record. The secret itself is never stored; only its
// SHA-256 is.
type Key struct {
	// ID is "key_" followed by random base62 characters.
	ID string `json:"id"`
	// AccountID is the owning account.
	AccountID string `json:"account_id"`
	// Kind is KindPersonal or KindOrganization.
	Kind Kind `json:"kind"`
	// OrgID is set on organisation keys of the product API (CreateOrgKey):
	// the key acts for that organisation, not for an account, and AccountID
	// holds the organisation id too.
	OrgID string `json:"org_id,omitempty"`
	// TeamID, on an organisation key, binds the key to one team of OrgID.
	TeamID string `json:"team_id,omitempty"`
	// Prefix is the first 8 characters of the secret, for display.
	Prefix string `json:"prefix"`
	// CreatedAt is when the key was created.
	CreatedAt time.Time `json:"created_at"`
	// RevokedAt is when the key was revoked; nil while it is valid.
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Principal is who a request acts for: the account and the key used. For
// an organisation key of the product API (Key.OrgID set) Account is the
// zero value.
type Principal struct {
	// Account is the key's account, as read at authentication.
	Account Account
	// Key is the key that authenticated.
	Key Key
}

// keyRecord is the stored form of a Key.
type keyRecord struct {
	Key
	Hash string `json:"hash"`
}

func hashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// wellFormedSecret reports whether secret looks like a key this service
// issues, so that garbage is refused without a lookup.
func wellFormedSecret(secret string) bool {
	if len(secret) != len(SecretPrefix)+secretRandLen || !strings.HasPrefix(secret, SecretPrefix) {
		return false
	}
	for _, c := range secret[len(SecretPrefix):] {
		if !strings.ContainsRune(base62, c) {
			return false
		}
	}
	return true
}

// CreateKey issues a key of the given kind for the account and returns its
// record and its secret: "vfx_sk_" followed by 32 random base62 characters.
// The secret is returned this once; only its SHA-256 is stored. ErrNotFound
// for an unknown account, ErrInvalid for an unknown kind.
func (s *Service) CreateKey(ctx context.Context, accountID string, kind Kind) (Key, string, error) {
	if kind != KindPersonal && kind != KindOrganization {
		return Key{}, "", fmt.Errorf("%w: key kind must be %q or %q", ErrInvalid, KindPersonal, KindOrganization)
	}
	if _, err := s.getRecord(ctx, accountID); err != nil {
		return Key{}, "", err
	}
	return s.createKey(ctx, Key{AccountID: accountID, Kind: kind})
}

// createKey stores a new key with k's owner fields and returns it with its
// secret.
func (s *Service) createKey(ctx context.Context, k Key) (Key, string, error) {
	r, err := randomBase62(secretRandLen)
	if err != nil {
		return Key{}, "", fmt.Errorf("account: create key: %w", err)
	}
	secret := SecretPrefix + r
	id, err := randomID("key_", 20)
	if err != nil {
		return Key{}, "", fmt.Errorf("account: create key: %w", err)
	}
	k.ID, k.Prefix, k.CreatedAt = id, secret[:8], s.cfg.Now().UTC()
	hash := hashSecret(secret)
	data, err := json.Marshal(keyRecord{Key: k, Hash: hash})
	if err != nil {
		return Key{}, "", fmt.Errorf("account: create key: %w", err)
	}
	// The record first, then the index: a key is usable only once both exist.
	if _, err := s.keys.Create(ctx, k.ID, data); err != nil {
		return Key{}, "", fmt.Errorf("account: create key: %w", err)
	}
	if _, err := s.hashes.Create(ctx, hash, []byte(k.ID)); err != nil {
		_ = s.keys.Delete(context.WithoutCancel(ctx), k.ID)
		return Key{}, "", fmt.Errorf("account: create key: hash index: %w", err)
	}
	return k, secret, nil
}

// RevokeKey revokes a key: from then on Authenticate refuses it, on every
// replica, because no replica caches keys. Revoking a revoked key is a
// no-op. ErrNotFound for an unknown key id.
func (s *Service) RevokeKey(ctx context.Context, keyID string) error {
	if !validID(keyID) {
		return fmt.Errorf("%w: key %q", ErrNotFound, keyID)
	}
	r, err := kvcas.JSON(ctx, s.keys, keyID, func(r *keyRecord, exists bool) (bool, error) {
		if !exists {
			return false, fmt.Errorf("%w: key %q", ErrNotFound, keyID)
		}
		if r.RevokedAt != nil {
			return false, nil
		}
		now := s.cfg.Now().UTC()
		r.RevokedAt = &now
		return true, nil
	})
	if err != nil {
		return wrapOp("revoke key", err)
	}
	// The record decides; dropping the index entry only tidies up.
	if err := s.hashes.Purge(ctx, r.Hash); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("account: revoke key: hash index: %w", err)
	}
	return nil
}

// Authenticate resolves an API key secret to its account and key. The
// secret's SHA-256 finds the key; the stored hash is then compared in
// constant time. ErrInvalidKey for an empty, malformed, unknown or revoked
// secret, or a key whose account is gone; other errors are the store's.
func (s *Service) Authenticate(ctx context.Context, secret string) (Principal, error) {
	if !wellFormedSecret(secret) {
		return Principal{}, ErrInvalidKey
	}
	hash := hashSecret(secret)
	e, err := s.hashes.Get(ctx, hash)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Principal{}, ErrInvalidKey
	}
	if err != nil {
		return Principal{}, fmt.Errorf("account: authenticate: %w", err)
	}
	keyID := string(e.Value())
	if !validID(keyID) {
		return Principal{}, ErrInvalidKey
	}
	ke, err := s.keys.Get(ctx, keyID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Principal{}, ErrInvalidKey
	}
	if err != nil {
		return Principal{}, fmt.Errorf("account: authenticate: %w", err)
	}
	var kr keyRecord
	if err := json.Unmarshal(ke.Value(), &kr); err != nil {
		return Principal{}, fmt.Errorf("account: authenticate: decode key: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(kr.Hash), []byte(hash)) != 1 || kr.RevokedAt != nil {
		return Principal{}, ErrInvalidKey
	}
	if kr.OrgID != "" {
		if _, err := s.GetOrg(ctx, kr.OrgID); err != nil {
			if errors.Is(err, ErrNotFound) {
				return Principal{}, ErrInvalidKey
			}
			return Principal{}, err
		}
		return Principal{Key: kr.Key}, nil
	}
	ar, err := s.getRecord(ctx, kr.AccountID)
	if errors.Is(err, ErrNotFound) {
		return Principal{}, ErrInvalidKey
	}
	if err != nil {
		return Principal{}, err
	}
	return Principal{Account: ar.Account, Key: kr.Key}, nil
}
