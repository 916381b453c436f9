// Planning of product jobs: the inputs of each product checked, stored
// and priced before the job is created.

package product

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/queue"
)

// plan is a validated product job before it is created.
type plan struct {
	req     job.ProductRequest
	meta    productMeta
	credits int64
	exact   bool // credits is the price (false: an upper bound)
	video   bool
	frames  int
	items   []estimateItem
	uploads []string // records of the uploads it names (markUsed)
}

type estimateItem struct {
	Item    string `json:"item"`
	Units   int64  `json:"units"`
	Rate    int64  `json:"rate"`
	Credits int64  `json:"credits"`
	Note    string `json:"note,omitempty"`
}

// prepare validates inputs (schema, then the product's own rules) and
// prices the job. Inline data: inputs are stored as input objects of
// jobID (see storeInline); cleanup deletes them and must run when the job
// is not created.
func (s *API) prepare(ctx context.Context, oc api.OrgCtx, p *productDef, m *modelDef, inputs json.RawMessage, jobID string) (pl plan, cleanup func(), err error) {
	cleanup = func() {}
	if err := m.schemaProblems(inputs); err != nil {
		return plan{}, cleanup, err
	}
	switch p.Product {
	case job.ProductVFX:
		return s.prepareVFX(ctx, inputs, api.TeamOwner(oc.Org.ID, oc.TeamID), jobID)
	case job.ProductFinish:
		pl, err := s.prepareFinish(ctx, oc, inputs)
		return pl, cleanup, err
	}
	return plan{}, cleanup, fmt.Errorf("api: product %s has no planner", p.Product)
}

type vfxInputs struct {
	Source             string  `json:"source"`
	AlphaMode          string  `json:"alpha_mode"`
	Alpha              string  `json:"alpha"`
	AlphaKeyframeIndex int     `json:"alpha_keyframe_index"`
	Prompt             string  `json:"prompt"`
	ReferenceImage     string  `json:"reference_image"`
	MaxResolution      int     `json:"max_resolution"`
	Seed               *uint32 `json:"seed"`
	ProductMode        string  `json:"mode"` // standard or fast, not the alpha mode
	Outputs            struct {
		Foreground bool `json:"foreground"`
	} `json:"outputs"`
}

func (s *API) prepareVFX(ctx context.Context, inputs json.RawMessage, owner, jobID string) (plan, func(), error) {
	cleanup := func() {}
	pl, err := s.planVFX(ctx, inputs, owner, jobID, &cleanup)
	if err != nil {
		cleanup()
		return plan{}, func() {}, err
	}
	return pl, cleanup, nil
}

func (s *API) planVFX(ctx context.Context, inputs json.RawMessage, owner, jobID string, cleanup *func()) (plan, error) {
	if ms, err := api.ParseObject(inputs); err == nil {
		for _, m := range ms {
			if m.Key == "prompt" && !utf8.Valid(m.Raw) {
				return plan{}, api.InvalidInput("inputs.prompt is not valid UTF-8")
			}
		}
	}
	var in vfxInputs
	if err := json.Unmarshal(inputs, &in); err != nil {
		return plan{}, api.InvalidInput("inputs: %v", err)
	}
	if in.ProductMode == "" {
		in.ProductMode = job.ModeStandard
	}
	if in.MaxResolution == 0 {
		in.MaxResolution = job.DefaultMaxResolution
	}
	if err := api.CheckPromptChars(in.Prompt); err != nil {
		return plan{}, api.InvalidInput("inputs.%v", err)
	}
	alphaMode, err := job.ParseAlphaMode(in.AlphaMode)
	if err == nil {
		err = alphaMode.Supported()
	}
	if err != nil {
		return plan{}, api.InvalidInput("inputs.alpha_mode %s: %v", in.AlphaMode, err)
	}
	jr := job.JobRequest{SourceURI: in.Source, AlphaMode: in.AlphaMode, Prompt: in.Prompt,
		ReferenceImageURI: in.ReferenceImage, MaxResolution: in.MaxResolution, Foreground: in.Outputs.Foreground}
	if alphaMode.NeedsMatte() {
		jr.AlphaURI = in.Alpha
	}
	if in.Seed != nil {
		jr.Seed = *in.Seed
	} else {
		jr.Seed = api.RandomSeed()
	}
	// The contract's field rules, as the worker checks them. The schema
	// has caught all of them but one: an empty prompt with no reference.
	// The generation type follows the source below and Validate only asks
	// that it be one of the two. Like the schema's, its answer is 422
	// INVALID_INPUT (the product API's code for a rule of the inputs).
	vr := jr
	vr.GenerationType, vr.AlphaKeyframeIndex = "video", in.AlphaKeyframeIndex
	if _, err := s.ValidateJob(vr); err != nil {
		var ie *job.InputError
		if errors.As(err, &ie) {
			err = ie.Err
		}
		return plan{}, api.InvalidInput("inputs: %v", err)
	}
	for _, u := range []struct{ name, uri string }{
		{"inputs.source", jr.SourceURI}, {"inputs.alpha", jr.AlphaURI}, {"inputs.reference_image", jr.ReferenceImageURI},
	} {
		if u.uri == "" {
			continue
		}
		if err := s.CheckInputURI(ctx, u.name, u.uri); err != nil {
			return plan{}, err
		}
	}
	uploads, err := s.CheckOwnedUploads(ctx, owner, []api.NamedURI{
		{What: "source", URI: jr.SourceURI}, {What: "alpha", URI: jr.AlphaURI}, {What: "reference_image", URI: jr.ReferenceImageURI}})
	if err != nil {
		return plan{}, err
	}
	if *cleanup, err = s.StoreInline(ctx, "product-jobs", jobID, &jr); err != nil {
		return plan{}, err
	}
	// The generation type follows the source's content when it is at hand.
	src, err := s.Input(ctx, "source", jr.SourceURI)
	if err != nil {
		return plan{}, err
	}
	frames, video, exact := api.DefaultVideoFramesEstimate, true, false
	if src != nil {
		info, err := codec.Probe(ctx, *src, codec.DefaultLimits())
		if err != nil {
			return plan{}, api.MediaError("source", err)
		}
		jr.GenerationType = "image"
		if info.Kind == codec.KindVideo {
			jr.GenerationType = "video"
		}
		if alphaMode == job.AlphaSelect && jr.GenerationType == "video" {
			jr.AlphaKeyframeIndex = in.AlphaKeyframeIndex
		}
		if frames, err = s.CheckMedia(ctx, jr); err != nil {
			return plan{}, err
		}
		video, exact = jr.GenerationType == "video", true
	} else if alphaMode == job.AlphaSelect {
		jr.AlphaKeyframeIndex = in.AlphaKeyframeIndex
	}
	pr := vfxPrice(video, frames, in.MaxResolution, in.ProductMode)
	credits := pr.credits
	item := estimateItem{Item: fmt.Sprintf("vfx %s %dp", in.ProductMode, in.MaxResolution), Units: pr.units, Rate: pr.rate, Credits: credits}
	if in.ProductMode == job.ModeFast {
		item.Note = "fast mode: half price, rounded up"
	}
	if !exact {
		item.Note = strings.TrimPrefix(item.Note+"; upper bound: the source is not at hand, priced as a 240-frame video; the charge follows the render's frames", "; ")
	}
	return plan{
		uploads: uploads,
		req:     job.ProductRequest{Product: job.ProductVFX, ModelID: job.ModelVFX2, Mode: in.ProductMode, Generation: &jr},
		meta:    productMeta{ProductMode: in.ProductMode, MaxResolution: in.MaxResolution},
		credits: credits, exact: exact, video: video, frames: frames, items: []estimateItem{item},
	}, nil
}

type finishInputs struct {
	ParentJobID      string `json:"parent_job_id"`
	TargetResolution int    `json:"target_resolution"`
}

func (s *API) prepareFinish(ctx context.Context, oc api.OrgCtx, inputs json.RawMessage) (plan, error) {
	var in finishInputs
	if err := json.Unmarshal(inputs, &in); err != nil {
		return plan{}, api.InvalidInput("inputs: %v", err)
	}
	if strings.HasPrefix(in.ParentJobID, api.JobIDPrefix) {
		return plan{}, api.NewError(api.CodeParentNotProductJob,
			"parent_job_id %s is a generation API job; only vfx product jobs (dap_…) can be finished", trunc.String(in.ParentJobID, 80))
	}
	notFound := api.NewError(api.CodeParentNotFound, "parent job %s not found", trunc.String(in.ParentJobID, 80))
	rec, _, err := s.Queue.Get(ctx, in.ParentJobID)
	if errors.Is(err, queue.ErrNotFound) || errors.Is(err, queue.ErrInvalid) {
		return plan{}, notFound
	}
	if err != nil {
		return plan{}, fmt.Errorf("api: parent %s: %w", in.ParentJobID, err)
	}
	pm, err := s.getProductMeta(ctx, rec.ID)
	if errors.Is(err, jetstream.ErrKeyNotFound) || rec.Kind != queue.KindProduct || (err == nil && pm.OrgID != oc.Org.ID) {
		return plan{}, notFound
	}
	if err != nil {
		return plan{}, err
	}
	if pm.TeamID != oc.TeamID || pm.KeyOwner != oc.KeyOwner {
		return plan{}, api.NewError(api.CodeParentNotOwned,
			"parent job %s belongs to another key owner or team of this organization", rec.ID)
	}
	switch {
	case pm.Product == job.ProductFinish:
		return plan{}, api.NewError(api.CodeParentIsFinish, "parent job %s is a vfx_finish result; finish its standard vfx parent instead", rec.ID)
	case pm.Product != job.ProductVFX:
		return plan{}, api.NewError(api.CodeParentNotProductJob, "parent job %s is a %s job", rec.ID, pm.Product)
	case pm.ProductMode == job.ModeFast:
		return plan{}, api.NewError(api.CodeParentFastMode, "parent job %s is a fast-mode result; only standard-mode jobs can be finished", rec.ID)
	}
	pv, err := s.productView(ctx, rec, &pm)
	if err != nil {
		return plan{}, err
	}
	render := rec.Outputs[job.OutputRender]
	if pv.Status != ProductSuccess || render == "" {
		return plan{}, api.NewError(api.CodeParentNotSuccessful, "parent job %s is %s; only success-ful jobs can be finished", rec.ID, pv.Status)
	}
	video := strings.HasSuffix(render, ".mp4")
	frames := max(rec.Frames, 1)
	pr := finishPrice(video, frames, in.TargetResolution)
	credits := pr.credits
	return plan{
		req: job.ProductRequest{Product: job.ProductFinish, ModelID: job.ModelVFX2,
			Finish: &job.FinishRequest{ParentJobID: rec.ID, ParentRender: render, ParentVideo: video, TargetResolution: in.TargetResolution}},
		meta:    productMeta{ParentJobID: rec.ID, TargetResolution: in.TargetResolution},
		credits: credits, exact: true, video: video, frames: frames,
		items: []estimateItem{{Item: fmt.Sprintf("vfx_finish %d", in.TargetResolution), Units: pr.units, Rate: pr.rate, Credits: credits}},
	}, nil
}
