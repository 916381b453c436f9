package render

import (
	"errors"
	"fmt"

	"github.com/vfxrender/vfx/frame"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/kernels"
)

// Placement limits: those of the job contract (job.CheckPlacement words
// them for the API and the CLI).
const (
	// MinPlaceScale and MaxPlaceScale bound Placement.Scale.
	MinPlaceScale, MaxPlaceScale = job.MinPlacementScale, job.MaxPlacementScale
	// MaxPlaceOffset bounds |Placement.X| and |Placement.Y| (fractions of
	// the frame's width and height).
	MaxPlaceOffset = job.MaxPlacementOffset
)

// placeStage puts the subject where Params.Placement says before
// anything else sees the frame: the source and its matte are resampled
// together (kernels.PlaceOps), so every later stage (the normals, the
// key, the contact and cast shadows, all made from the matte, the camera
// lock, the composite) works on the placed subject. Without a placement
// (or with the identity) the renderer has no placeStage and the frame is
// exactly as before.
type placeStage struct {
	dev kernels.Device
	op  kernels.PlaceOps
	p   kernels.Placement
	// src and alpha receive the placed frame; upSrc and upAlpha the
	// uploads of FrameFromHost's host frames.
	src, alpha, upSrc, upAlpha kernels.Image
}

// checkPlacement checks p against the limits (the zero value and the
// identity are no placement: ok is false).
func checkPlacement(p kernels.Placement, fill bool) (ok bool, err error) {
	if p == (kernels.Placement{}) || p.Identity() {
		return false, nil
	}
	if !(p.Scale >= MinPlaceScale && p.Scale <= MaxPlaceScale) || !(p.X >= -MaxPlaceOffset && p.X <= MaxPlaceOffset) ||
		!(p.Y >= -MaxPlaceOffset && p.Y <= MaxPlaceOffset) {
		return false, fmt.Errorf("render: placement %g, %g, %g: want a scale in [%g, %g] and offsets in [-%g, %g]",
			p.Scale, p.X, p.Y, MinPlaceScale, MaxPlaceScale, MaxPlaceOffset, MaxPlaceOffset)
	}
	if fill {
		return false, errors.New("render: placement needs a matte: fill mode has no background to place the subject over")
	}
	return true, nil
}

// newPlaceStage allocates the placed frame's images (w x h).
func newPlaceStage(dev kernels.Device, p kernels.Placement, w, h int) (*placeStage, error) {
	op, ok := dev.Ops().(kernels.PlaceOps)
	if !ok {
		return nil, errors.New("render: placement: the device has no Place op")
	}
	s := &placeStage{dev: dev, op: op, p: p}
	a := allocator{dev: dev}
	a.img(&s.src, w, h, 3)
	a.img(&s.alpha, w, h, 1)
	a.img(&s.upSrc, w, h, 3)
	a.img(&s.upAlpha, w, h, 1)
	if a.err != nil {
		freeImages(dev, a.made)
		return nil, fmt.Errorf("render: allocate: %w", a.err)
	}
	return s, nil
}

// run places src and alpha and returns the placed images (src, alpha
// themselves when s is nil: no placement).
func (s *placeStage) run(src, alpha kernels.Image) (kernels.Image, kernels.Image, error) {
	if s == nil {
		return src, alpha, nil
	}
	if err := s.op.Place(s.src, src, s.p, false); err != nil {
		return nil, nil, step("place source", err)
	}
	if err := s.op.Place(s.alpha, alpha, s.p, true); err != nil {
		return nil, nil, step("place matte", err)
	}
	return s.src, s.alpha, nil
}

// upload uploads FrameFromHost's host frames for run.
func (s *placeStage) upload(src, alpha *frame.HostFrame) (kernels.Image, kernels.Image, error) {
	if err := s.dev.Upload(s.upSrc, src); err != nil {
		return nil, nil, step("upload source", err)
	}
	if err := s.dev.Upload(s.upAlpha, alpha); err != nil {
		return nil, nil, step("upload matte", err)
	}
	return s.upSrc, s.upAlpha, nil
}

// PlacedAlpha is the matte the last frame was rendered with: the placed matte
// when the job has a placement, else nil (the matte given).
func (r *Renderer) PlacedAlpha() kernels.Image {
	if r.place == nil {
		return nil
	}
	return r.place.alpha
}

func (s *placeStage) free() {
	if s == nil {
		return
	}
	freeImages(s.dev, []*kernels.Image{&s.src, &s.alpha, &s.upSrc, &s.upAlpha})
}

// placeFor is the job's placeStage: nil without a placement.
func placeFor(dev kernels.Device, p Params) (*placeStage, error) {
	ok, err := checkPlacement(p.Placement, p.Fill)
	if !ok || err != nil {
		return nil, err
	}
	return newPlaceStage(dev, p.Placement, p.Width, p.Height)
}
