package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/store"
)

// MaxSeed is the largest seed (2^32-1).
const MaxSeed = math.MaxUint32

// HostResolver looks up the addresses of a host name; net.Resolver
// satisfies it.
type HostResolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

type netResolver struct{}

func (netResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, network, host)
}

// genRequest is the body of POST /v1/vfx/generations as given: nil means
// the field was omitted (or null).
type genRequest struct {
	GenerationType     *string `json:"generation_type,omitempty"`
	SourceURI          *string `json:"source_uri,omitempty"`
	AlphaMode          *string `json:"alpha_mode,omitempty"`
	Prompt             *string `json:"prompt,omitempty"`
	ReferenceImageURI  *string `json:"reference_image_uri,omitempty"`
	AlphaURI           *string `json:"alpha_uri,omitempty"`
	AlphaKeyframeIndex *int64  `json:"alpha_keyframe_index,omitempty"`
	Seed               *int64  `json:"seed,omitempty"`
	MaxResolution      *int64  `json:"max_resolution,omitempty"`
	IdempotencyKey     *string `json:"idempotency_key,omitempty"`
	CallbackURL        *string `json:"callback_url,omitempty"`
	// Foreground (an extension beyond SPEC.md) asks for the clean relit
	// foreground as an extra output, output.foreground.
	Foreground *bool `json:"foreground,omitempty"`
	// OutputFormat (an extension) is mp4 (the default) or exr: also the
	// EXR pass sequences, output.exr_<pass>.
	OutputFormat *string `json:"output_format,omitempty"`
	// Frames (an extension) renders only source frames "A-B" of a video.
	Frames *string `json:"frames,omitempty"`
	// badUTF8 names the first string field whose JSON text held invalid
	// UTF-8 (the decoder would have replaced it with U+FFFD).
	badUTF8 string
	// intText is the JSON text of each integer field as given, for error
	// messages: a value beyond int64 (1e100) saturates when parsed.
	intText map[string]string
}

// quoteInt is the JSON text of the integer field name as the client sent
// it (at most 40 characters), or v when it was not sent.
func (g genRequest) quoteInt(name string, v int64) string {
	if t, ok := g.intText[name]; ok {
		return trunc.String(t, 40)
	}
	return strconv.FormatInt(v, 10)
}

// fieldKind is the JSON type a request field wants.
type fieldKind int

const (
	kindString fieldKind = iota
	kindInt
	kindBool
)

// genFields lists the request fields and their JSON types.
var genFields = [...]struct {
	name string
	kind fieldKind
}{
	{"generation_type", kindString}, {"source_uri", kindString}, {"alpha_mode", kindString},
	{"prompt", kindString}, {"reference_image_uri", kindString}, {"alpha_uri", kindString},
	{"alpha_keyframe_index", kindInt}, {"seed", kindInt}, {"max_resolution", kindInt},
	{"idempotency_key", kindString}, {"callback_url", kindString}, {"foreground", kindBool},
	{"output_format", kindString}, {"frames", kindString},
}

// DecodeObject parses body as one JSON object into its raw fields (slices
// of body), or answers 422 like FastAPI; a repeated key is refused.
func DecodeObject(body []byte) (map[string]json.RawMessage, error) {
	ms, err := ParseObject(body)
	if err != nil {
		return nil, err
	}
	fields := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		fields[m.Key] = m.Raw
	}
	return fields, nil
}

func jsonSyntaxDetail(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return Unprocessable([]any{"body", int(se.Offset)}, "JSON decode error: "+se.Error(), "json_invalid")
	}
	return Unprocessable([]any{"body", 0}, "JSON decode error: "+err.Error(), "json_invalid")
}

// decodeGenRequest parses the body of POST /v1/vfx/generations; wrong
// JSON types give 422 with one detail element per field.
func decodeGenRequest(body []byte) (genRequest, error) {
	fields, err := DecodeObject(body)
	if err != nil {
		return genRequest{}, err
	}
	var req genRequest
	var details []ValidationError
	strs := map[string]**string{
		"generation_type": &req.GenerationType, "source_uri": &req.SourceURI, "alpha_mode": &req.AlphaMode,
		"prompt": &req.Prompt, "reference_image_uri": &req.ReferenceImageURI, "alpha_uri": &req.AlphaURI,
		"idempotency_key": &req.IdempotencyKey, "callback_url": &req.CallbackURL,
		"output_format": &req.OutputFormat, "frames": &req.Frames,
	}
	ints := map[string]**int64{
		"alpha_keyframe_index": &req.AlphaKeyframeIndex, "seed": &req.Seed, "max_resolution": &req.MaxResolution,
	}
	for _, f := range genFields {
		raw, ok := fields[f.name]
		if !ok || string(bytes.TrimSpace(raw)) == "null" {
			continue
		}
		switch f.kind {
		case kindString:
			if req.badUTF8 == "" && !utf8.Valid(raw) {
				req.badUTF8 = f.name
			}
			v, err := jsonStringOf(raw)
			if err != nil {
				details = append(details, ValidationError{Loc: []any{"body", f.name}, Msg: "Input should be a valid string", Type: "string_type"})
				continue
			}
			*strs[f.name] = &v
		case kindInt:
			v, err := ParseJSONInt(raw)
			if err != nil {
				details = append(details, ValidationError{Loc: []any{"body", f.name}, Msg: "Input should be a valid integer", Type: "int_type"})
				continue
			}
			*ints[f.name] = &v
			if req.intText == nil {
				req.intText = map[string]string{}
			}
			req.intText[f.name] = string(bytes.TrimSpace(raw))
		case kindBool:
			var v bool
			if err := json.Unmarshal(raw, &v); err != nil {
				details = append(details, ValidationError{Loc: []any{"body", f.name}, Msg: "Input should be a valid boolean", Type: "bool_type"})
				continue
			}
			req.Foreground = &v
		}
	}
	if len(details) > 0 {
		return genRequest{}, &detailError{Detail: details}
	}
	return req, nil
}

// ParseJSONInt reads a JSON number that is an integer (1e3 and 3.0 count,
// 3.5 does not). Values beyond int64 saturate, so range checks still fail
// them with the field's 400 code.
func ParseJSONInt(raw json.RawMessage) (int64, error) {
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return 0, err
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, errors.New("not a number")
	}
	if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, err
	}
	if f != math.Trunc(f) {
		return 0, errors.New("not an integer")
	}
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64, nil
	case f <= math.MinInt64:
		return math.MinInt64, nil
	}
	return int64(f), nil
}

// hash is the digest of the request as given, without its idempotency key:
// a repeat with the same key must carry the same hash.
func (g genRequest) hash() string {
	h := sha256.New()
	first := true
	field := func(name string) {
		if !first {
			h.Write([]byte{','})
		}
		first = false
		h.Write([]byte(`"` + name + `":`))
	}
	h.Write([]byte{'{'})
	// The bytes json.Marshal writes for g without its key, field by field,
	// so that an inline data: URI is hashed in place.
	for _, f := range []struct {
		name string
		s    *string
		i    *int64
	}{
		{"generation_type", g.GenerationType, nil}, {"source_uri", g.SourceURI, nil}, {"alpha_mode", g.AlphaMode, nil},
		{"prompt", g.Prompt, nil}, {"reference_image_uri", g.ReferenceImageURI, nil}, {"alpha_uri", g.AlphaURI, nil},
		{"alpha_keyframe_index", nil, g.AlphaKeyframeIndex}, {"seed", nil, g.Seed}, {"max_resolution", nil, g.MaxResolution},
		{"callback_url", g.CallbackURL, nil},
	} {
		switch {
		case f.s != nil:
			field(f.name)
			WriteString(h, *f.s)
		case f.i != nil:
			field(f.name)
			WriteInt(h, *f.i)
		}
	}
	if g.Foreground != nil && *g.Foreground { // false is the SPEC behaviour: hashed as omitted
		field("foreground")
		h.Write([]byte("true"))
	}
	// The extensions, when they ask for something other than the SPEC
	// behaviour (mp4 is hashed as omitted).
	if g.OutputFormat != nil && *g.OutputFormat != job.OutputFormatMP4 {
		field("output_format")
		WriteString(h, *g.OutputFormat)
	}
	if g.Frames != nil {
		field("frames")
		WriteString(h, *g.Frames)
	}
	h.Write([]byte{'}'})
	return hex.EncodeToString(h.Sum(nil))
}

// str returns *p or "".
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// validate maps the body to a job.JobRequest, runs the contract's field
// rules (job.Validate) once and answers the first problem in the SPEC's
// words: Validate's refusal through specWords, or one of the few rules
// only the body can break (bodyRules), whichever comes first in the order
// of step. It returns the normalised request without a seed.
func (s *Server) validate(ctx context.Context, g genRequest) (job.JobRequest, error) {
	jr := g.jobRequest()
	_, verr := s.ValidateJob(jr)
	if err := firstProblem(g, jr, verr); err != nil {
		return jr, err
	}
	// Normalised as the job record keeps it: the matte and the keyframe
	// only where the mode reads them, the frame range as "A-B".
	mode := job.AlphaMode(jr.AlphaMode)
	if !mode.NeedsMatte() {
		jr.AlphaURI = ""
	}
	if mode != job.AlphaSelect || jr.GenerationType != "video" {
		jr.AlphaKeyframeIndex = 0
	}
	if jr.Frames != "" {
		first, last, _ := job.ParseFrames(jr.Frames)
		jr.Frames = fmt.Sprintf("%d-%d", first, last)
	}
	for _, u := range []struct{ name, uri string }{
		{"source_uri", jr.SourceURI}, {"alpha_uri", jr.AlphaURI}, {"reference_image_uri", jr.ReferenceImageURI},
	} {
		if u.uri == "" {
			continue
		}
		if err := s.CheckInputURI(ctx, u.name, u.uri); err != nil {
			return jr, err
		}
	}
	if g.CallbackURL != nil {
		if err := s.CheckCallbackURL(ctx, *g.CallbackURL); err != nil {
			return jr, err
		}
	}
	return jr, nil
}

// jobRequest is the body as the job contract reads it: an omitted field
// is its zero value, max_resolution defaults to job.DefaultMaxResolution.
func (g genRequest) jobRequest() job.JobRequest {
	jr := job.JobRequest{GenerationType: str(g.GenerationType), SourceURI: str(g.SourceURI), AlphaMode: str(g.AlphaMode),
		AlphaURI: str(g.AlphaURI), Prompt: str(g.Prompt), ReferenceImageURI: str(g.ReferenceImageURI),
		MaxResolution: job.DefaultMaxResolution, OutputFormat: str(g.OutputFormat), Frames: str(g.Frames)}
	if g.MaxResolution != nil {
		jr.MaxResolution = int(*g.MaxResolution)
	}
	if g.AlphaKeyframeIndex != nil {
		jr.AlphaKeyframeIndex = int(*g.AlphaKeyframeIndex)
	}
	return jr
}

// step is the place of a field rule in the order in which the generation
// API names a body's first problem (job.Validate runs its rules in the
// same order).
type step int

const (
	stepGenerationType step = iota
	stepAlphaMode
	stepSource
	stepAlpha
	stepStyle
	stepPromptText
	stepPromptLength
	stepMaxResolution
	stepSeed
	stepKeyframe
	stepOutputFormat
	stepFrames
	stepIdempotencyKey
	stepNone
)

// specWords words each code of job.Validate with the SPEC's field names
// (source_uri, alpha_uri, reference_image_uri) and the body's values as
// the client sent them; nil keeps job.Validate's message, which is the
// SPEC's already.
var specWords = map[job.Code]struct {
	step  step
	words func(g genRequest, jr job.JobRequest) *Error
}{
	job.CodeInvalidGenerationType: {stepGenerationType, func(g genRequest, jr job.JobRequest) *Error {
		if jr.GenerationType == "" {
			return BadRequest(CodeInvalidGenerationType, "generation_type is required: image or video")
		}
		return BadRequest(CodeInvalidGenerationType, "generation_type %q: want image or video", trunc.String(jr.GenerationType, 40))
	}},
	job.CodeInvalidAlphaMode: {stepAlphaMode, func(g genRequest, jr job.JobRequest) *Error {
		if jr.AlphaMode == "" {
			return BadRequest(CodeInvalidAlphaMode, "alpha_mode is required: auto, fill, custom or select")
		}
		return BadRequest(CodeInvalidAlphaMode, "alpha_mode %q: want auto, fill, custom or select", trunc.String(jr.AlphaMode, 40))
	}},
	job.CodeMissingSource: {stepSource, func(genRequest, job.JobRequest) *Error {
		return BadRequest(CodeMissingSource, "source_uri is required")
	}},
	job.CodeMissingAlpha: {stepAlpha, func(g genRequest, jr job.JobRequest) *Error {
		return BadRequest(CodeMissingAlpha, "alpha_mode %s needs alpha_uri", jr.AlphaMode)
	}},
	job.CodeMissingStyleInput: {stepStyle, func(genRequest, job.JobRequest) *Error {
		return BadRequest(CodeMissingStyleInput, "at least one of prompt or reference_image_uri is required")
	}},
	job.CodePromptTooLong: {stepPromptLength, nil},
	job.CodeInvalidMaxResolution: {stepMaxResolution, func(g genRequest, jr job.JobRequest) *Error {
		return BadRequest(CodeInvalidMaxResolution, "max_resolution %s: want 720 or 1080", g.quoteInt("max_resolution", int64(jr.MaxResolution)))
	}},
	// A negative keyframe (stepKeyframe) or one outside the frame range
	// (stepFrames, job.Validate's words): see problemStep.
	job.CodeInvalidKeyframeIndex: {stepKeyframe, func(g genRequest, jr job.JobRequest) *Error {
		if jr.AlphaKeyframeIndex >= 0 {
			return nil
		}
		return keyframeRange(g, int64(jr.AlphaKeyframeIndex))
	}},
	job.CodeInvalidOutputFormat: {stepOutputFormat, nil},
	job.CodeInvalidFrameRange: {stepFrames, func(g genRequest, jr job.JobRequest) *Error {
		first, last, err := job.ParseFrames(jr.Frames)
		if err != nil {
			return nil // its own words
		}
		return BadRequest(CodeInvalidFrameRange, "frames %d-%d: a frame range needs generation_type video", first, last)
	}},
}

// bodyRules are the rules only the HTTP body can break, in step order:
// what the JSON text held before decoding, the seed's range (the request
// holds a uint32), the keyframe's upper bound (an int), a field given with
// the zero value that job.JobRequest reads as omitted, the idempotency key.
var bodyRules = []struct {
	step  step
	check func(g genRequest) error
}{
	{stepPromptText, func(g genRequest) error {
		if g.badUTF8 == "prompt" {
			return BadRequest(CodeInvalidPrompt, "prompt is not valid UTF-8")
		}
		if err := CheckPromptChars(str(g.Prompt)); err != nil {
			return BadRequest(CodeInvalidPrompt, "%v", err)
		}
		return nil
	}},
	{stepMaxResolution, func(g genRequest) error {
		if g.MaxResolution != nil && *g.MaxResolution == 0 {
			return BadRequest(CodeInvalidMaxResolution, "max_resolution %s: want 720 or 1080", g.quoteInt("max_resolution", 0))
		}
		return nil
	}},
	{stepSeed, func(g genRequest) error {
		if g.Seed != nil && (*g.Seed < 0 || *g.Seed > MaxSeed) {
			return BadRequest(CodeInvalidSeed, "seed %s: want an integer from 0 to %d", g.quoteInt("seed", *g.Seed), uint64(MaxSeed))
		}
		return nil
	}},
	{stepKeyframe, func(g genRequest) error {
		if g.AlphaKeyframeIndex != nil && *g.AlphaKeyframeIndex > math.MaxInt32 {
			return keyframeRange(g, *g.AlphaKeyframeIndex)
		}
		return nil
	}},
	{stepOutputFormat, func(g genRequest) error {
		if g.OutputFormat != nil && *g.OutputFormat == "" {
			return BadRequest(CodeInvalidOutputFormat, "output_format \"\": want mp4 or exr")
		}
		return nil
	}},
	{stepFrames, func(g genRequest) error {
		if g.Frames != nil && *g.Frames == "" {
			_, _, err := job.ParseFrames("")
			return MediaError("frames", err)
		}
		return nil
	}},
	{stepIdempotencyKey, func(g genRequest) error {
		if g.IdempotencyKey != nil {
			if n := utf8.RuneCountInString(*g.IdempotencyKey); n < 1 || n > MaxIdempotencyKeyLen {
				return BadRequest(CodeInvalidIdempotencyKey, "idempotency_key has %d characters: want 1 to %d", n, MaxIdempotencyKeyLen)
			}
		}
		return nil
	}},
}

// keyframeRange is the answer to an alpha_keyframe_index outside 0..2^31-1.
func keyframeRange(g genRequest, v int64) *Error {
	return BadRequest(CodeInvalidKeyframeIndex, "alpha_keyframe_index %s: want an integer from 0 to %d", g.quoteInt("alpha_keyframe_index", v), math.MaxInt32)
}

// firstProblem is the answer to the body's first problem: the earlier of
// job.Validate's refusal verr and the first broken body rule.
func firstProblem(g genRequest, jr job.JobRequest, verr error) error {
	at := stepNone
	var ie *job.InputError
	if verr != nil {
		at = problemStep(verr, jr)
	}
	for _, r := range bodyRules {
		if r.step >= at {
			break
		}
		if err := r.check(g); err != nil {
			return err
		}
	}
	if verr == nil {
		return nil
	}
	if errors.As(verr, &ie) {
		if w, ok := specWords[ie.Code]; ok && w.words != nil {
			if e := w.words(g, jr); e != nil {
				return e
			}
		}
	}
	return MediaError("request", verr)
}

// problemStep is the step of job.Validate's refusal err (the first step
// for a code specWords does not know, which no rule of Validate gives).
func problemStep(err error, jr job.JobRequest) step {
	code := job.CodeOf(err)
	if code == job.CodeInvalidKeyframeIndex && jr.AlphaKeyframeIndex >= 0 {
		return stepFrames // outside the frame range
	}
	if w, ok := specWords[code]; ok {
		return w.step
	}
	return stepGenerationType
}

// CheckInputURI parses an input URI and, for https://, resolves its host
// and refuses non-public addresses (unless private networks are allowed).
func (s *Server) CheckInputURI(ctx context.Context, name, uri string) error {
	u, err := s.resolver.Parse(uri)
	if err != nil {
		if errors.Is(err, store.ErrTooLarge) {
			return BadRequest(CodeSourceTooLarge, "%s: inline data over the limit of %d decoded bytes (%s)", name,
				s.resolver.MaxDataBytesOrDefault(), strings.TrimPrefix(err.Error(), "store: "))
		}
		return BadRequest(CodeInvalidURI, "%s: %s", name, strings.TrimPrefix(err.Error(), "store: "))
	}
	if u.Kind == store.KindJobInput {
		// Only the API writes these references, never a client.
		return BadRequest(CodeInvalidURI, "%s: want vfx://uploads/{id}/{filename}, https:// or data:", name)
	}
	if u.Kind == store.KindHTTP && !s.Cfg.AllowPrivateNetworks {
		if err := s.checkHost(ctx, u.URL.Hostname()); err != nil {
			if errors.Is(err, store.ErrForbiddenAddress) {
				return BadRequest(CodeInvalidURI, "%s: %v", name, err)
			}
			return BadRequest(CodeSourceUnreachable, "%s: %v", name, err)
		}
	}
	return nil
}

// checkHost resolves host and fails when any address is forbidden by the
// SSRF guard (errors wrap store.ErrForbiddenAddress) or none is found.
func (s *Server) checkHost(ctx context.Context, host string) error {
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return s.guard.CheckIP(ip.Unmap())
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := s.Cfg.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("host %q does not resolve", trunc.String(host, 80))
	}
	if len(addrs) == 0 {
		return fmt.Errorf("host %q has no address", trunc.String(host, 80))
	}
	for _, a := range addrs {
		if err := s.guard.CheckIP(a.Unmap()); err != nil {
			return fmt.Errorf("host %q: %w", trunc.String(host, 80), err)
		}
	}
	return nil
}

// CheckCallbackURL applies the callback_url rules: an absolute https://
// URL (http:// when allowed) of at most 2048 bytes, without user info,
// whose host resolves only to public addresses unless private networks
// are allowed.
func (s *Server) CheckCallbackURL(ctx context.Context, raw string) error {
	if raw == "" || len(raw) > MaxCallbackURLLen {
		return BadRequest(CodeInvalidCallbackURL, "callback_url must be 1 to %d characters", MaxCallbackURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return BadRequest(CodeInvalidCallbackURL, "callback_url is not an absolute URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && s.Cfg.AllowHTTPCallbacks:
	default:
		return BadRequest(CodeInvalidCallbackURL, "callback_url must use https://")
	}
	if u.User != nil {
		return BadRequest(CodeInvalidCallbackURL, "callback_url must not carry user info")
	}
	if !s.Cfg.AllowPrivateNetworks {
		if err := s.checkHost(ctx, u.Hostname()); err != nil {
			return BadRequest(CodeInvalidCallbackURL, "callback_url: %v", err)
		}
	}
	return nil
}

// CheckPromptChars refuses control characters in a prompt: C0 controls
// other than tab, line feed and carriage return, DEL and the C1 controls
// (U+0080 to U+009F). (Invalid UTF-8 is caught on the JSON text, before
// decoding replaces it.)
func CheckPromptChars(p string) error {
	for i, r := range p {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return fmt.Errorf("prompt has control character U+%04X at byte %d (tab, line feed and carriage return are allowed)", r, i)
		}
	}
	return nil
}
