package job

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestDecodeJobRequest(t *testing.T) {
	raw := `{"generation_type":"video","source_uri":"vfx://uploads/upload_abcdefgh/a.mp4","alpha_mode":"custom",
		"alpha_uri":"vfx://uploads/upload_abcdefgh/m.mp4","alpha_keyframe_index":3,"reference_image_uri":"https://x.test/r.png",
		"prompt":"dusk","seed":4294967295,"max_resolution":720,"callback_url":"https://ignored.test"}`
	got, err := DecodeJobRequest([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := JobRequest{GenerationType: "video", SourceURI: "vfx://uploads/upload_abcdefgh/a.mp4", AlphaMode: "custom",
		AlphaURI: "vfx://uploads/upload_abcdefgh/m.mp4", AlphaKeyframeIndex: 3, ReferenceImageURI: "https://x.test/r.png",
		Prompt: "dusk", Seed: 4294967295, MaxResolution: 720}
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	back, _ := json.Marshal(got)
	for _, name := range []string{"generation_type", "source_uri", "alpha_mode", "alpha_uri", "alpha_keyframe_index", "reference_image_uri", "prompt", "seed", "max_resolution"} {
		if !strings.Contains(string(back), `"`+name+`":`) {
			t.Errorf("encoded request lacks %q: %s", name, back)
		}
	}
	for _, bad := range []string{``, `null`, `{`, `{"seed":-1}`, `{"seed":4294967296}`, `{"generation_type":5}`} {
		_, err := DecodeJobRequest([]byte(bad))
		if CodeOf(err) != CodeInvalidInput {
			t.Errorf("%q: %v, want INVALID_INPUT", bad, err)
		}
	}
}

func TestDecodeProductRequest(t *testing.T) {
	ok := []string{
		`{"product":"vfx","model_id":"vfx-2.0","generation":{"generation_type":"image"}}`,
		`{"product":"vfx_finish","model_id":"vfx-2.0","finish":{"parent_job_id":"dap_x","target_resolution":2160}}`,
	}
	for _, raw := range ok {
		if _, err := DecodeProductRequest([]byte(raw)); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
	bad := []string{``, `{`, `{"product":"vfx"}`, `{"product":"vfx_finish","finish":{"target_resolution":720}}`, `{"product":"x","generation":{}}`}
	for _, raw := range bad {
		if _, err := DecodeProductRequest([]byte(raw)); CodeOf(err) != CodeInvalidInput {
			t.Errorf("%q: %v, want INVALID_INPUT", raw, err)
		}
	}
}

func TestValidate(t *testing.T) {
	base := func() JobRequest {
		return JobRequest{GenerationType: "video", SourceURI: "vfx://uploads/u/a.mp4", AlphaMode: "custom", AlphaURI: "vfx://uploads/u/m.mp4", Prompt: "dusk"}
	}
	v, err := Validate(base())
	if err != nil {
		t.Fatalf("valid request: %v", err)
	}
	if v.Request() != base() {
		t.Fatalf("Valid.Request() = %+v, want the request validated", v.Request())
	}
	cases := []struct {
		name string
		mod  func(*JobRequest)
		code Code
		msg  string
	}{
		{"generation type", func(r *JobRequest) { r.GenerationType = "gif" }, CodeInvalidGenerationType, "gif"},
		{"source", func(r *JobRequest) { r.SourceURI = "" }, CodeMissingSource, "source"},
		{"alpha mode", func(r *JobRequest) { r.AlphaMode = "magic" }, CodeInvalidAlphaMode, `alpha_mode: matte: invalid alpha mode "magic"`},
		{"alpha", func(r *JobRequest) { r.AlphaURI = "" }, CodeMissingAlpha, "alpha_mode custom needs an alpha matte"},
		{"style", func(r *JobRequest) { r.Prompt = "" }, CodeMissingStyleInput, "prompt"},
		{"prompt", func(r *JobRequest) { r.Prompt = strings.Repeat("é", MaxPromptChars+1) }, CodePromptTooLong, "2001 characters"},
		{"resolution", func(r *JobRequest) { r.MaxResolution = 480 }, CodeInvalidMaxResolution, "480"},
		{"keyframe", func(r *JobRequest) { r.AlphaKeyframeIndex = -1 }, CodeInvalidKeyframeIndex, "-1"},
	}
	for _, c := range cases {
		r := base()
		c.mod(&r)
		v, err := Validate(r)
		var ie *InputError
		if !errors.As(err, &ie) || ie.Code != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %s mentioning %q", c.name, err, c.code, c.msg)
		}
		if v != (Valid{}) {
			t.Errorf("%s: a refused request gave a Valid %+v", c.name, v.Request())
		}
	}
	// A prompt of 2000 multi-byte characters is within the limit; fill
	// needs no matte; a reference alone is a style input.
	r := base()
	r.Prompt = strings.Repeat("é", MaxPromptChars)
	r.AlphaMode, r.AlphaURI = "fill", ""
	if _, err := Validate(r); err != nil {
		t.Errorf("edge request: %v", err)
	}
	r.Prompt, r.ReferenceImageURI = "", "https://x.test/r.png"
	if _, err := Validate(r); err != nil {
		t.Errorf("reference only: %v", err)
	}
}

func TestAlphaModes(t *testing.T) {
	for _, s := range []string{"auto", "fill", "custom", "select"} {
		m, err := ParseAlphaMode(s)
		if err != nil || string(m) != s || m.Supported() != nil {
			t.Errorf("ParseAlphaMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := ParseAlphaMode("Fill"); !errors.Is(err, ErrInvalidAlphaMode) {
		t.Errorf("Fill: %v", err)
	}
	if !AlphaCustom.NeedsMatte() || !AlphaSelect.NeedsMatte() || AlphaFill.NeedsMatte() || AlphaAuto.NeedsMatte() {
		t.Error("NeedsMatte wrong")
	}
}

func TestMatteRules(t *testing.T) {
	vid := Geometry{Video: true, Width: 1920, Height: 1080, Frames: 48}
	img := Geometry{Width: 1920, Height: 1080, Frames: 1}
	cases := []struct {
		err  error
		want error
		code Code
	}{
		{CheckCustom(vid, vid), nil, ""},
		{CheckCustom(vid, img), ErrKindMismatch, CodeAlphaTypeMismatch},
		{CheckCustom(vid, Geometry{Video: true, Width: 1280, Height: 720, Frames: 48}), ErrSizeMismatch, CodeAlphaTypeMismatch},
		{CheckCustom(vid, Geometry{Video: true, Width: 1920, Height: 1080, Frames: 47}), ErrFrameCountMismatch, CodeAlphaTypeMismatch},
		{CheckKeyframe(vid, Geometry{Width: 960, Height: 540, Frames: 1}, 47), nil, ""},
		{CheckKeyframe(vid, img, 48), ErrKeyframeIndex, CodeInvalidKeyframeIndex},
		{CheckKeyframe(vid, vid, 0), ErrMustBeImage, CodeAlphaMustBeImage},
		{CheckKeyframe(vid, Geometry{Width: 100, Height: 100, Frames: 1}, 0), ErrSizeMismatch, CodeAlphaTypeMismatch},
		{CheckKeyframe(img, img, 5), nil, ""},
		{CheckKeyframeFormat("png"), nil, ""},
		{CheckKeyframeFormat("webp"), ErrKeyframeFormat, CodeAlphaTypeMismatch},
		{KeyframeEmpty(true), ErrKeyframeEmpty, CodeAlphaTypeMismatch},
	}
	for i, c := range cases {
		if !errors.Is(c.err, c.want) || (c.want == nil) != (c.err == nil) {
			t.Errorf("case %d: %v, want %v", i, c.err, c.want)
		}
		if got := CodeOf(AsInputError("alpha", c.err)); got != c.code {
			t.Errorf("case %d: code %q, want %q", i, got, c.code)
		}
	}
	// Other errors stay as they are; an InputError keeps its code.
	other := errors.New("disk full")
	if AsInputError("x", other) != other {
		t.Error("AsInputError changed an unrelated error")
	}
	ie := Errorf(CodeSourceTooLarge, "big")
	if AsInputError("x", ie) != ie || ie.Error() != "SOURCE_TOO_LARGE: big" {
		t.Errorf("InputError: %v", ie)
	}
}

// The matte rules' messages name the numbers involved and the rule
// (these cases moved here from package matte's tests with the rules).
func TestMatteRuleMessages(t *testing.T) {
	vid := Geometry{Video: true, Width: 1920, Height: 1080, Frames: 48}
	img := Geometry{Width: 1920, Height: 1080, Frames: 1}
	for _, c := range []struct {
		err      error
		want     error
		contains string
	}{
		{CheckCustom(vid, img), ErrKindMismatch, "the source is a video but the custom matte is an image"},
		{CheckCustom(img, vid), ErrKindMismatch, "the source is an image but the custom matte is a video"},
		{CheckCustom(vid, Geometry{Video: true, Width: 1280, Height: 720, Frames: 48}), ErrSizeMismatch, "1920x1080, matte is 1280x720"},
		{CheckCustom(vid, Geometry{Video: true, Width: 1920, Height: 1080, Frames: 47}), ErrFrameCountMismatch, "48 frames, matte has 47"},
		{CheckKeyframe(Geometry{Video: true, Width: 64, Height: 48, Frames: 10}, Geometry{Width: 64, Height: 48, Frames: 1}, 10), ErrKeyframeIndex, "valid 0..9"},
		{CheckKeyframeFormat("mp4"), ErrKeyframeFormat, "must be a PNG or JPEG image: got mp4"},
		{KeyframeEmpty(false), ErrKeyframeEmpty, "selects nothing: it is black everywhere"},
		{KeyframeEmpty(true), ErrKeyframeEmpty, "alpha channel is fully transparent"},
	} {
		if !errors.Is(c.err, c.want) || c.err == nil || !strings.Contains(c.err.Error(), c.contains) {
			t.Errorf("err = %v, want %v containing %q", c.err, c.want, c.contains)
		}
	}
	for m, want := range map[AlphaMode]error{AlphaFill: nil, AlphaCustom: nil, AlphaAuto: nil, AlphaSelect: nil, "x": ErrInvalidAlphaMode} {
		if err := m.Supported(); want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("%q.Supported() = %v, want %v", m, err, want)
		}
	}
	for _, s := range []string{"", "none", "alpha"} {
		if _, err := ParseAlphaMode(s); !errors.Is(err, ErrInvalidAlphaMode) {
			t.Errorf("ParseAlphaMode(%q) err = %v, want ErrInvalidAlphaMode", s, err)
		}
	}
}

// A keyframe matte may have the source's size or its aspect ratio (within
// a pixel of rounding), and must be a PNG or JPEG (of any pixel format).
func TestKeyframeSizeAndFormat(t *testing.T) {
	vid := Geometry{Video: true, Width: 1920, Height: 1080, Frames: 10}
	for _, c := range []struct {
		w, h int
		ok   bool
	}{{1920, 1080, true}, {960, 540, true}, {854, 480, true}, {3840, 2160, true}, {1080, 1920, false}, {1000, 1000, false}, {640, 480, false}} {
		err := CheckKeyframe(vid, Geometry{Width: c.w, Height: c.h, Frames: 1}, 0)
		if c.ok != (err == nil) || err != nil && !errors.Is(err, ErrSizeMismatch) {
			t.Errorf("%dx%d: err = %v, want ok=%v", c.w, c.h, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "aspect ratio") {
			t.Errorf("message %q does not explain the rule", err)
		}
	}
	for _, c := range []struct {
		container string
		ok        bool
	}{{"png", true}, {"jpeg", true}, {"webp", false}, {"mp4", false}} {
		err := CheckKeyframeFormat(c.container)
		if c.ok != (err == nil) || err != nil && !errors.Is(err, ErrKeyframeFormat) {
			t.Errorf("%s: err = %v, want ok=%v", c.container, err, c.ok)
		}
	}
}

// TestFailure: a failure's code and message as a record stores them, and
// the text the job APIs show, for a direct, a wrapped and an internal
// failure.
func TestFailure(t *testing.T) {
	ie := Errorf(CodeSourceTooLarge, "source: %d pixels", 25)
	for _, c := range []struct {
		err        error
		code       Code
		msg, shown string
	}{
		{ie, CodeSourceTooLarge, "source: 25 pixels", "SOURCE_TOO_LARGE: source: 25 pixels"},
		{fmt.Errorf("worker: upscale: %w", ie), CodeSourceTooLarge, "worker: upscale: source: 25 pixels", "SOURCE_TOO_LARGE: worker: upscale: source: 25 pixels"},
		{errors.New("worker: store: timeout"), "", "worker: store: timeout", "worker: store: timeout"},
		{nil, "", "", ""},
	} {
		code, msg := Failure(c.err)
		if code != c.code || msg != c.msg || FailureText(code, msg) != c.shown {
			t.Errorf("%v: %q %q shown %q, want %q %q shown %q", c.err, code, msg, FailureText(code, msg), c.code, c.msg, c.shown)
		}
	}
}
