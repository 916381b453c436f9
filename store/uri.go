package store

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vfxrender/vfx/internal/trunc"
)

// URIKind says which form an input URI has.
type URIKind int

// The accepted input URI forms.
const (
	// KindUpload is vfx://uploads/{id}/{filename}.
	KindUpload URIKind = iota + 1
	// KindHTTP is an https:// URL (http:// only where a Resolver allows it).
	KindHTTP
	// KindData is an inline data:{mime};base64,… value.
	KindData
	// KindJobInput is vfx://{jobs|product-jobs}/{job id}/inputs/{filename}:
	// an inline data: input that the API stored under its job's key space
	// at submission. Clients never send it; only the API writes it.
	KindJobInput
)

// String names the kind.
func (k URIKind) String() string {
	switch k {
	case KindUpload:
		return "upload"
	case KindHTTP:
		return "http"
	case KindData:
		return "data"
	case KindJobInput:
		return "job input"
	}
	return "unknown"
}

// Input limits.
const (
	// UploadScheme is the scheme of upload URIs.
	UploadScheme = "vfx"
	// UploadIDPrefix starts every upload id.
	UploadIDPrefix = "upload_"
	// UploadKeyPrefix starts the store key of every upload.
	UploadKeyPrefix = "uploads/"
	// MinFilenameLen and MaxFilenameLen bound upload filenames, in characters.
	MinFilenameLen = 3
	// MaxFilenameLen is the longest upload filename, in characters.
	MaxFilenameLen = 255
	// DefaultMaxDataBytes caps a data: URI's decoded content (docs/api.md, Limits).
	DefaultMaxDataBytes int64 = 50_000_000
	// MaxURLLen caps https:// source URLs.
	MaxURLLen = 8192
	// minUploadIDChars and maxUploadIDChars bound the random part of an id.
	minUploadIDChars = 8
	maxUploadIDChars = 64
	// newUploadIDChars is the length of ids made by NewUploadID.
	newUploadIDChars = 24
)

// uploadExtOK reports an accepted upload extension (lowercase, with dot).
func uploadExtOK(ext string) bool {
	switch ext {
	case ".mp4", ".mov", ".png", ".jpg", ".jpeg", ".webp", ".mp3", ".wav", ".zip", ".tar":
		return true
	}
	return false
}

// DataMIMEAllowed reports whether mt (lowercase, no parameters) is
// accepted in data: URIs: image/png, image/jpeg, image/webp, video/mp4,
// video/quicktime, audio/mpeg, audio/wav.
func DataMIMEAllowed(mt string) bool {
	switch mt {
	case "image/png", "image/jpeg", "image/webp", "video/mp4", "video/quicktime", "audio/mpeg", "audio/wav":
		return true
	}
	return false
}

// URI is a parsed input URI. Only the fields of its Kind are set.
type URI struct {
	// Kind is the form.
	Kind URIKind
	// UploadID and Filename are set for KindUpload.
	UploadID string
	// Filename is the upload's file name (KindUpload).
	Filename string
	// URL is set for KindHTTP.
	URL *url.URL
	// MIME is the declared, lowercased media type of a KindData URI.
	MIME string
	// data is the base64 payload of a KindData URI.
	data string
	// key is the store key of a KindJobInput URI.
	key string
}

// Key returns the store key of an upload URI ("uploads/{id}/{filename}"),
// or "" for other kinds.
func (u URI) Key() string {
	switch u.Kind {
	case KindUpload:
		return UploadKey(u.UploadID, u.Filename)
	case KindJobInput:
		return u.key
	}
	return ""
}

// EncodedLen is the length of a data: URI's base64 payload (0 otherwise).
func (u URI) EncodedLen() int { return len(u.data) }

// String returns a form safe for logs and error messages: upload URIs in
// full, URLs without user info, query or fragment, data: URIs as their
// MIME type and payload length.
func (u URI) String() string {
	switch u.Kind {
	case KindUpload:
		return UploadURI(u.UploadID, u.Filename)
	case KindJobInput:
		return UploadScheme + "://" + u.key
	case KindHTTP:
		return redactURL(u.URL)
	case KindData:
		return fmt.Sprintf("data:%s;base64,<%d chars>", u.MIME, len(u.data))
	}
	return "<invalid uri>"
}

func redactURL(u *url.URL) string {
	if u == nil {
		return "<nil url>"
	}
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		c.RawQuery = "…"
	}
	c.Fragment, c.RawFragment = "", ""
	s := c.String()
	return trunc.String(s, 200)
}

// UploadKey returns the store key of an upload: "uploads/{id}/{filename}".
func UploadKey(id, filename string) string { return UploadKeyPrefix + id + "/" + filename }

// UploadURI returns the vfx:// URI of an upload: "vfx://uploads/{id}/{filename}".
func UploadURI(id, filename string) string {
	return UploadScheme + "://" + UploadKey(id, filename)
}

// NewUploadID returns a fresh upload id: UploadIDPrefix and 24 random
// characters from [A-Za-z0-9] (crypto/rand).
func NewUploadID() string {
	return UploadIDPrefix + rand.Text()[:newUploadIDChars]
}

// ValidateUploadID checks "upload_" followed by 8–64 characters of
// [A-Za-z0-9]. The error wraps ErrInvalidURI.
func ValidateUploadID(id string) error {
	rest, ok := strings.CutPrefix(id, UploadIDPrefix)
	if !ok || len(rest) < minUploadIDChars || len(rest) > maxUploadIDChars {
		return fmt.Errorf("store: upload id %q: %w", trunc.String(id, 80), ErrInvalidURI)
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return fmt.Errorf("store: upload id %q: %w", trunc.String(id, 80), ErrInvalidURI)
		}
	}
	return nil
}

// ValidateUploadFilename checks an upload file name: 3–255 characters of
// valid UTF-8, printable, none of / \ ? # % and no control characters, not
// starting with "." or a space, not ending with a space, and an accepted
// extension (.mp4 .mov .png .jpg .jpeg .webp .mp3 .wav .zip .tar, any case) after a
// non-empty stem. The error wraps ErrInvalidURI.
func ValidateUploadFilename(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("store: filename %q: %s: %w", trunc.String(name, 80), why, ErrInvalidURI)
	}
	if !utf8.ValidString(name) {
		return bad("not valid utf-8")
	}
	n := utf8.RuneCountInString(name)
	if n < MinFilenameLen || n > MaxFilenameLen {
		return bad(fmt.Sprintf("length %d outside %d–%d", n, MinFilenameLen, MaxFilenameLen))
	}
	for _, r := range name {
		if !unicode.IsPrint(r) || strings.ContainsRune(`/\?#%`, r) {
			return bad("forbidden character")
		}
	}
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, " ") || strings.HasSuffix(name, " ") {
		return bad("leading dot or space, or trailing space")
	}
	ext := strings.ToLower(path.Ext(name))
	if !uploadExtOK(ext) {
		return bad("extension not one of .mp4 .mov .png .jpg .jpeg .webp .mp3 .wav .zip .tar")
	}
	return nil
}

// ParseURI parses an input URI (source_uri, alpha_uri, reference image)
// without fetching anything, with the default policy: https:// only (no
// http://), data: payloads up to DefaultMaxDataBytes decoded. It checks
// form, upload id and filename, URL shape (host, no user info, length),
// data: MIME type, base64 alphabet and size; it does not resolve hosts or
// look at content (Resolver.Open does). Errors wrap ErrInvalidURI, or
// ErrTooLarge for an oversized data: URI.
func ParseURI(s string) (URI, error) {
	return parseURI(s, false, DefaultMaxDataBytes)
}

func parseURI(s string, allowHTTP bool, maxData int64) (URI, error) {
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok {
		return URI{}, fmt.Errorf("store: uri %q: no scheme: %w", trunc.String(s, 80), ErrInvalidURI)
	}
	switch strings.ToLower(scheme) {
	case UploadScheme:
		return parseUpload(s, rest)
	case "https":
		return parseHTTP(s)
	case "http":
		if !allowHTTP {
			return URI{}, fmt.Errorf("store: uri %q: http:// is not allowed, use https://: %w", trunc.String(s, 80), ErrInvalidURI)
		}
		return parseHTTP(s)
	case "data":
		return parseData(rest, maxData)
	}
	return URI{}, fmt.Errorf("store: uri %q: scheme %q not accepted: %w", trunc.String(s, 80), trunc.String(scheme, 20), ErrInvalidURI)
}

func parseUpload(s, rest string) (URI, error) {
	for _, jp := range jobInputPrefixes {
		if strings.HasPrefix(rest, "//"+jp+"/") {
			return parseJobInput(s, rest[2:])
		}
	}
	p, ok := strings.CutPrefix(rest, "//"+UploadKeyPrefix)
	if !ok {
		return URI{}, fmt.Errorf("store: uri %q: want vfx://uploads/{id}/{filename}: %w", trunc.String(s, 80), ErrInvalidURI)
	}
	id, name, ok := strings.Cut(p, "/")
	if !ok {
		return URI{}, fmt.Errorf("store: uri %q: want vfx://uploads/{id}/{filename}: %w", trunc.String(s, 80), ErrInvalidURI)
	}
	if err := ValidateUploadID(id); err != nil {
		return URI{}, err
	}
	if err := ValidateUploadFilename(name); err != nil {
		return URI{}, err
	}
	u := URI{Kind: KindUpload, UploadID: id, Filename: name}
	if err := ValidateKey(u.Key()); err != nil {
		return URI{}, fmt.Errorf("store: uri %q: %w: %w", trunc.String(s, 80), ErrInvalidURI, err)
	}
	return u, nil
}

// jobInputPrefixes are the job key spaces that hold inline inputs.
var jobInputPrefixes = [...]string{"jobs", "product-jobs"}

// JobInputKey is the store key of an inline input of a job:
// "{space}/{jobID}/inputs/{filename}", space "jobs" or "product-jobs".
func JobInputKey(space, jobID, filename string) string {
	return space + "/" + jobID + "/inputs/" + filename
}

// JobInputURI is the vfx:// URI of JobInputKey(space, jobID, filename).
func JobInputURI(space, jobID, filename string) string {
	return UploadScheme + "://" + JobInputKey(space, jobID, filename)
}

// parseJobInput parses "{space}/{job id}/inputs/{filename}".
func parseJobInput(s, key string) (URI, error) {
	bad := fmt.Errorf("store: uri %q: want vfx://{jobs|product-jobs}/{id}/inputs/{filename}: %w", trunc.String(s, 80), ErrInvalidURI)
	parts := strings.Split(key, "/")
	if len(parts) != 4 || parts[2] != "inputs" || len(parts[1]) < 1 || len(parts[1]) > maxUploadIDChars+8 {
		return URI{}, bad
	}
	for i := 0; i < len(parts[1]); i++ {
		c := parts[1][i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return URI{}, bad
		}
	}
	if err := ValidateUploadFilename(parts[3]); err != nil {
		return URI{}, err
	}
	if err := ValidateKey(key); err != nil {
		return URI{}, fmt.Errorf("store: uri %q: %w: %w", trunc.String(s, 80), ErrInvalidURI, err)
	}
	return URI{Kind: KindJobInput, Filename: parts[3], key: key}, nil
}

func parseHTTP(s string) (URI, error) {
	if len(s) > MaxURLLen {
		return URI{}, fmt.Errorf("store: url longer than %d bytes: %w", MaxURLLen, ErrInvalidURI)
	}
	u, err := url.Parse(s)
	if err != nil {
		return URI{}, fmt.Errorf("store: url: %w", ErrInvalidURI)
	}
	if err := checkHTTPURL(u); err != nil {
		return URI{}, err
	}
	return URI{Kind: KindHTTP, URL: u}, nil
}

// checkHTTPURL checks an http(s) URL's shape (also used on redirects).
func checkHTTPURL(u *url.URL) error {
	u.Scheme = strings.ToLower(u.Scheme)
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("store: url %s: scheme %q: %w", redactURL(u), u.Scheme, ErrInvalidURI)
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("store: url %s: no host: %w", redactURL(u), ErrInvalidURI)
	case u.User != nil:
		return fmt.Errorf("store: url %s: user info not allowed: %w", redactURL(u), ErrInvalidURI)
	}
	if p := u.Port(); p != "" {
		if _, err := netip.ParseAddrPort("127.0.0.1:" + p); err != nil {
			return fmt.Errorf("store: url %s: bad port: %w", redactURL(u), ErrInvalidURI)
		}
	}
	for _, r := range u.Hostname() {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("store: url %s: bad host: %w", redactURL(u), ErrInvalidURI)
		}
	}
	return nil
}

// parseData parses "{mime}[;param…];base64,{payload}" (the part after
// "data:"). The limit is on the decoded length (maxData bytes at most):
// a payload whose encoded length cannot fit is refused before the
// alphabet is scanned, and the exact decoded length is checked after.
func parseData(rest string, maxData int64) (URI, error) {
	header, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return URI{}, fmt.Errorf("store: data uri: no comma: %w", ErrInvalidURI)
	}
	if len(header) > 256 {
		return URI{}, fmt.Errorf("store: data uri: header too long: %w", ErrInvalidURI)
	}
	params := strings.Split(header, ";")
	mt := strings.ToLower(strings.TrimSpace(params[0]))
	if !strings.EqualFold(strings.TrimSpace(params[len(params)-1]), "base64") || len(params) < 2 {
		return URI{}, fmt.Errorf("store: data uri: only ;base64 payloads are accepted: %w", ErrInvalidURI)
	}
	if !DataMIMEAllowed(mt) {
		return URI{}, fmt.Errorf("store: data uri: mime type %q not accepted: %w", trunc.String(mt, 60), ErrInvalidURI)
	}
	if int64(len(payload)) > maxEncodedLen(maxData) {
		return URI{}, fmt.Errorf("store: data uri: %d base64 chars encode more than %d bytes: %w", len(payload), maxData, ErrTooLarge)
	}
	if len(payload) == 0 {
		return URI{}, fmt.Errorf("store: data uri: empty payload: %w", ErrInvalidURI)
	}
	if err := checkBase64(payload); err != nil {
		return URI{}, err
	}
	u := URI{Kind: KindData, MIME: mt, data: payload}
	// The encoded length above only bounds the content from above (a
	// padded text of maxEncodedLen chars decodes to up to maxData+1
	// bytes); once the alphabet, length and padding are checked, DataSize
	// is the exact decoded length, and that is what the limit counts.
	if n := u.DataSize(); n > maxData {
		return URI{}, fmt.Errorf("store: data uri: %d decoded bytes, over the limit of %d: %w", n, maxData, ErrTooLarge)
	}
	return u, nil
}

// maxEncodedLen is the longest padded base64 text of at most n bytes.
func maxEncodedLen(n int64) int64 { return (n + 2) / 3 * 4 }

// checkBase64 checks the standard alphabet with optional padding, without
// decoding.
func checkBase64(p string) error {
	body := strings.TrimRight(p, "=")
	if pad := len(p) - len(body); pad > 2 || (pad > 0 && len(p)%4 != 0) || len(body)%4 == 1 {
		return fmt.Errorf("store: data uri: bad base64 length or padding: %w", ErrInvalidURI)
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/') {
			return fmt.Errorf("store: data uri: bad base64 character at %d: %w", i, ErrInvalidURI)
		}
	}
	return nil
}

// DataSize is the decoded length of a data: URI's content (0 otherwise).
func (u URI) DataSize() int64 {
	if u.Kind != KindData {
		return 0
	}
	return int64(base64.RawStdEncoding.DecodedLen(len(strings.TrimRight(u.data, "="))))
}

// DataReader streams the decoded content of a data: URI without holding
// it in memory (nil otherwise). Bad base64 surfaces as a read error
// wrapping ErrInvalidURI.
func (u URI) DataReader() io.Reader {
	if u.Kind != KindData {
		return nil
	}
	return dataReader{base64.NewDecoder(base64.RawStdEncoding, strings.NewReader(strings.TrimRight(u.data, "=")))}
}

type dataReader struct{ r io.Reader }

func (d dataReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("store: data uri: %w: %w", ErrInvalidURI, err)
	}
	return n, err
}

// DataExt is the file extension of a data: MIME type (".png" for
// image/png); "" for a type not accepted.
func DataExt(mt string) string {
	switch mt {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/webp":
		return ".webp"
	case "video/mp4":
		return ".mp4"
	case "video/quicktime":
		return ".mov"
	case "audio/mpeg":
		return ".mp3"
	case "audio/wav":
		return ".wav"
	}
	return ""
}

// decode returns a data: URI's content.
func (u URI) decode() ([]byte, error) {
	b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(u.data, "="))
	if err != nil {
		return nil, fmt.Errorf("store: data uri: %w: %w", ErrInvalidURI, err)
	}
	return b, nil
}
