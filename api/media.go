package api

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/store"
	"github.com/vfxrender/vfx/worker"
)

// mediaError turns an input error into a 400 with its code; other errors
// (object storage down) are returned as they are.
func mediaError(what string, err error) error {
	if err == nil {
		return nil
	}
	var ie *worker.InputError
	if errors.As(worker.AsInputError(what, err), &ie) {
		return badRequest(ie.Code, "%v", ie.Err)
	}
	return fmt.Errorf("api: check %s: %w", what, err)
}

// atHand reports whether uri's content can be checked at submission
// without a network fetch: an upload or an inline data: URI.
func (s *Server) atHand(uri string) bool {
	u, err := s.resolver.Parse(uri)
	return err == nil && (u.Kind == store.KindUpload || u.Kind == store.KindData)
}

// input returns a codec input over uri when its content is at hand (an
// upload or a data: URI), nil otherwise. A missing upload or a bad data:
// payload is reported as such here, not later as a probe failure.
func (s *Server) input(ctx context.Context, what, uri string) (*codec.Input, error) {
	if uri == "" || !s.atHand(uri) {
		return nil, nil
	}
	rc, _, err := s.resolver.Open(ctx, uri)
	if err != nil {
		return nil, mediaError(what, err)
	}
	_ = rc.Close()
	return &codec.Input{Open: func() (io.ReadSeekCloser, error) {
		rc, _, err := s.resolver.Open(ctx, uri)
		return rc, err
	}}, nil
}

// checkMedia runs the content checks of worker.CheckMedia on the inputs
// that are at hand and returns the source's frame count (0 when the source
// is not at hand).
func (s *Server) checkMedia(ctx context.Context, jr worker.JobRequest) (int, error) {
	req := worker.Request{GenerationType: jr.GenerationType, AlphaMode: jr.AlphaMode, AlphaKeyframeIndex: jr.AlphaKeyframeIndex}
	var err error
	if req.Source, err = s.input(ctx, "source", jr.SourceURI); err != nil {
		return 0, err
	}
	if req.Alpha, err = s.input(ctx, "alpha", jr.AlphaURI); err != nil {
		return 0, err
	}
	if req.Reference, err = s.input(ctx, "reference_image", jr.ReferenceImageURI); err != nil {
		return 0, err
	}
	m, err := worker.CheckMedia(ctx, &req, codec.DefaultLimits())
	if err != nil {
		return 0, mediaError("media", err)
	}
	return m.Frames(), nil
}
