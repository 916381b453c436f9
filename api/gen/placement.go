package gen

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"

	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/job"
)

// placementBody is the placement object of a generation request as given
// (an extension beyond SPEC.md): nil members were omitted (or null).
type placementBody struct {
	Scale, X, Y *float64
}

// placementMembers are the members of a placement object.
var placementMembers = []string{"scale", "x", "y"}

// decodePlacement parses the placement object: anything but an object,
// a member that is not a finite number, or a member other than scale, x
// and y is a 422 detail (FastAPI's words and types).
func decodePlacement(raw json.RawMessage) (*placementBody, []api.ValidationError) {
	loc := func(m ...any) []any { return append([]any{"body", "placement"}, m...) }
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil, []api.ValidationError{{Loc: loc(), Msg: "Input should be a valid dictionary", Type: "dict_type"}}
	}
	ms, err := api.DecodeObject(raw)
	if err != nil {
		return nil, []api.ValidationError{{Loc: loc(), Msg: "Input should be a valid dictionary", Type: "dict_type"}}
	}
	p := &placementBody{}
	dst := map[string]**float64{"scale": &p.Scale, "x": &p.X, "y": &p.Y}
	var details []api.ValidationError
	for k := range ms {
		if _, ok := dst[k]; !ok {
			details = append(details, api.ValidationError{Loc: loc(k), Msg: "Extra inputs are not permitted", Type: "extra_forbidden"})
		}
	}
	for _, k := range placementMembers {
		v, ok := ms[k]
		if !ok || string(bytes.TrimSpace(v)) == "null" {
			continue
		}
		var n json.Number
		if t := bytes.TrimSpace(v); len(t) == 0 || t[0] == '"' || json.Unmarshal(t, &n) != nil {
			details = append(details, api.ValidationError{Loc: loc(k), Msg: "Input should be a valid number", Type: "float_type"})
			continue
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || math.IsInf(f, 0) {
			details = append(details, api.ValidationError{Loc: loc(k), Msg: "Input should be a finite number", Type: "finite_number"})
			continue
		}
		*dst[k] = &f
	}
	if len(details) > 0 {
		return nil, details
	}
	return p, nil
}

// placement is the job contract's placement of p: scale 1 and offsets 0
// where omitted; nil when p is nil or the identity (the SPEC behaviour).
func (p *placementBody) placement() *job.Placement {
	if p == nil {
		return nil
	}
	pl := job.Placement{Scale: 1}
	for _, m := range []struct {
		src *float64
		dst *float64
	}{{p.Scale, &pl.Scale}, {p.X, &pl.X}, {p.Y, &pl.Y}} {
		if m.src != nil {
			*m.dst = *m.src
		}
	}
	if pl.Identity() {
		return nil
	}
	return &pl
}

// placementHash is the placement as the idempotency hash reads it: the
// normalised values as JSON (an omitted member is its default).
func placementHash(p *job.Placement) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return `{"scale":` + f(p.Scale) + `,"x":` + f(p.X) + `,"y":` + f(p.Y) + `}`
}
