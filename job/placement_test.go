package job

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestValidatePlacement: every limit of a placement at its edge (just
// inside accepted, just outside refused with INVALID_PLACEMENT naming the
// field), fill refused, no placement and the identity accepted, and the
// JSON field round-trips (absent when nil).
func TestValidatePlacement(t *testing.T) {
	base := JobRequest{GenerationType: "image", SourceURI: "vfx://uploads/u/a.png", AlphaMode: "auto", Prompt: "dusk"}
	up := func(f float64) float64 { return math.Nextafter(f, math.Inf(1)) }
	down := func(f float64) float64 { return math.Nextafter(f, math.Inf(-1)) }
	for _, c := range []struct {
		p     Placement
		field string // "" accepted
	}{
		{Placement{1, 0, 0}, ""},
		{Placement{MinPlacementScale, 0, 0}, ""},
		{Placement{down(MinPlacementScale), 0, 0}, "placement.scale"},
		{Placement{MaxPlacementScale, 0, 0}, ""},
		{Placement{up(MaxPlacementScale), 0, 0}, "placement.scale"},
		{Placement{0, 0, 0}, "placement.scale"},
		{Placement{math.NaN(), 0, 0}, "placement.scale"},
		{Placement{1, MaxPlacementOffset, -MaxPlacementOffset}, ""},
		{Placement{1, up(MaxPlacementOffset), 0}, "placement.x"},
		{Placement{1, down(-MaxPlacementOffset), 0}, "placement.x"},
		{Placement{1, 0, up(MaxPlacementOffset)}, "placement.y"},
		{Placement{1, 0, down(-MaxPlacementOffset)}, "placement.y"},
		{Placement{1, math.Inf(1), 0}, "placement.x"},
	} {
		r := base
		p := c.p
		r.Placement = &p
		_, err := Validate(r)
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%+v: %v, want accepted", c.p, err)
		case c.field != "" && (CodeOf(err) != CodeInvalidPlacement || !strings.Contains(err.Error(), c.field+" ")):
			t.Errorf("%+v: %v, want %s naming %s", c.p, err, CodeInvalidPlacement, c.field)
		}
	}
	r := base
	r.AlphaMode = "fill"
	r.Placement = &Placement{2, 0, 0}
	if _, err := Validate(r); CodeOf(err) != CodeInvalidPlacement || !strings.Contains(err.Error(), "fill") {
		t.Errorf("fill with a placement: %v", err)
	}
	if _, err := Validate(base); err != nil {
		t.Errorf("no placement: %v", err)
	}
	b, _ := json.Marshal(base)
	if strings.Contains(string(b), "placement") {
		t.Errorf("no placement marshals as %s", b)
	}
	r = base
	r.Placement = &Placement{1.5, -0.25, 0.125}
	b, _ = json.Marshal(r)
	back, err := DecodeJobRequest(b)
	if err != nil || back.Placement == nil || *back.Placement != *r.Placement {
		t.Errorf("round trip of %s: %+v, %v", b, back.Placement, err)
	}
	if s := r.Placement.String(); s != "1.5,-0.25,0.125" {
		t.Errorf("String = %q", s)
	}
}
