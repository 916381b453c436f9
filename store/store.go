// Package store is vfx's object storage: one Store interface with an S3
// backend (minio-go, for S3 and MinIO) and a Local backend (a directory
// plus HMAC-signed URLs served by Local.Handler), presigned URLs, and the
// resolution of job input URIs (vfx://uploads/…, https:// behind an SSRF
// guard, data:) into seekable readers.
//
// The package knows nothing about jobs, never logs and holds no
// package-level mutable state. Every blocking call takes a context first.
// Errors are prefixed "store: " and wrap one of the sentinel errors below
// where a caller has a reason to branch.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/vfxrender/vfx/internal/trunc"
)

// Sentinel errors. Test for them with errors.Is; the returned errors wrap
// them with the step and the key or URI that failed.
var (
	// ErrNotFound: the key (or the upload a vfx:// URI names) does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrInvalidKey: the key breaks the rules of ValidateKey.
	ErrInvalidKey = errors.New("store: invalid key")
	// ErrTooLarge: the object, HTTP body or data: URI is over its size limit.
	ErrTooLarge = errors.New("store: too large")
	// ErrInvalidTTL: a presign lifetime outside MinPresignTTL…MaxPresignTTL.
	ErrInvalidTTL = errors.New("store: invalid presign ttl")
	// ErrBucketNotFound: the S3 bucket does not exist and may not be created.
	ErrBucketNotFound = errors.New("store: bucket not found")
	// ErrInvalidURI: an input URI of no accepted form, or a bad upload id,
	// filename, extension, data: MIME type or base64 payload.
	ErrInvalidURI = errors.New("store: invalid uri")
	// ErrUnreachable: an https:// source could not be fetched (DNS, connect,
	// TLS, timeout, too many redirects, or a non-2xx status; see StatusError).
	ErrUnreachable = errors.New("store: source unreachable")
	// ErrForbiddenAddress: an https:// source (or a redirect) resolves to a
	// loopback, private, link-local, CGNAT, multicast, unspecified or cloud
	// metadata address that is not allow-listed.
	ErrForbiddenAddress = errors.New("store: forbidden address")
	// ErrMIMEMismatch: a data: URI's declared MIME type does not match the
	// magic bytes of its content.
	ErrMIMEMismatch = errors.New("store: mime type does not match content")
)

// Limits shared by the backends.
const (
	// MaxKeyLen is the longest key, in bytes (the S3 limit).
	MaxKeyLen = 1024
	// MaxUploadBytes is the largest object accepted through a signed PUT
	// URL (docs/api.md, Limits).
	MaxUploadBytes int64 = 2 << 30
	// MinPresignTTL and MaxPresignTTL bound presigned URL lifetimes (the S3
	// SigV4 limits, applied to both backends).
	MinPresignTTL = time.Second
	// MaxPresignTTL is the longest presigned URL lifetime: 7 days.
	MaxPresignTTL = 7 * 24 * time.Hour
	// maxContentTypeLen bounds stored content types.
	maxContentTypeLen = 255
)

// Object describes a stored object.
type Object struct {
	// Key is the object's key.
	Key string
	// Size is its length in bytes.
	Size int64
	// ContentType is the type given at Put (application/octet-stream when
	// none was given).
	ContentType string
	// ModTime is when it was last written. After Put on S3 it is the time
	// the put finished on this side (S3 does not return Last-Modified on PUT).
	ModTime time.Time
	// ETag is an opaque version tag (quotes stripped).
	ETag string
}

// Store is object storage. Implementations are safe for concurrent use.
//
// Keys are validated by ValidateKey on every call (ErrInvalidKey). A context
// that ends aborts the call; for Open it also bounds the reads of the
// returned reader, so cancel it only after closing the reader.
type Store interface {
	// Put streams r into key, replacing any object there. size is the
	// exact length, or -1 when unknown (the backend then streams in
	// parts). contentType may be empty. Readers never see a partial object.
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) (Object, error)
	// Open returns a seekable reader of key and its description, or an
	// error wrapping ErrNotFound. The caller closes the reader.
	Open(ctx context.Context, key string) (io.ReadSeekCloser, Object, error)
	// Stat describes key, or returns an error wrapping ErrNotFound.
	Stat(ctx context.Context, key string) (Object, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// PresignGet returns a URL that reads key without credentials for ttl
	// (MinPresignTTL…MaxPresignTTL, else ErrInvalidTTL).
	PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error)
	// PresignPut returns a URL that accepts one HTTP PUT of key's content
	// without credentials for ttl (MinPresignTTL…MaxPresignTTL, else
	// ErrInvalidTTL). No header is required on the PUT.
	PresignPut(ctx context.Context, key string, ttl time.Duration) (string, error)
}

// ValidateKey reports whether key is acceptable to every backend: 1 to
// MaxKeyLen bytes of valid UTF-8, printable characters only (no control
// characters, no backslash), no leading "/", no empty segment (so no "//"
// and no trailing "/"), and no "." or ".." segment. The error wraps
// ErrInvalidKey.
func ValidateKey(key string) error {
	bad := func(why string) error {
		return fmt.Errorf("store: key %q: %s: %w", trunc.String(key, 80), why, ErrInvalidKey)
	}
	switch {
	case key == "":
		return bad("empty")
	case len(key) > MaxKeyLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxKeyLen))
	case !utf8.ValidString(key):
		return bad("not valid utf-8")
	case strings.HasPrefix(key, "/"):
		return bad("leading slash")
	}
	for _, r := range key {
		if !unicode.IsPrint(r) || r == '\\' {
			return bad("unprintable or reserved character")
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch seg {
		case "":
			return bad("empty segment")
		case ".", "..":
			return bad("dot segment")
		}
	}
	return nil
}

// validateTTL checks a presign lifetime.
func validateTTL(ttl time.Duration) error {
	if ttl < MinPresignTTL || ttl > MaxPresignTTL {
		return fmt.Errorf("store: ttl %s outside %s…%s: %w", ttl, MinPresignTTL, MaxPresignTTL, ErrInvalidTTL)
	}
	return nil
}

// normContentType returns contentType, or application/octet-stream when it
// is empty; it refuses control characters and overlong values.
func normContentType(contentType string) (string, error) {
	ct := strings.TrimSpace(contentType)
	if ct == "" {
		return "application/octet-stream", nil
	}
	if len(ct) > maxContentTypeLen {
		return "", fmt.Errorf("store: content type longer than %d bytes", maxContentTypeLen)
	}
	for _, r := range ct {
		if r < 0x20 || r == 0x7f {
			return "", errors.New("store: content type has control characters")
		}
	}
	return ct, nil
}

// ContextReader returns a reader of r whose reads fail once ctx is done:
// a copy from a network body stops at the next read after a cancel.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

// ctxReader makes reads fail once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
