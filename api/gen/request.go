package gen

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/job"
)

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
	// Placement (an extension) scales and moves the subject over the
	// plate.
	Placement *placementBody `json:"-"`
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
	kindPlacement
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
	{"output_format", kindString}, {"frames", kindString}, {"placement", kindPlacement},
}

// decodeGenRequest parses the body of POST /v1/vfx/generations; wrong
// JSON types give 422 with one detail element per field.
func decodeGenRequest(body []byte) (genRequest, error) {
	fields, err := api.DecodeObject(body)
	if err != nil {
		return genRequest{}, err
	}
	var req genRequest
	var details []api.ValidationError
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
			v, err := api.JSONStringOf(raw)
			if err != nil {
				details = append(details, api.ValidationError{Loc: []any{"body", f.name}, Msg: "Input should be a valid string", Type: "string_type"})
				continue
			}
			*strs[f.name] = &v
		case kindInt:
			v, err := api.ParseJSONInt(raw)
			if err != nil {
				details = append(details, api.ValidationError{Loc: []any{"body", f.name}, Msg: "Input should be a valid integer", Type: "int_type"})
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
				details = append(details, api.ValidationError{Loc: []any{"body", f.name}, Msg: "Input should be a valid boolean", Type: "bool_type"})
				continue
			}
			req.Foreground = &v
		case kindPlacement:
			p, d := decodePlacement(raw)
			details = append(details, d...)
			req.Placement = p
		}
	}
	if len(details) > 0 {
		return genRequest{}, &api.DetailError{Detail: details}
	}
	return req, nil
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
			api.WriteString(h, *f.s)
		case f.i != nil:
			field(f.name)
			api.WriteInt(h, *f.i)
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
		api.WriteString(h, *g.OutputFormat)
	}
	if g.Frames != nil {
		field("frames")
		api.WriteString(h, *g.Frames)
	}
	if p := g.Placement.placement(); p != nil { // the identity is hashed as omitted
		field("placement")
		h.Write([]byte(placementHash(p)))
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
func (s *API) validate(ctx context.Context, g genRequest) (job.JobRequest, error) {
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
		MaxResolution: job.DefaultMaxResolution, OutputFormat: str(g.OutputFormat), Frames: str(g.Frames),
		Placement: g.Placement.placement()}
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
	stepPlacement
	stepIdempotencyKey
	stepNone
)

// specWords words each code of job.Validate with the SPEC's field names
// (source_uri, alpha_uri, reference_image_uri) and the body's values as
// the client sent them; nil keeps job.Validate's message, which is the
// SPEC's already.
var specWords = map[job.Code]struct {
	step  step
	words func(g genRequest, jr job.JobRequest) *api.Error
}{
	job.CodeInvalidGenerationType: {stepGenerationType, func(g genRequest, jr job.JobRequest) *api.Error {
		if jr.GenerationType == "" {
			return api.BadRequest(api.CodeInvalidGenerationType, "generation_type is required: image or video")
		}
		return api.BadRequest(api.CodeInvalidGenerationType, "generation_type %q: want image or video", trunc.String(jr.GenerationType, 40))
	}},
	job.CodeInvalidAlphaMode: {stepAlphaMode, func(g genRequest, jr job.JobRequest) *api.Error {
		if jr.AlphaMode == "" {
			return api.BadRequest(api.CodeInvalidAlphaMode, "alpha_mode is required: auto, fill, custom or select")
		}
		return api.BadRequest(api.CodeInvalidAlphaMode, "alpha_mode %q: want auto, fill, custom or select", trunc.String(jr.AlphaMode, 40))
	}},
	job.CodeMissingSource: {stepSource, func(genRequest, job.JobRequest) *api.Error {
		return api.BadRequest(api.CodeMissingSource, "source_uri is required")
	}},
	job.CodeMissingAlpha: {stepAlpha, func(g genRequest, jr job.JobRequest) *api.Error {
		return api.BadRequest(api.CodeMissingAlpha, "alpha_mode %s needs alpha_uri", jr.AlphaMode)
	}},
	job.CodeMissingStyleInput: {stepStyle, func(genRequest, job.JobRequest) *api.Error {
		return api.BadRequest(api.CodeMissingStyleInput, "at least one of prompt or reference_image_uri is required")
	}},
	job.CodePromptTooLong: {stepPromptLength, nil},
	job.CodeInvalidMaxResolution: {stepMaxResolution, func(g genRequest, jr job.JobRequest) *api.Error {
		return api.BadRequest(api.CodeInvalidMaxResolution, "max_resolution %s: want 720 or 1080", g.quoteInt("max_resolution", int64(jr.MaxResolution)))
	}},
	// A negative keyframe (stepKeyframe) or one outside the frame range
	// (stepFrames, job.Validate's words): see problemStep.
	job.CodeInvalidKeyframeIndex: {stepKeyframe, func(g genRequest, jr job.JobRequest) *api.Error {
		if jr.AlphaKeyframeIndex >= 0 {
			return nil
		}
		return keyframeRange(g, int64(jr.AlphaKeyframeIndex))
	}},
	job.CodeInvalidOutputFormat: {stepOutputFormat, nil},
	job.CodeInvalidFrameRange: {stepFrames, func(g genRequest, jr job.JobRequest) *api.Error {
		first, last, err := job.ParseFrames(jr.Frames)
		if err != nil {
			return nil // its own words
		}
		return api.BadRequest(api.CodeInvalidFrameRange, "frames %d-%d: a frame range needs generation_type video", first, last)
	}},
	job.CodeInvalidPlacement: {stepPlacement, nil},
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
			return api.BadRequest(api.CodeInvalidPrompt, "prompt is not valid UTF-8")
		}
		if err := api.CheckPromptChars(str(g.Prompt)); err != nil {
			return api.BadRequest(api.CodeInvalidPrompt, "%v", err)
		}
		return nil
	}},
	{stepMaxResolution, func(g genRequest) error {
		if g.MaxResolution != nil && *g.MaxResolution == 0 {
			return api.BadRequest(api.CodeInvalidMaxResolution, "max_resolution %s: want 720 or 1080", g.quoteInt("max_resolution", 0))
		}
		return nil
	}},
	{stepSeed, func(g genRequest) error {
		if g.Seed != nil && (*g.Seed < 0 || *g.Seed > api.MaxSeed) {
			return api.BadRequest(api.CodeInvalidSeed, "seed %s: want an integer from 0 to %d", g.quoteInt("seed", *g.Seed), uint64(api.MaxSeed))
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
			return api.BadRequest(api.CodeInvalidOutputFormat, "output_format \"\": want mp4 or exr")
		}
		return nil
	}},
	{stepFrames, func(g genRequest) error {
		if g.Frames != nil && *g.Frames == "" {
			_, _, err := job.ParseFrames("")
			return api.MediaError("frames", err)
		}
		return nil
	}},
	{stepIdempotencyKey, func(g genRequest) error {
		if g.IdempotencyKey != nil {
			if n := utf8.RuneCountInString(*g.IdempotencyKey); n < 1 || n > api.MaxIdempotencyKeyLen {
				return api.BadRequest(api.CodeInvalidIdempotencyKey, "idempotency_key has %d characters: want 1 to %d", n, api.MaxIdempotencyKeyLen)
			}
		}
		return nil
	}},
}

// keyframeRange is the answer to an alpha_keyframe_index outside 0..2^31-1.
func keyframeRange(g genRequest, v int64) *api.Error {
	return api.BadRequest(api.CodeInvalidKeyframeIndex, "alpha_keyframe_index %s: want an integer from 0 to %d", g.quoteInt("alpha_keyframe_index", v), math.MaxInt32)
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
	return api.MediaError("request", verr)
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
