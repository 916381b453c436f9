// The daemon's inputs: a job's request checked, and its input URIs
// resolved and spooled to the job's folder.

package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/store"
)

// validate runs the contract's field rules (job.Validate, or the counting
// wrapper a test set) on a job's request: once a job, before anything is
// fetched (for a product job whose generation type follows its source,
// once the source is probed).
func (dm *Daemon) validate(jr job.JobRequest) (job.Valid, error) {
	if dm.validateJob != nil {
		return dm.validateJob(jr)
	}
	return job.Validate(jr)
}

// fetch resolves the request's input URIs and spools each one once into
// dir (the pipeline opens an input several times: probe, decode, audio).
func (dm *Daemon) fetch(ctx context.Context, jr job.JobRequest, dir string) (RenderRequest, error) {
	req := RenderRequest{JobRequest: jr, Preset: dm.Preset, CRF: dm.CRF}
	if req.CRF == 0 {
		req.CRF = DefaultCRF
	}
	alphaMode, _ := job.ParseAlphaMode(jr.AlphaMode)
	inputs := []struct {
		what, uri string
		dst       **codec.Input
	}{
		{"source", jr.SourceURI, &req.Source},
		{"alpha", jr.AlphaURI, &req.Alpha},
		{"reference", jr.ReferenceImageURI, &req.Reference},
	}
	for _, in := range inputs {
		if in.uri == "" || (in.what == "alpha" && !alphaMode.NeedsMatte()) {
			continue
		}
		path, err := dm.spool(ctx, in.what, in.uri, dir)
		if err != nil {
			return RenderRequest{}, err
		}
		ci := codec.FileInput(path)
		*in.dst = &ci
	}
	return req, nil
}

// spool copies one input into a file of dir and returns its path.
func (dm *Daemon) spool(ctx context.Context, what, uri, dir string) (string, error) {
	rc, info, err := dm.resolver().Open(ctx, uri)
	if err != nil {
		return "", fetchError(what, err)
	}
	defer rc.Close()
	path := filepath.Join(dir, what+inputExt(info.Name))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", fmt.Errorf("worker: spool %s: %w", what, err)
	}
	n, err := io.Copy(f, io.LimitReader(store.ContextReader(ctx, rc), store.MaxUploadBytes+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("worker: spool %s: %w", what, err)
	}
	if n > store.MaxUploadBytes {
		return "", &job.InputError{Code: job.CodeSourceTooLarge, Err: fmt.Errorf("%s: over %d bytes", what, store.MaxUploadBytes)}
	}
	return path, nil
}

// inputExt keeps a known media extension of an input's name as a hint for
// FFmpeg (formats are still judged by content).
func inputExt(name string) string {
	ext := strings.ToLower(filepath.Ext(name))
	switch ext {
	case ".mp4", ".mov", ".png", ".jpg", ".jpeg", ".webp", ".zip", ".tar":
		return ext
	}
	return ""
}

// fetchError turns a resolver error into an *job.InputError when fetching can
// never succeed, with its API error code (the store sentinels through
// codeTable, the one mapping):
//
//   - store.ErrInvalidURI, store.ErrInvalidKey, store.ErrForbiddenAddress: INVALID_URI;
//   - store.ErrMIMEMismatch: INVALID_FILE_FORMAT;
//   - store.ErrTooLarge: SOURCE_TOO_LARGE;
//   - store.ErrNotFound (a vfx:// upload that does not exist) and an
//     https:// answer 4xx other than 408, 425 and 429: SOURCE_UNREACHABLE.
//
// Everything else is transient and returned as a plain error to retry:
// object storage down, https:// 5xx, 408, 429, network errors and timeouts
// (those still start with SOURCE_UNREACHABLE, so the final error of a job
// that exhausts its attempts says what went wrong).
func fetchError(what string, err error) error {
	wrap := func(code job.Code) error {
		return &job.InputError{Code: code, Err: fmt.Errorf("%s: %w", what, err)}
	}
	var se *store.StatusError
	var ie *job.InputError
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("worker: fetch %s: %w", what, err)
	case errors.As(classify(what, err), &ie):
		return ie
	case errors.As(err, &se) && se.StatusCode >= 400 && se.StatusCode < 500 &&
		se.StatusCode != http.StatusRequestTimeout && se.StatusCode != http.StatusTooEarly &&
		se.StatusCode != http.StatusTooManyRequests:
		return wrap(job.CodeSourceUnreachable)
	case errors.Is(err, store.ErrUnreachable):
		return fmt.Errorf("SOURCE_UNREACHABLE: %s: %w", what, err)
	}
	return fmt.Errorf("worker: fetch %s: %w", what, err)
}
