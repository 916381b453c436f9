package gen

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/job"
)

// TestPlacement: the placement extension over real HTTP: every limit at
// its edge (just inside 201, just outside 400 INVALID_PLACEMENT naming the
// member), fill refused, wrong types and unknown members 422; defaults
// (scale 1, x and y 0) fill omitted members, the identity is no placement
// (the record has none, its hash is the body without it); the normalised
// placement reaches the job record; the OpenAPI document describes it.
func TestPlacement(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	key := e.OrgKey()
	src := e.Upload(key, "src.png", apitest.PNGBytes(t, 64, 48, false))
	body := apitest.With(apitest.ValidGeneration(src), "alpha_mode", "auto")
	up := func(f float64) float64 { return math.Nextafter(f, math.Inf(1)) }
	down := func(f float64) float64 { return math.Nextafter(f, math.Inf(-1)) }
	num := func(f float64) json.RawMessage { return json.RawMessage(strconv.FormatFloat(f, 'g', -1, 64)) }

	for _, tc := range []struct {
		name  string
		p     map[string]any
		want  string // "" accepted
		place *job.Placement
	}{
		{"scale at the minimum", map[string]any{"scale": num(0.25)}, "", &job.Placement{Scale: 0.25}},
		{"scale below the minimum", map[string]any{"scale": num(down(0.25))}, "placement.scale 0.24999999999999997", nil},
		{"scale at the maximum", map[string]any{"scale": 4}, "", &job.Placement{Scale: 4}},
		{"scale above the maximum", map[string]any{"scale": num(up(4))}, "placement.scale 4.000000000000001", nil},
		{"scale 0", map[string]any{"scale": 0}, "placement.scale 0", nil},
		{"x at the edges", map[string]any{"x": 1, "y": -1}, "", &job.Placement{Scale: 1, X: 1, Y: -1}},
		{"x past 1", map[string]any{"x": num(up(1))}, "placement.x 1.0000000000000002", nil},
		{"x past -1", map[string]any{"x": num(down(-1))}, "placement.x -1.0000000000000002", nil},
		{"y past 1", map[string]any{"y": num(up(1))}, "placement.y 1.0000000000000002", nil},
		{"y past -1", map[string]any{"scale": 2, "y": num(down(-1))}, "placement.y -1.0000000000000002", nil},
		{"all three", map[string]any{"scale": 1.5, "x": -0.25, "y": 0.125}, "", &job.Placement{Scale: 1.5, X: -0.25, Y: 0.125}},
		{"identity", map[string]any{"scale": 1, "x": 0, "y": 0}, "", nil},
		{"empty object", map[string]any{}, "", nil},
		{"null members", map[string]any{"scale": nil, "x": 0.5}, "", &job.Placement{Scale: 1, X: 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := map[string]any{}
			for k, v := range tc.p {
				if v != nil {
					p[k] = v
				} else {
					p[k] = json.RawMessage("null")
				}
			}
			r := e.Do("POST", "/v1/vfx/generations", key, apitest.With(body, "placement", p))
			if tc.want != "" {
				var env api.Envelope
				_ = json.Unmarshal(r.Body, &env)
				if r.Status != 400 || r.Code() != api.CodeInvalidPlacement || !strings.Contains(env.Error.Message, tc.want+":") {
					t.Fatalf("want 400 INVALID_PLACEMENT naming %q, got %d %s", tc.want, r.Status, trunc.String(string(r.Body), 300))
				}
				return
			}
			if r.Status != 201 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			var j api.Job
			_ = json.Unmarshal(r.Body, &j)
			rec, _, err := e.Q.Get(context.Background(), j.ID)
			if err != nil {
				t.Fatal(err)
			}
			jr, err := job.DecodeJobRequest(rec.Request)
			switch {
			case err != nil:
				t.Fatal(err)
			case (jr.Placement == nil) != (tc.place == nil) || tc.place != nil && *jr.Placement != *tc.place:
				t.Errorf("the record's placement is %+v, want %+v (%s)", jr.Placement, tc.place, rec.Request)
			case tc.place == nil && strings.Contains(string(rec.Request), "placement"):
				t.Errorf("the record of an identity placement names one: %s", rec.Request)
			}
		})
	}
	// Fill has no plate.
	r := e.Do("POST", "/v1/vfx/generations", key, apitest.With(apitest.ValidGeneration(src), "placement", map[string]any{"scale": 2}))
	if r.Status != 400 || r.Code() != api.CodeInvalidPlacement || !strings.Contains(string(r.Body), "fill") {
		t.Errorf("fill with a placement: %d %s", r.Status, r.Body)
	}
	// Types: 422 with the member's location.
	for _, tc := range []struct {
		p    any
		loc  string
		kind string
	}{
		{2, `["body","placement"]`, "dict_type"},
		{[]any{2}, `["body","placement"]`, "dict_type"},
		{map[string]any{"scale": "2"}, `["body","placement","scale"]`, "float_type"},
		{map[string]any{"x": true}, `["body","placement","x"]`, "float_type"},
		{map[string]any{"y": json.RawMessage("1e400")}, `["body","placement","y"]`, "finite_number"},
		{map[string]any{"rotate": 5}, `["body","placement","rotate"]`, "extra_forbidden"},
	} {
		r := e.Do("POST", "/v1/vfx/generations", key, apitest.With(body, "placement", tc.p))
		if r.Status != 422 || !strings.Contains(string(r.Body), tc.loc) || !strings.Contains(string(r.Body), tc.kind) {
			t.Errorf("placement %v: %d %s, want 422 %s at %s", tc.p, r.Status, r.Body, tc.kind, tc.loc)
		}
	}
	// The idempotency hash: another placement is another body (409); the
	// identity is the body without one (200, the same job).
	idem := apitest.With(body, "idempotency_key", "place-1")
	if r := e.Do("POST", "/v1/vfx/generations", key, idem); r.Status != 201 {
		t.Fatalf("keyed: %d %s", r.Status, r.Body)
	}
	if r := e.Do("POST", "/v1/vfx/generations", key, apitest.With(idem, "placement", map[string]any{"scale": 2})); r.Status != 409 {
		t.Errorf("same key, scale 2: %d %s, want 409", r.Status, r.Body)
	}
	if r := e.Do("POST", "/v1/vfx/generations", key, apitest.With(idem, "placement", map[string]any{"scale": 1, "x": 0})); r.Status != 200 {
		t.Errorf("same key, the identity placement: %d %s, want 200", r.Status, r.Body)
	}
	doc := e.Do("GET", "/v1/openapi.json", "", nil)
	for _, s := range []string{`"placement"`, `"INVALID_PLACEMENT"`, "vfx render --placement"} {
		if !strings.Contains(string(doc.Body), s) {
			t.Errorf("the OpenAPI document lacks %s", s)
		}
	}
}
