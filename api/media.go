package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"time"

	"go.uber.org/zap"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/media"
	"github.com/vfxrender/vfx/store"
)

// MediaError turns an input error into a 400 with its code, and object
// storage that cannot be reached (a network error, a 5xx) into a 503
// SERVICE_UNAVAILABLE with Retry-After: nothing was created, the same
// request can be sent again. Other errors are returned as they are.
func MediaError(what string, err error) error {
	if err == nil {
		return nil
	}
	var ie *job.InputError
	if errors.As(media.AsInputError(what, err), &ie) {
		return inputError(ie)
	}
	if storeUnreachable(err) {
		return Unavailable(2, "object storage is unreachable, the %s could not be checked; nothing was created, retry shortly", what)
	}
	return fmt.Errorf("api: check %s: %w", what, err)
}

// storeUnreachable reports a network failure of object storage (or an
// https:// source answering 5xx: store.ErrUnreachable).
func storeUnreachable(err error) bool {
	var ne net.Error
	var ue *url.Error
	switch {
	case errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, store.ErrUnreachable), errors.As(err, &ne), errors.As(err, &ue):
		return true
	}
	return false
}

// atHand reports whether uri's content can be checked at submission
// without a network fetch: an upload or an inline data: URI.
func (s *Server) AtHand(uri string) bool {
	u, err := s.resolver.Parse(uri)
	return err == nil && (u.Kind == store.KindUpload || u.Kind == store.KindData || u.Kind == store.KindJobInput)
}

// Input returns a codec input over uri when its content is at hand (an
// upload or a data: URI), nil otherwise. A missing upload or a bad data:
// payload is reported as such here, not later as a probe failure.
func (s *Server) Input(ctx context.Context, what, uri string) (*codec.Input, error) {
	if uri == "" || !s.AtHand(uri) {
		return nil, nil
	}
	rc, _, err := s.resolver.Open(ctx, uri)
	if err != nil {
		return nil, MediaError(what, err)
	}
	_ = rc.Close()
	return &codec.Input{Open: func() (io.ReadSeekCloser, error) {
		rc, _, err := s.resolver.Open(ctx, uri)
		return rc, err
	}}, nil
}

// CheckMedia runs the content checks of media.Check on the inputs
// that are at hand and returns the source's frame count (0 when the source
// is not at hand).
func (s *Server) CheckMedia(ctx context.Context, jr job.JobRequest) (int, error) {
	req := media.Inputs{JobRequest: jr}
	var err error
	if req.Source, err = s.Input(ctx, "source", jr.SourceURI); err != nil {
		return 0, err
	}
	if req.Alpha, err = s.Input(ctx, "alpha", jr.AlphaURI); err != nil {
		return 0, err
	}
	if req.Reference, err = s.Input(ctx, "reference_image", jr.ReferenceImageURI); err != nil {
		return 0, err
	}
	m, err := media.Check(ctx, req, codec.DefaultLimits())
	if err != nil {
		return 0, MediaError("media", err)
	}
	return m.Frames(), nil
}

// StoreInline streams each data: input of jr (source, alpha, reference)
// into the object store as an input object of the job
// ({space}/{jobID}/inputs/{what}.{ext}) under the upload sniffing rule, and
// replaces its URI by the object's vfx:// reference, so that the queue
// record stays small whatever the input. The returned cleanup deletes what
// was stored; the caller runs it when the job is not created.
func (s *Server) StoreInline(ctx context.Context, space, jobID string, jr *job.JobRequest) (func(), error) {
	var keys []string
	cleanup := func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		for _, k := range keys {
			if err := s.Store.Delete(dctx, k); err != nil {
				s.Log.Warn("delete inline input", zap.String("key", k), zap.Error(err))
			}
		}
	}
	for _, in := range []struct {
		what string
		uri  *string
	}{{"source", &jr.SourceURI}, {"alpha", &jr.AlphaURI}, {"reference_image", &jr.ReferenceImageURI}} {
		u, err := s.resolver.Parse(*in.uri)
		if err != nil || u.Kind != store.KindData {
			continue // checked before; only data: URIs move
		}
		name := in.what + store.DataExt(u.MIME)
		key := store.JobInputKey(space, jobID, name)
		// Recorded before it is stored: a crash from here on leaves a
		// record that recoverSubmission finds (pending.go).
		if err := s.PendingInput(ctx, jobID, key); err != nil {
			cleanup()
			return func() {}, err
		}
		if _, err := store.PutData(ctx, s.Store, key, u); err != nil {
			cleanup()
			return func() {}, MediaError(in.what, err)
		}
		keys = append(keys, key)
		*in.uri = store.JobInputURI(space, jobID, name)
	}
	return cleanup, nil
}
