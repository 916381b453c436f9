package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/vfxrender/vfx/internal/trunc"
)

// DefaultMaxInflightBodyBytes is the default of Config.MaxInflightBodyBytes:
// the request body bytes all requests together may hold at once.
const DefaultMaxInflightBodyBytes int64 = 256 << 20

// bodyReadStep is how much budget a body of unknown length takes at a time.
const bodyReadStep int64 = 1 << 20

// ByteBudget is a semaphore on request body bytes shared by every request
// of a Server: a body is read only while its bytes fit, so that N
// concurrent maximal bodies cannot hold more than limit bytes.
type ByteBudget struct {
	mu    sync.Mutex
	used  int64
	limit int64
}

// Take reserves n bytes, or reports false without waiting when they do
// not fit.
func (b *ByteBudget) Take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n < 0 || b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// Give returns n bytes.
func (b *ByteBudget) Give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// InUse is the bytes reserved now.
func (b *ByteBudget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// bodyCharge is what one request holds of the budget; the route wrapper
// returns it when the handler is done.
type bodyCharge struct{ n int64 }

type chargeKey struct{}

// withCharge gives a request its (empty) charge and returns the release.
func (s *Server) withCharge(r *http.Request) (*http.Request, func()) {
	c := &bodyCharge{}
	return r.WithContext(context.WithValue(r.Context(), chargeKey{}, c)), func() {
		if c.n > 0 {
			s.Budget.Give(c.n)
			c.n = 0
		}
	}
}

// busy is the 503 of a full body budget.
func busy() error {
	return Unavailable(2, "the server is reading too many large request bodies at once; nothing was created, retry shortly")
}

// ReadBody reads the whole request body once, under the size cap and the
// in-flight byte budget: a body with a Content-Length takes its length
// from the budget before a byte is read, one without takes it 1 MiB at a
// time as it arrives. A body over the cap gets 413 REQUEST_TOO_LARGE, a
// budget that cannot hold it 503 SERVICE_UNAVAILABLE with Retry-After.
func (s *Server) ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	c, _ := r.Context().Value(chargeKey{}).(*bodyCharge)
	if c == nil {
		return nil, errors.New("api: readBody outside a route")
	}
	limit := s.Cfg.MaxBodyBytes
	tooLarge := func() error {
		return NewError(CodeRequestTooLarge,
			"request body over %d bytes (inline data: URIs are limited to 50 MB)", limit)
	}
	takeMore := func(n int64) bool {
		if !s.Budget.Take(n) {
			return false
		}
		c.n += n
		return true
	}
	guarded, done := s.slowBodyGuard(w, r.Body)
	body := http.MaxBytesReader(w, io.NopCloser(guarded), limit)
	readErr := func(err error) error {
		if errors.Is(err, errSlowBody) {
			return NewError(CodeRequestTimeout,
				"request body arrived slower than %d bytes a second (after %s), or took over %s", s.Cfg.MinBodyRate, s.Cfg.MinBodyGrace, BodyTimeout)
		}
		return NewError(CodeInvalidInput, "reading the request body: %v", err)
	}
	if n := r.ContentLength; n >= 0 {
		if n > limit {
			return nil, tooLarge()
		}
		if !takeMore(n) {
			return nil, busy()
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, readErr(err)
		}
		done()
		return buf, nil
	}
	var buf []byte
	for {
		if int64(len(buf)) == int64(cap(buf)) {
			step := min(bodyReadStep, limit+1-int64(cap(buf)))
			if step <= 0 {
				return nil, tooLarge()
			}
			if !takeMore(step) {
				return nil, busy()
			}
			buf = slices.Grow(buf, int(step))
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			done()
			return buf, nil
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, tooLarge()
			}
			return nil, readErr(err)
		}
	}
}

// maxJSONDepth is the deepest nesting accepted (encoding/json's own limit).
const maxJSONDepth = 10000

// member is one field of a JSON object: its decoded key and its raw value
// (a slice of the body, not a copy).
type member struct {
	Key string
	Raw []byte
}

// jsonWalker walks a JSON text that json.Unmarshal already found valid.
type jsonWalker struct {
	b []byte
	i int
}

func (w *jsonWalker) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// str skips a string at w.i and returns its raw span, quotes included.
func (w *jsonWalker) str() []byte {
	start := w.i
	w.i++
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case '\\':
			w.i += 2
			continue
		case '"':
			w.i++
			return w.b[start:w.i]
		}
		w.i++
	}
	return w.b[start:]
}

// value skips one value and returns its raw span, failing on a duplicate
// object key at any depth or on nesting deeper than maxJSONDepth.
func (w *jsonWalker) value(depth int) ([]byte, error) {
	if depth > maxJSONDepth {
		return nil, Unprocessable([]any{"body", w.i}, "JSON decode error: nested too deeply", "json_invalid")
	}
	w.ws()
	start := w.i
	if w.i >= len(w.b) {
		return nil, Unprocessable([]any{"body", w.i}, "JSON decode error: unexpected end", "json_invalid")
	}
	switch w.b[w.i] {
	case '"':
		return w.str(), nil
	case '{':
		if _, err := w.object(depth); err != nil {
			return nil, err
		}
	case '[':
		w.i++
		w.ws()
		if w.b[w.i] == ']' {
			w.i++
			break
		}
		for {
			if _, err := w.value(depth + 1); err != nil {
				return nil, err
			}
			w.ws()
			c := w.b[w.i]
			w.i++
			if c == ']' {
				break
			}
		}
	default: // number, true, false, null
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return w.b[start:w.i], nil
			}
			w.i++
		}
	}
	return w.b[start:w.i], nil
}

// object walks an object at w.i and returns its members in order.
func (w *jsonWalker) object(depth int) ([]member, error) {
	w.i++ // {
	var out []member
	seen := map[string]bool{}
	for {
		w.ws()
		if w.b[w.i] == '}' {
			w.i++
			return out, nil
		}
		at := w.i
		key, err := JSONStringOf(w.str())
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, Unprocessable([]any{"body", at}, fmt.Sprintf("JSON decode error: duplicate key %q", trunc.String(key, 80)), "json_invalid")
		}
		seen[key] = true
		w.ws()
		w.i++ // :
		raw, err := w.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, member{Key: key, Raw: raw})
		w.ws()
		if w.b[w.i] == ',' {
			w.i++
		}
	}
}

// jsonStringOf decodes a raw JSON string. Strings without escapes that are
// plain printable ASCII are copied once, without the decoder.
func JSONStringOf(raw []byte) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && plainASCII(raw[1:len(raw)-1]) {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	return s, nil
}

// plainASCII reports bytes that json.Marshal writes as they are: printable
// ASCII other than the quote, the backslash and the HTML-escaped <, >, &.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// ParseObject parses body as one JSON object in one pass over the bytes it
// holds: the members' raw values are slices of body. Malformed JSON,
// another top-level type, and a key repeated in any object of the body
// get 422 like FastAPI.
func ParseObject(body []byte) ([]member, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, Unprocessable([]any{"body"}, "Field required", "missing")
	}
	// Validation without building values (the decoder skips every field
	// of an empty struct).
	var probe struct{}
	if err := json.Unmarshal(body, &probe); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, Unprocessable([]any{"body"}, "Input should be a valid dictionary or object to extract fields from", "model_attributes_type")
		}
		return nil, jsonSyntaxDetail(err)
	}
	w := &jsonWalker{b: body}
	return w.object(0)
}

// WriteCanonical writes to h the bytes json.Marshal gives for the value
// raw decodes to with UseNumber (objects with their keys sorted, strings
// escaped as Marshal escapes them, numbers as written), without building
// the value: a 67 MB string is hashed in place.
func WriteCanonical(h hash.Hash, raw []byte) error {
	w := &jsonWalker{b: raw}
	return w.canonical(h, 0)
}

func (w *jsonWalker) canonical(h hash.Hash, depth int) error {
	if depth > maxJSONDepth {
		return errors.New("nested too deeply")
	}
	w.ws()
	switch w.b[w.i] {
	case '"':
		s := w.str()
		return writeStringRaw(h, s)
	case '{':
		ms, err := w.object(depth)
		if err != nil {
			return err
		}
		slices.SortFunc(ms, func(a, b member) int {
			switch {
			case a.Key < b.Key:
				return -1
			case a.Key > b.Key:
				return 1
			}
			return 0
		})
		h.Write([]byte{'{'})
		for i, m := range ms {
			if i > 0 {
				h.Write([]byte{','})
			}
			kb, _ := json.Marshal(m.Key)
			h.Write(kb)
			h.Write([]byte{':'})
			sub := &jsonWalker{b: m.Raw}
			if err := sub.canonical(h, depth+1); err != nil {
				return err
			}
		}
		h.Write([]byte{'}'})
		return nil
	case '[':
		w.i++
		h.Write([]byte{'['})
		w.ws()
		if w.b[w.i] == ']' {
			w.i++
			h.Write([]byte{']'})
			return nil
		}
		for n := 0; ; n++ {
			if n > 0 {
				h.Write([]byte{','})
			}
			if err := w.canonical(h, depth+1); err != nil {
				return err
			}
			w.ws()
			c := w.b[w.i]
			w.i++
			if c == ']' {
				h.Write([]byte{']'})
				return nil
			}
		}
	default:
		v, err := w.value(depth)
		if err != nil {
			return err
		}
		h.Write(v)
		return nil
	}
}

// writeStringRaw writes the Marshal form of the raw JSON string s.
func writeStringRaw(h hash.Hash, s []byte) error {
	if len(s) >= 2 && s[0] == '"' && plainASCII(s[1:len(s)-1]) {
		h.Write(s)
		return nil
	}
	v, err := JSONStringOf(s)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(v)
	h.Write(b)
	return nil
}

// WriteString writes the Marshal form of s without copying a plain one.
func WriteString(h hash.Hash, s string) {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			plain = false
			break
		}
	}
	if !plain {
		b, _ := json.Marshal(s)
		h.Write(b)
		return
	}
	var buf [32 << 10]byte
	h.Write([]byte{'"'})
	for len(s) > 0 {
		n := copy(buf[:], s)
		h.Write(buf[:n])
		s = s[n:]
	}
	h.Write([]byte{'"'})
}

// WriteInt writes an integer as Marshal does.
func WriteInt(h hash.Hash, v int64) { h.Write(strconv.AppendInt(nil, v, 10)) }

// DecodeStrict decodes an admin body, refusing unknown fields (422).
func (s *Server) DecodeStrict(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := s.ReadBody(w, r)
	if err != nil {
		return err
	}
	if _, err := DecodeObject(body); err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Unprocessable([]any{"body", te.Field}, "Input should be a valid "+te.Type.String(), "type_error")
		}
		return Unprocessable([]any{"body"}, err.Error(), "value_error")
	}
	return nil
}
