package product

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/job"
)

// Product catalogue: products, their models, input schemas and credit
// prices (the rates are in product_pricing.go). The catalogue is part of
// the interface and documented in the OpenAPI document.

// productDef is one product of GET /v1/products.
type productDef struct {
	Product     string     `json:"product"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	models      []modelDef // answered by GET /v1/products/{product}/models
}

// modelDef is one model of a product.
type modelDef struct {
	ModelID     string          `json:"model_id"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Pricing     pricing         `json:"pricing"`
	schema      *jsonschema.Schema
}

// pricing documents how a job's credits are computed.
type pricing struct {
	Unit        string         `json:"unit"`
	Description string         `json:"description"`
	Rates       map[string]int `json:"rates"`
}

const vfxSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "vfx vfx-2.0 inputs",
  "type": "object",
  "additionalProperties": false,
  "required": ["source", "alpha_mode"],
  "properties": {
    "source": {"type": "string", "minLength": 1, "description": "Source image (PNG, JPEG, WebP) or video (MP4, MOV; H.264 or HEVC; at most 240 frames): vfx://uploads/{id}/{filename}, https:// or data: URI. At most 2,770,000 pixels."},
    "alpha_mode": {"enum": ["auto", "fill", "custom", "select"]},
    "alpha": {"type": "string", "minLength": 1, "description": "Alpha matte URI; required for custom and select, ignored otherwise. An image matte may be grey, RGB or RGBA, 8 or 16 bits: its alpha where not all opaque, else its luminance."},
    "alpha_keyframe_index": {"type": "integer", "minimum": 0, "default": 0},
    "prompt": {"type": "string", "maxLength": 2000},
    "reference_image": {"type": "string", "minLength": 1, "description": "Reference image URI (PNG, JPEG, WebP)."},
    "max_resolution": {"enum": [720, 1080], "default": 1080},
    "seed": {"type": "integer", "minimum": 0, "maximum": 4294967295},
    "mode": {"enum": ["standard", "fast"], "default": "standard", "description": "fast renders at 2/3 of the resolution and upscales the render with the vfx_finish upscaler: about half the work and half the credits, slightly softer fine detail."},
    "outputs": {"type": "object", "additionalProperties": false, "description": "Extra outputs.", "properties": {
      "foreground": {"type": "boolean", "default": false, "description": "Also return outputs.foreground: the clean relit subject (no new background, light wrap or shadow) with its alpha, premultiplied (colour × alpha), at the processing size: an RGBA PNG for an image, a ProRes 4444 .mov with alpha for a video. Lay it over any plate in a compositor (Nuke, Resolve). No extra credits."}
    }}
  },
  "anyOf": [{"required": ["prompt"]}, {"required": ["reference_image"]}],
  "allOf": [{
    "if": {"required": ["alpha_mode"], "properties": {"alpha_mode": {"enum": ["custom", "select"]}}},
    "then": {"required": ["alpha"]}
  }]
}`

const finishSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "vfx_finish vfx-2.0 inputs",
  "type": "object",
  "additionalProperties": false,
  "required": ["parent_job_id", "target_resolution"],
  "properties": {
    "parent_job_id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,200}$", "description": "A dap_ id: a success-ful standard-mode vfx product job of the same key owner, organisation and team."},
    "target_resolution": {"enum": [1080, 2160], "description": "Shorter side of the upscaled render."}
  }
}`

// catalogue returns the products with compiled schemas.
func catalogue() ([]*productDef, error) {
	ps := []*productDef{
		{Product: job.ProductVFX, Name: "VFX", Description: "Relights and composites an image or video from a prompt, a reference image and an alpha matte.",
			models: []modelDef{{ModelID: job.ModelVFX2, Description: "vfx 2.0 render pipeline", InputSchema: json.RawMessage(vfxSchema),
				Pricing: pricing{Unit: "credits", Rates: map[string]int{"standard_720_per_frame": rateVFX720, "standard_1080_per_frame": rateVFX1080, "image_frame_units": ImageCreditUnits},
					Description: "frames x rate (an image counts 8 frames); fast mode costs half, rounded up; at least 1 credit"}}}},
		{Product: job.ProductFinish, Name: "VFX Finish", Description: "Upscales a finished standard vfx job to 1080 or 2160 (shorter side) with an edge-aware Lanczos kernel and sharpening; audio passes through.",
			models: []modelDef{{ModelID: job.ModelVFX2, Description: "vfx 2.0 finish upscaler", InputSchema: json.RawMessage(finishSchema),
				Pricing: pricing{Unit: "credits", Rates: map[string]int{"1080_per_frame": rateFinish1080, "2160_per_frame": rateFinish2160, "image_frame_units": ImageCreditUnits},
					Description: "parent frames x rate (an image counts 8 frames); at least 1 credit"}}}},
	}
	for _, p := range ps {
		for i := range p.models {
			m := &p.models[i]
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(m.InputSchema))
			if err != nil {
				return nil, fmt.Errorf("api: schema of %s/%s: %w", p.Product, m.ModelID, err)
			}
			c := jsonschema.NewCompiler()
			url := "vfx:///schemas/" + p.Product + "/" + m.ModelID + ".json"
			if err := c.AddResource(url, doc); err != nil {
				return nil, fmt.Errorf("api: schema of %s/%s: %w", p.Product, m.ModelID, err)
			}
			if m.schema, err = c.Compile(url); err != nil {
				return nil, fmt.Errorf("api: schema of %s/%s: %w", p.Product, m.ModelID, err)
			}
		}
	}
	return ps, nil
}

func (p *productDef) model(id string) (*modelDef, bool) {
	for i := range p.models {
		if p.models[i].ModelID == id {
			return &p.models[i], true
		}
	}
	return nil, false
}

func (p *productDef) modelIDs() []string {
	out := make([]string, len(p.models))
	for i, m := range p.models {
		out[i] = m.ModelID
	}
	return out
}

// schemaProblems validates inputs against the model's schema and returns
// nil or a 422 INVALID_INPUT naming the unknown and missing fields.
func (m *modelDef) schemaProblems(inputs json.RawMessage) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(inputs))
	if err != nil {
		return api.InvalidInput("inputs is not valid JSON: %v", err)
	}
	err = m.schema.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("api: validate inputs: %w", err)
	}
	printer := message.NewPrinter(language.English)
	var unknown, missing, other []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		switch k := e.ErrorKind.(type) {
		case *kind.AdditionalProperties:
			unknown = append(unknown, k.Properties...)
		case *kind.Required:
			missing = append(missing, k.Missing...)
		case *kind.Group, *kind.Schema, *kind.AnyOf, *kind.AllOf, *kind.Reference:
		default:
			loc := "inputs"
			if len(e.InstanceLocation) > 0 {
				loc = "inputs." + strings.Join(e.InstanceLocation, ".")
			}
			other = append(other, loc+": "+e.ErrorKind.LocalizedString(printer))
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(unknown)
	slices.Sort(missing)
	unknown, missing = slices.Compact(unknown), slices.Compact(missing)
	var parts []string
	if len(unknown) > 0 {
		parts = append(parts, "unknown fields: "+strings.Join(unknown, ", "))
	}
	if len(missing) > 0 {
		parts = append(parts, "missing fields: "+strings.Join(missing, ", "))
	}
	parts = append(parts, other...)
	msg := "inputs do not match the input_schema of the model"
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, "; ")
	}
	e := api.InvalidInput("%s", msg)
	e.Unknown, e.Missing = unknown, missing
	return e
}

// product returns the path's product or 404 PRODUCT_NOT_FOUND.
func (s *API) product(name string) (*productDef, error) {
	for _, p := range s.products {
		if p.Product == name {
			return p, nil
		}
	}
	return nil, api.NewError(api.CodeProductNotFound, "product %q not found", trunc.String(name, 80))
}

func modelNotFound(p *productDef, id string) error {
	return api.NewError(api.CodeModelNotFound, "model %q is not a model of product %s (models: %s)",
		trunc.String(id, 80), p.Product, strings.Join(p.modelIDs(), ", "))
}

// checkAccess refuses a product the organisation has not enabled or a
// model it has not consented to.
func checkAccess(oc api.OrgCtx, p *productDef, model string) error {
	if !oc.Org.ProductEnabled(p.Product) {
		return api.NewError(api.CodeProductNotEnabled, "product %s is not enabled for this organization", p.Product)
	}
	if !oc.Org.ModelConsent(model) {
		return api.NewError(api.CodeModelConsentRequired, "this organization has not consented to model %s", model)
	}
	return nil
}
