package store

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"time"
)

// Resolver defaults.
const (
	// DefaultMaxHTTPBytes caps an https:// body (2 GiB, the upload limit).
	DefaultMaxHTTPBytes int64 = 2 << 30
	// DefaultFetchTimeout bounds a whole https:// fetch, body included.
	DefaultFetchTimeout = 60 * time.Second
	// DefaultConnectTimeout bounds one TCP connect.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultMaxRedirects is the most redirects followed.
	DefaultMaxRedirects = 5
	// DefaultSpoolMemory is the largest https:// body kept in memory; larger
	// bodies are spooled to a temp file.
	DefaultSpoolMemory int64 = 8 << 20
	// userAgent identifies fetches.
	userAgent = "vfx-fetch/1"
)

// Resolver opens job input URIs as seekable readers (FFmpeg custom I/O
// needs to seek). Set the fields before the first call and do not change
// them afterwards; a Resolver is then safe for concurrent use. Zero fields
// take the defaults.
type Resolver struct {
	// Store holds uploads; vfx:// URIs open Store key uploads/{id}/{filename}.
	Store Store
	// AllowHosts exempts addresses or names from the SSRF guard (see
	// AddressGuard.AllowHosts). Tests list "127.0.0.1".
	AllowHosts []string
	// AllowHTTP also accepts http:// URLs (development and tests).
	AllowHTTP bool
	// RootCAs verifies https:// servers; nil uses the system pool.
	RootCAs *x509.CertPool
	// MaxHTTPBytes caps an https:// body (ErrTooLarge); 0 means DefaultMaxHTTPBytes.
	MaxHTTPBytes int64
	// MaxDataBytes caps a data: URI's decoded content (ErrTooLarge);
	// 0 means DefaultMaxDataBytes.
	MaxDataBytes int64
	// Timeout bounds a whole https:// fetch including the body; 0 means
	// DefaultFetchTimeout.
	Timeout time.Duration
	// ConnectTimeout bounds each connect; 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// MaxRedirects is the most redirects followed; 0 means
	// DefaultMaxRedirects, negative follows none.
	MaxRedirects int
	// SpoolMemory is the largest https:// body held in memory; bigger ones
	// go to a temp file in TempDir. 0 means DefaultSpoolMemory.
	SpoolMemory int64
	// TempDir holds spool files; empty means os.TempDir().
	TempDir string
}

// Info describes a resolved input.
type Info struct {
	// URI is the parsed input URI.
	URI URI
	// Size is the content length in bytes.
	Size int64
	// ContentType is the declared type: the upload's stored type, the
	// response's Content-Type (no parameters), or the data: MIME type. It
	// is a hint; formats are judged by content (SniffMIME, codec probe).
	ContentType string
	// Name is a file name for the input: the upload filename, the last
	// URL path segment, or "" for data: URIs.
	Name string
}

// StatusError is returned for an https:// response outside 2xx; it
// unwraps to ErrUnreachable.
type StatusError struct {
	// URL is the redacted URL fetched.
	URL string
	// StatusCode is the HTTP status.
	StatusCode int
}

// Error describes the status.
func (e *StatusError) Error() string {
	return fmt.Sprintf("store: fetch %s: http status %d: %s", e.URL, e.StatusCode, ErrUnreachable.Error())
}

// Unwrap returns ErrUnreachable.
func (e *StatusError) Unwrap() error { return ErrUnreachable }

// MaxDataBytesOrDefault is the data: limit this Resolver applies:
// MaxDataBytes, or DefaultMaxDataBytes when that is 0.
func (r *Resolver) MaxDataBytesOrDefault() int64 { return r.maxData() }

func (r *Resolver) maxData() int64 {
	if r.MaxDataBytes > 0 {
		return r.MaxDataBytes
	}
	return DefaultMaxDataBytes
}

// Parse parses s like ParseURI, under this Resolver's policy: http:// is
// accepted when AllowHTTP is set, data: payloads are capped at
// MaxDataBytes, and a URL whose host is a literal IP address the guard
// refuses fails at once with ErrForbiddenAddress. Nothing is fetched.
func (r *Resolver) Parse(s string) (URI, error) {
	u, err := parseURI(s, r.AllowHTTP, r.maxData())
	if err != nil {
		return URI{}, err
	}
	if u.Kind == KindHTTP {
		g := AddressGuard{AllowHosts: r.AllowHosts}
		a, err := g.parse()
		if err != nil {
			return URI{}, err
		}
		if err := a.checkLiteral(u.URL.Hostname()); err != nil {
			return URI{}, fmt.Errorf("store: url %s: %w", u, err)
		}
	}
	return u, nil
}

// Open resolves uri and returns its content as a seekable reader that the
// caller closes, and a description.
//
//   - vfx://uploads/{id}/{filename}: Store.Open of the upload's key
//     (ErrNotFound when missing).
//   - https://: fetched through the SSRF guard (every dialled address and
//     every redirect), at most MaxRedirects redirects, MaxHTTPBytes bytes
//     and Timeout overall; spooled to memory or a temp file removed on
//     Close. Non-2xx answers give a *StatusError (ErrUnreachable); network
//     failures and timeouts ErrUnreachable; refused addresses
//     ErrForbiddenAddress; oversize bodies ErrTooLarge.
//   - data:: decoded in memory; ErrTooLarge over MaxDataBytes (judged on
//     the encoded length), ErrInvalidURI for bad base64, ErrMIMEMismatch
//     when the content's magic bytes are not the declared type.
//
// A malformed URI gives ErrInvalidURI. When ctx ends first, the error
// wraps ctx.Err().
func (r *Resolver) Open(ctx context.Context, uri string) (io.ReadSeekCloser, Info, error) {
	u, err := r.Parse(uri)
	if err != nil {
		return nil, Info{}, err
	}
	switch u.Kind {
	case KindUpload, KindJobInput:
		return r.openUpload(ctx, u)
	case KindData:
		return r.openData(u)
	case KindHTTP:
		return r.openHTTP(ctx, u)
	}
	return nil, Info{}, fmt.Errorf("store: uri: %w", ErrInvalidURI)
}

func (r *Resolver) openUpload(ctx context.Context, u URI) (io.ReadSeekCloser, Info, error) {
	if r.Store == nil {
		return nil, Info{}, errors.New("store: resolver has no store for upload uris")
	}
	rc, obj, err := r.Store.Open(ctx, u.Key())
	if err != nil {
		return nil, Info{}, fmt.Errorf("store: open %s: %w", u, err)
	}
	// The CheckSniff rule: the content must be what the filename says.
	head := make([]byte, SniffLen)
	n, err := io.ReadFull(rc, head)
	if err == nil || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = CheckSniff(ExtMIME(u.Filename), head[:n])
	}
	if err == nil {
		_, err = rc.Seek(0, io.SeekStart)
	}
	if err != nil {
		_ = rc.Close()
		return nil, Info{}, fmt.Errorf("store: open %s: %w", u, err)
	}
	return rc, Info{URI: u, Size: obj.Size, ContentType: obj.ContentType, Name: u.Filename}, nil
}

func (r *Resolver) openData(u URI) (io.ReadSeekCloser, Info, error) {
	b, err := u.decode()
	if err != nil {
		return nil, Info{}, err
	}
	if int64(len(b)) > r.maxData() {
		return nil, Info{}, fmt.Errorf("store: data uri: %d bytes over %d: %w", len(b), r.maxData(), ErrTooLarge)
	}
	if err := CheckSniff(u.MIME, b); err != nil {
		return nil, Info{}, fmt.Errorf("store: data uri: %w", err)
	}
	return nopCloser{bytes.NewReader(b)}, Info{URI: u, Size: int64(len(b)), ContentType: u.MIME}, nil
}

// client builds a one-use HTTP client with the guard, timeouts and
// redirect policy.
func (r *Resolver) client() (*http.Client, error) {
	g := AddressGuard{AllowHosts: r.AllowHosts}
	a, err := g.parse()
	if err != nil {
		return nil, err
	}
	connect := r.ConnectTimeout
	if connect <= 0 {
		connect = DefaultConnectTimeout
	}
	maxRedirects := r.MaxRedirects
	if maxRedirects == 0 {
		maxRedirects = DefaultMaxRedirects
	}
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would dial for us, past the guard
		DialContext:            g.DialContext(&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}),
		TLSClientConfig:        &tls.Config{RootCAs: r.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    connect,
		ResponseHeaderTimeout:  connect * 3,
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("store: more than %d redirects: %w", max(maxRedirects, 0), ErrUnreachable)
			}
			if err := checkHTTPURL(req.URL); err != nil {
				return err
			}
			if req.URL.Scheme == "http" && !r.AllowHTTP {
				return fmt.Errorf("store: redirect to http:// %s: %w", redactURL(req.URL), ErrForbiddenAddress)
			}
			return a.checkLiteral(req.URL.Hostname())
		},
	}, nil
}

func (r *Resolver) openHTTP(ctx context.Context, u URI) (io.ReadSeekCloser, Info, error) {
	c, err := r.client()
	if err != nil {
		return nil, Info{}, err
	}
	defer c.CloseIdleConnections()
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultFetchTimeout
	}
	maxBytes := r.MaxHTTPBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxHTTPBytes
	}
	fctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("store: fetch timed out after %s: %w: %w", timeout, ErrUnreachable, context.DeadlineExceeded))
	defer cancel()

	req, err := http.NewRequestWithContext(fctx, http.MethodGet, u.URL.String(), nil)
	if err != nil {
		return nil, Info{}, fmt.Errorf("store: fetch %s: %w: %w", u, ErrInvalidURI, err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "*/*")
	resp, err := c.Do(req)
	if err != nil {
		return nil, Info{}, r.fetchErr(ctx, fctx, u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, Info{}, &StatusError{URL: u.String(), StatusCode: resp.StatusCode}
	}
	if resp.ContentLength > maxBytes {
		return nil, Info{}, fmt.Errorf("store: fetch %s: content-length %d over %d: %w", u, resp.ContentLength, maxBytes, ErrTooLarge)
	}
	rsc, n, err := r.spool(resp.Body, maxBytes)
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, Info{}, fmt.Errorf("store: fetch %s: %w", u, err)
		}
		return nil, Info{}, r.fetchErr(ctx, fctx, u, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		_ = rsc.Close()
		return nil, Info{}, fmt.Errorf("store: fetch %s: body %d of %d bytes: %w", u, n, resp.ContentLength, ErrUnreachable)
	}
	ct := resp.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		ct = mt
	}
	name := path.Base(resp.Request.URL.Path)
	if name == "/" || name == "." {
		name = ""
	}
	return rsc, Info{URI: u, Size: n, ContentType: ct, Name: name}, nil
}

// fetchErr classifies a fetch failure: the caller's ctx ending, a refused
// address, a bad redirect target, or ErrUnreachable for everything else.
func (r *Resolver) fetchErr(parent, fctx context.Context, u URI, err error) error {
	switch {
	case parent.Err() != nil:
		return fmt.Errorf("store: fetch %s: %w", u, parent.Err())
	case errors.Is(err, ErrForbiddenAddress), errors.Is(err, ErrInvalidURI), errors.Is(err, ErrUnreachable):
		return fmt.Errorf("store: fetch %s: %w", u, stripURLError(err))
	case fctx.Err() != nil:
		return fmt.Errorf("store: fetch %s: %w", u, context.Cause(fctx))
	}
	return fmt.Errorf("store: fetch %s: %w: %w", u, ErrUnreachable, stripURLError(err))
}

// stripURLError drops the *url.Error layer, whose message repeats the full
// URL (query strings can hold secrets).
func stripURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// spool copies at most max bytes of body into memory (up to SpoolMemory)
// or a temp file; more than max bytes gives ErrTooLarge.
func (r *Resolver) spool(body io.Reader, maxBytes int64) (io.ReadSeekCloser, int64, error) {
	memCap := r.SpoolMemory
	if memCap <= 0 {
		memCap = DefaultSpoolMemory
	}
	memCap = min(memCap, maxBytes)
	lr := io.LimitReader(body, maxBytes+1)
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(lr, memCap+1))
	if err != nil {
		return nil, 0, err
	}
	if n <= memCap {
		if n > maxBytes {
			return nil, 0, fmt.Errorf("body over %d bytes: %w", maxBytes, ErrTooLarge)
		}
		return nopCloser{bytes.NewReader(buf.Bytes())}, n, nil
	}
	f, err := newTempSpool(r.TempDir)
	if err != nil {
		return nil, 0, err
	}
	total, err := io.Copy(f.f, io.MultiReader(&buf, lr))
	if err == nil && total > maxBytes {
		err = fmt.Errorf("body over %d bytes: %w", maxBytes, ErrTooLarge)
	}
	if err == nil {
		_, err = f.f.Seek(0, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	return f, total, nil
}

// nopCloser adds a no-op Close to an in-memory reader.
type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// tempSpool is a temp file removed on Close (or at once where the OS
// allows unlinking an open file, so a crash leaves nothing behind).
type tempSpool struct {
	f       *os.File
	removed bool
	closed  bool
}

func newTempSpool(dir string) (*tempSpool, error) {
	f, err := os.CreateTemp(dir, "vfx-fetch-*")
	if err != nil {
		return nil, fmt.Errorf("store: spool: %w", err)
	}
	t := &tempSpool{f: f}
	t.removed = os.Remove(f.Name()) == nil
	return t, nil
}

func (t *tempSpool) Read(p []byte) (int, error) { return t.f.Read(p) }

func (t *tempSpool) Seek(off int64, whence int) (int64, error) { return t.f.Seek(off, whence) }

// Close closes and removes the file; it is idempotent.
func (t *tempSpool) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	err := t.f.Close()
	if !t.removed {
		if rerr := os.Remove(t.f.Name()); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}
