package gen

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"os"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/job"
)

// orderFile holds the answer of the generation API's field rules to every
// body with one or two faults (validateFaults), recorded from the API
// before its rules became job.Validate plus a table (issue 34): a body with
// two faults must keep the answer it had (which fault wins, its code and
// its words). Rewrite it with -update-corpus only for a deliberate change.
const orderFile = "testdata/validate_order.golden"

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/validate_order.golden from the answers of this build")

func p[T any](v T) *T { return &v }

// validateFaults each break one rule of a valid body (or two, where one
// rule needs another field).
var validateFaults = []struct {
	name  string
	fault func(*genRequest)
}{
	{"generation_type gif", func(g *genRequest) { g.GenerationType = p("gif") }},
	{"generation_type empty", func(g *genRequest) { g.GenerationType = p("") }},
	{"generation_type omitted", func(g *genRequest) { g.GenerationType = nil }},
	{"generation_type image", func(g *genRequest) { g.GenerationType = p("image") }},
	{"alpha_mode x", func(g *genRequest) { g.AlphaMode = p(strings.Repeat("x", 50)) }},
	{"alpha_mode empty", func(g *genRequest) { g.AlphaMode = p("") }},
	{"alpha_mode omitted", func(g *genRequest) { g.AlphaMode = nil }},
	{"alpha_mode fill", func(g *genRequest) { g.AlphaMode = p("fill") }},
	{"alpha_mode custom", func(g *genRequest) { g.AlphaMode = p("custom") }},
	{"source omitted", func(g *genRequest) { g.SourceURI = nil }},
	{"source empty", func(g *genRequest) { g.SourceURI = p("") }},
	{"source ftp", func(g *genRequest) { g.SourceURI = p("ftp://example.com/a.png") }},
	{"alpha_uri omitted", func(g *genRequest) { g.AlphaURI = nil }},
	{"alpha_uri bad", func(g *genRequest) { g.AlphaURI = p("gopher://a") }},
	{"no style", func(g *genRequest) { g.Prompt = p(""); g.ReferenceImageURI = nil }},
	{"reference bad", func(g *genRequest) { g.ReferenceImageURI = p("nope") }},
	{"prompt not UTF-8", func(g *genRequest) { g.badUTF8 = "prompt" }},
	{"prompt control", func(g *genRequest) { g.Prompt = p("a\x01b") }},
	{"prompt too long", func(g *genRequest) { g.Prompt = p(strings.Repeat("é", job.MaxPromptChars+1)) }},
	{"max_resolution 0", func(g *genRequest) { g.MaxResolution = p(int64(0)) }},
	{"max_resolution 500", func(g *genRequest) { g.MaxResolution = p(int64(500)) }},
	{"max_resolution 1e100", func(g *genRequest) {
		g.MaxResolution = p(int64(1<<63 - 1))
		g.intText = map[string]string{"max_resolution": "1e100"}
	}},
	{"max_resolution 720", func(g *genRequest) { g.MaxResolution = p(int64(720)) }},
	{"seed -1", func(g *genRequest) { g.Seed = p(int64(-1)) }},
	{"seed 2^32", func(g *genRequest) { g.Seed = p(int64(1 << 32)) }},
	{"keyframe -1", func(g *genRequest) { g.AlphaKeyframeIndex = p(int64(-1)) }},
	{"keyframe 2^31", func(g *genRequest) { g.AlphaKeyframeIndex = p(int64(1 << 31)) }},
	{"keyframe 20", func(g *genRequest) { g.AlphaKeyframeIndex = p(int64(20)) }},
	{"output_format empty", func(g *genRequest) { g.OutputFormat = p("") }},
	{"output_format gif", func(g *genRequest) { g.OutputFormat = p("gif") }},
	{"output_format exr", func(g *genRequest) { g.OutputFormat = p("exr") }},
	{"frames empty", func(g *genRequest) { g.Frames = p("") }},
	{"frames x", func(g *genRequest) { g.Frames = p("x") }},
	{"frames 5-3", func(g *genRequest) { g.Frames = p("5-3") }},
	{"frames spaced", func(g *genRequest) { g.Frames = p(" 2 - 4 ") }},
	{"frames omitted", func(g *genRequest) { g.Frames = nil }},
	{"idempotency_key empty", func(g *genRequest) { g.IdempotencyKey = p("") }},
	{"idempotency_key long", func(g *genRequest) { g.IdempotencyKey = p(strings.Repeat("k", api.MaxIdempotencyKeyLen+1)) }},
	{"callback ftp", func(g *genRequest) { g.CallbackURL = p("ftp://example.com/") }},
	{"callback empty", func(g *genRequest) { g.CallbackURL = p("") }},
}

// TestValidateOrder runs the field rules on a valid select video body with
// every fault and every pair of faults, and compares each answer (and the
// normalised request of the accepted ones) with the recorded file.
func TestValidateOrder(t *testing.T) {
	s := newEnv(t, envOpts{NoRun: true}).gen
	base := func() genRequest {
		return genRequest{GenerationType: p("video"), SourceURI: p("vfx://uploads/upload_abcdefgh12/src.mp4"),
			AlphaMode: p("select"), AlphaURI: p("vfx://uploads/upload_abcdefgh12/alpha.png"), Prompt: p("warm key light"),
			AlphaKeyframeIndex: p(int64(3)), Frames: p("0-9"), IdempotencyKey: p("k1"),
			CallbackURL: p("https://example.com/hook")}
	}
	var out bytes.Buffer
	run := func(name string, g genRequest) {
		jr, err := s.validate(context.Background(), g)
		if err != nil {
			fmt.Fprintf(&out, "%s: %v\n", name, err)
			return
		}
		b, _ := json.Marshal(jr)
		fmt.Fprintf(&out, "%s: ok %s\n", name, b)
	}
	run("valid", base())
	for i, a := range validateFaults {
		g := base()
		a.fault(&g)
		run(a.name, g)
		for _, b := range validateFaults[i+1:] {
			g := base()
			a.fault(&g)
			b.fault(&g)
			run(a.name+" + "+b.name, g)
		}
	}
	if *updateCorpus {
		if err := os.WriteFile(orderFile, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(orderFile)
	if err != nil {
		t.Fatalf("%v (record it with -update-corpus)", err)
	}
	got := strings.Split(out.String(), "\n")
	for i, w := range strings.Split(string(want), "\n") {
		if i >= len(got) || got[i] != w {
			g := "<none>"
			if i < len(got) {
				g = got[i]
			}
			t.Errorf("line %d:\n got %s\nwant %s", i+1, g, w)
		}
	}
	if n, m := len(got), len(strings.Split(string(want), "\n")); n != m {
		t.Errorf("%d lines, want %d", n, m)
	}
}
