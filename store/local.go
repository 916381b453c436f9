package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// FilesPath is the URL path under which Local.Handler serves signed URLs.
const FilesPath = "/v1/files/"

// Signed URL operations.
const (
	opGet = "get"
	opPut = "put"
)

// Local is a Store in a directory on the local file system, for
// single-node deployments (`vfx serve`) and tests. Presigned URLs point at
// baseURL + FilesPath and are served by Handler.
//
// Layout under dir: objects/{key} holds the bytes, meta/{key}.json the
// content type and ETag, tmp/ the files being written. A write goes to a
// temp file that is synced and renamed into place, so a reader sees either
// the old object or the new one, never a partial one. Keys that are both a
// file and a directory prefix ("a" and "a/b") cannot coexist.
type Local struct {
	dir       string
	baseURL   string
	secret    []byte
	maxUpload int64
	now       func() time.Time
}

var _ Store = (*Local)(nil)

// LocalOption adjusts a Local at construction.
type LocalOption func(*Local)

// WithMaxUpload sets the largest body Handler accepts on a signed PUT
// (default MaxUploadBytes); larger bodies get 413. n <= 0 keeps the default.
func WithMaxUpload(n int64) LocalOption {
	return func(l *Local) {
		if n > 0 {
			l.maxUpload = n
		}
	}
}

// WithClock replaces time.Now for signing and expiry checks (tests).
func WithClock(now func() time.Time) LocalOption {
	return func(l *Local) {
		if now != nil {
			l.now = now
		}
	}
}

// NewLocal returns a Local rooted at dir (created if missing) whose signed
// URLs start with baseURL (for example "http://127.0.0.1:8080"; a trailing
// slash is dropped; empty gives host-relative URLs) and are signed with
// secret (at least 16 bytes).
func NewLocal(dir string, baseURL string, secret []byte, opts ...LocalOption) (*Local, error) {
	if dir == "" {
		return nil, errors.New("store: local: empty directory")
	}
	if len(secret) < 16 {
		return nil, errors.New("store: local: signing secret shorter than 16 bytes")
	}
	if baseURL != "" {
		u, err := url.Parse(baseURL)
		if err != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("store: local: bad base url %q", baseURL)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: local: %w", err)
	}
	for _, sub := range []string{"objects", "meta", "tmp"} {
		if err := os.MkdirAll(filepath.Join(abs, sub), 0o750); err != nil {
			return nil, fmt.Errorf("store: local: create %s: %w", sub, err)
		}
	}
	l := &Local{
		dir:       abs,
		baseURL:   strings.TrimRight(baseURL, "/"),
		secret:    append([]byte(nil), secret...),
		maxUpload: MaxUploadBytes,
		now:       time.Now,
	}
	for _, o := range opts {
		o(l)
	}
	return l, nil
}

// localMeta is the sidecar of an object.
type localMeta struct {
	ContentType string `json:"content_type"`
	ETag        string `json:"etag"`
	Size        int64  `json:"size"`
}

func (l *Local) objPath(key string) string {
	return filepath.Join(l.dir, "objects", filepath.FromSlash(key))
}

func (l *Local) metaPath(key string) string {
	return filepath.Join(l.dir, "meta", filepath.FromSlash(key)+".json")
}

// Put implements Store. It writes to a temp file, syncs it and renames it
// over key; a reader error, a short read (size >= 0) or an ended ctx leaves
// any previous object untouched. The ETag is the hex SHA-256 of the content.
func (l *Local) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) (Object, error) {
	return l.put(ctx, key, r, size, contentType, false)
}

// errExists: a signed PUT URL was used again after a successful PUT.
var errExists = errors.New("store: object exists")

// put is Put; once refuses (errExists) to replace an existing object, so
// that of racing writers exactly one succeeds.
func (l *Local) put(ctx context.Context, key string, r io.Reader, size int64, contentType string, once bool) (Object, error) {
	if err := ValidateKey(key); err != nil {
		return Object{}, err
	}
	ct, err := normContentType(contentType)
	if err != nil {
		return Object{}, err
	}
	if err := ctx.Err(); err != nil {
		return Object{}, fmt.Errorf("store: put %s: %w", key, err)
	}
	h := sha256.New()
	src := io.Reader(ctxReader{ctx: ctx, r: r})
	var n int64
	tmp, err := l.writeTemp(func(f *os.File) error {
		w := io.MultiWriter(f, h)
		var err error
		if size >= 0 {
			n, err = io.CopyN(w, src, size)
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("short body: %d of %d bytes: %w", n, size, io.ErrUnexpectedEOF)
			}
		} else {
			n, err = io.Copy(w, src)
		}
		return err
	})
	if err != nil {
		return Object{}, fmt.Errorf("store: put %s: %w", key, err)
	}
	meta := localMeta{ContentType: ct, ETag: hex.EncodeToString(h.Sum(nil)), Size: n}
	mb, err := json.Marshal(meta)
	if err != nil {
		_ = os.Remove(tmp)
		return Object{}, fmt.Errorf("store: put %s: %w", key, err)
	}
	mtmp, err := l.writeTemp(func(f *os.File) error { _, err := f.Write(mb); return err })
	if err != nil {
		_ = os.Remove(tmp)
		return Object{}, fmt.Errorf("store: put %s: meta: %w", key, err)
	}
	// Data first, then its sidecar; Stat takes the size from the data file,
	// so a reader in between sees new bytes with at worst the old type.
	place := renameInto
	if once {
		place = linkInto
	}
	if err := place(tmp, l.objPath(key)); err != nil {
		_ = os.Remove(mtmp)
		if errors.Is(err, fs.ErrExist) {
			err = errExists
		}
		return Object{}, fmt.Errorf("store: put %s: %w", key, err)
	}
	if err := renameInto(mtmp, l.metaPath(key)); err != nil {
		return Object{}, fmt.Errorf("store: put %s: meta: %w", key, err)
	}
	return l.Stat(ctx, key)
}

// writeTemp creates a temp file under dir/tmp, fills it with fill, syncs
// and closes it, and returns its path; on error the file is removed.
func (l *Local) writeTemp(fill func(*os.File) error) (string, error) {
	f, err := os.CreateTemp(filepath.Join(l.dir, "tmp"), "put-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	err = fill(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(name)
		return "", err
	}
	return name, nil
}

// renameInto moves tmp to dst, creating dst's parent directories.
func renameInto(tmp, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// linkInto is renameInto that fails (fs.ErrExist) when dst exists.
func linkInto(tmp, dst string) error {
	defer os.Remove(tmp)
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return err
	}
	return os.Link(tmp, dst)
}

// Open implements Store; the reader is an *os.File.
func (l *Local) Open(ctx context.Context, key string) (io.ReadSeekCloser, Object, error) {
	if err := ValidateKey(key); err != nil {
		return nil, Object{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, Object{}, fmt.Errorf("store: open %s: %w", key, err)
	}
	f, err := os.Open(l.objPath(key))
	if err != nil {
		return nil, Object{}, l.mapErr("open", key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, Object{}, fmt.Errorf("store: open %s: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, Object{}, fmt.Errorf("store: open %s: %w", key, ErrNotFound)
	}
	return f, l.describe(key, fi), nil
}

// Stat implements Store.
func (l *Local) Stat(ctx context.Context, key string) (Object, error) {
	if err := ValidateKey(key); err != nil {
		return Object{}, err
	}
	if err := ctx.Err(); err != nil {
		return Object{}, fmt.Errorf("store: stat %s: %w", key, err)
	}
	fi, err := os.Stat(l.objPath(key))
	if err != nil {
		return Object{}, l.mapErr("stat", key, err)
	}
	if !fi.Mode().IsRegular() {
		return Object{}, fmt.Errorf("store: stat %s: %w", key, ErrNotFound)
	}
	return l.describe(key, fi), nil
}

// describe builds an Object from the data file and its sidecar. A missing
// or unreadable sidecar gives a type guessed from the extension and an
// ETag derived from size and mtime.
func (l *Local) describe(key string, fi fs.FileInfo) Object {
	o := Object{Key: key, Size: fi.Size(), ModTime: fi.ModTime().UTC()}
	var m localMeta
	if b, err := os.ReadFile(l.metaPath(key)); err == nil && json.Unmarshal(b, &m) == nil && m.Size == fi.Size() {
		o.ContentType, o.ETag = m.ContentType, m.ETag
	}
	if o.ContentType == "" {
		o.ContentType = mime.TypeByExtension(path.Ext(key))
		if o.ContentType == "" {
			o.ContentType = "application/octet-stream"
		}
	}
	if o.ETag == "" {
		o.ETag = fmt.Sprintf("%x-%x", fi.Size(), fi.ModTime().UnixNano())
	}
	return o
}

func (l *Local) mapErr(op, key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || isNotDirErr(err) {
		return fmt.Errorf("store: %s %s: %w", op, key, ErrNotFound)
	}
	return fmt.Errorf("store: %s %s: %w", op, key, err)
}

// isNotDirErr reports ENOTDIR failures ("a/b" when "a" is a file).
func isNotDirErr(err error) bool {
	return errors.Is(err, syscall.ENOTDIR)
}

// Delete implements Store.
func (l *Local) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: delete %s: %w", key, err)
	}
	for _, p := range []string{l.objPath(key), l.metaPath(key)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) && !isNotDirErr(err) {
			return fmt.Errorf("store: delete %s: %w", key, err)
		}
	}
	return nil
}

// PresignGet implements Store: a URL served by Handler.
func (l *Local) PresignGet(ctx context.Context, key string, ttl time.Duration) (string, error) {
	return l.presign(ctx, opGet, key, ttl)
}

// PresignPut implements Store: a URL served by Handler.
func (l *Local) PresignPut(ctx context.Context, key string, ttl time.Duration) (string, error) {
	return l.presign(ctx, opPut, key, ttl)
}

func (l *Local) presign(ctx context.Context, op, key string, ttl time.Duration) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if err := validateTTL(ttl); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("store: presign %s: %w", key, err)
	}
	exp := l.now().Add(ttl)
	// Round up so that a 1 s lifetime is never shortened to 0.
	expUnix := exp.Unix()
	if exp.Nanosecond() != 0 {
		expUnix++
	}
	return l.signedURL(op, key, expUnix), nil
}

// signedURL builds baseURL + FilesPath + key + "?exp=&op=&sig=".
func (l *Local) signedURL(op, key string, exp int64) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	q := url.Values{}
	q.Set("exp", strconv.FormatInt(exp, 10))
	q.Set("op", op)
	q.Set("sig", base64.RawURLEncoding.EncodeToString(l.sign(op, key, exp)))
	return l.baseURL + FilesPath + strings.Join(segs, "/") + "?" + q.Encode()
}

// sign is HMAC-SHA256(secret, op + "\n" + key + "\n" + exp).
func (l *Local) sign(op, key string, exp int64) []byte {
	m := hmac.New(sha256.New, l.secret)
	m.Write([]byte(op + "\n" + key + "\n" + strconv.FormatInt(exp, 10)))
	return m.Sum(nil)
}

// Handler serves the signed URLs of PresignGet and PresignPut. Mount it at
// FilesPath without stripping the prefix:
//
//	mux.Handle(store.FilesPath, local.Handler())
//
// GET and HEAD (op=get) serve the object with Range, conditional requests,
// its Content-Type and ETag; PUT (op=put) streams the body into the key
// (Content-Type from the request, else application/octet-stream) and answers
// 200 with the ETag; a body over the upload cap gets 413. A bad, tampered
// or expired signature, or a method that does not match op, gets 403; a
// missing object 404. Errors are the API's JSON envelope
// {"error":{"code","message"}} (fileError).
func (l *Local) Handler() http.Handler {
	return http.HandlerFunc(l.serveHTTP)
}

func (l *Local) serveHTTP(w http.ResponseWriter, r *http.Request) {
	var op string
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		op = opGet
	case http.MethodPut:
		op = opPut
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT")
		fileError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "method not allowed: GET, HEAD or PUT")
		return
	}
	key, ok := strings.CutPrefix(r.URL.Path, FilesPath)
	if !ok || ValidateKey(key) != nil {
		fileError(w, http.StatusNotFound, "NOT_FOUND", "no such file")
		return
	}
	q := r.URL.Query()
	exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
	if err != nil {
		fileError(w, http.StatusForbidden, "FORBIDDEN", "bad expiry")
		return
	}
	sig, err := base64.RawURLEncoding.DecodeString(q.Get("sig"))
	if err != nil || !hmac.Equal(sig, l.sign(q.Get("op"), key, exp)) {
		fileError(w, http.StatusForbidden, "FORBIDDEN", "bad signature")
		return
	}
	if q.Get("op") != op {
		fileError(w, http.StatusForbidden, "FORBIDDEN", "url not valid for this method")
		return
	}
	if l.now().Unix() > exp {
		fileError(w, http.StatusForbidden, "FORBIDDEN", "url expired")
		return
	}
	if op == opGet {
		l.serveGet(w, r, key)
		return
	}
	l.servePut(w, r, key)
}

func (l *Local) serveGet(w http.ResponseWriter, r *http.Request, key string) {
	f, obj, err := l.Open(r.Context(), key)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			fileError(w, http.StatusNotFound, "NOT_FOUND", "no such file")
			return
		}
		fileError(w, http.StatusInternalServerError, "INTERNAL_ERROR", "internal error")
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", obj.ContentType)
	h.Set("ETag", `"`+obj.ETag+`"`)
	h.Set("Cache-Control", "private, max-age=0")
	http.ServeContent(w, r, "", obj.ModTime, f)
}

func (l *Local) servePut(w http.ResponseWriter, r *http.Request, key string) {
	if r.ContentLength > l.maxUpload {
		fileError(w, http.StatusRequestEntityTooLarge, "REQUEST_TOO_LARGE", fmt.Sprintf("request body over %d bytes", l.maxUpload))
		return
	}
	ct, err := normContentType(r.Header.Get("Content-Type"))
	if err != nil {
		fileError(w, http.StatusBadRequest, "BAD_REQUEST", "bad content type")
		return
	}
	// A signed URL accepts one successful PUT.
	if _, err := l.Stat(r.Context(), key); err == nil {
		fileError(w, http.StatusConflict, "CONFLICT", "this upload URL was already used")
		return
	}
	body := http.MaxBytesReader(w, r.Body, l.maxUpload)
	obj, err := l.put(r.Context(), key, body, r.ContentLength, ct, true)
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.Is(err, errExists):
			fileError(w, http.StatusConflict, "CONFLICT", "this upload URL was already used")
		case errors.As(err, &mbe):
			fileError(w, http.StatusRequestEntityTooLarge, "REQUEST_TOO_LARGE", fmt.Sprintf("request body over %d bytes", l.maxUpload))
		case errors.Is(err, io.ErrUnexpectedEOF):
			fileError(w, http.StatusBadRequest, "BAD_REQUEST", "incomplete body")
		case errors.Is(err, ErrInvalidKey):
			fileError(w, http.StatusBadRequest, "BAD_REQUEST", "bad request")
		default:
			fileError(w, http.StatusInternalServerError, "INTERNAL_ERROR", "internal error")
		}
		return
	}
	w.Header().Set("ETag", `"`+obj.ETag+`"`)
	w.WriteHeader(http.StatusOK)
}

// fileError answers an error of the signed-URL handler in the API's JSON
// envelope, {"error":{"code":…,"message":…}}.
func fileError(w http.ResponseWriter, status int, code, message string) {
	body, _ := json.Marshal(map[string]map[string]string{"error": {"code": code, "message": message}})
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
