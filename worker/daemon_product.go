package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/queue"
	"github.com/vfxrender/vfx/store"
)

// product runs a product job: vfx renders like a generation job (fast mode
// renders smaller and upscales), vfx_finish upscales its parent's render.
// Outputs go under product-jobs/<id>/.
func (dm *Daemon) product(ctx context.Context, d *queue.Delivery, rec queue.Record, dir string, log *zap.Logger) (jobOutput, error) {
	pr, err := job.DecodeProductRequest(rec.Request)
	if err != nil {
		return jobOutput{}, err
	}
	prefix := "product-jobs/" + d.JobID
	switch pr.Product {
	case job.ProductVFX:
		return dm.generate(ctx, d, *pr.Generation, dir, prefix, pr.Mode, log)
	case job.ProductFinish:
		return dm.finish(ctx, d, *pr.Finish, dir, prefix, log)
	}
	return jobOutput{}, inputErr(job.CodeInvalidInput, "unknown product %q", pr.Product)
}

// finish upscales the parent's render to the target resolution; the
// output is the render only.
func (dm *Daemon) finish(ctx context.Context, d *queue.Delivery, fr job.FinishRequest, dir, prefix string, log *zap.Logger) (jobOutput, error) {
	ext := ".png"
	if fr.ParentVideo {
		ext = ".mp4"
	}
	in := filepath.Join(dir, "parent"+ext)
	if err := dm.download(ctx, fr.ParentRender, in); err != nil {
		return jobOutput{}, err
	}
	out := filepath.Join(dir, "render"+ext)
	report, _, stopProgress := dm.progress(ctx, d, log)
	res, err := Upscale(ctx, dm.Pipeline.Device, codec.FileInput(in), out, UpscaleOptions{ShortSide: fr.TargetResolution,
		Preset: dm.Preset, CRF: dm.CRF, Progress: report})
	stopProgress()
	if err != nil {
		return jobOutput{}, err
	}
	log.Info("job upscaled", zap.String("parent", fr.ParentJobID), zap.Int("frames", res.Frames),
		zap.Int("width", res.Width), zap.Int("height", res.Height))
	key := prefix + "/render" + ext
	ct := "image/png"
	if fr.ParentVideo {
		ct = "video/mp4"
	}
	f, err := os.Open(out)
	if err != nil {
		return jobOutput{}, fmt.Errorf("worker: upload render: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return jobOutput{}, fmt.Errorf("worker: upload render: %w", err)
	}
	if _, err := dm.Store.Put(ctx, key, f, st.Size(), ct); err != nil {
		return jobOutput{}, fmt.Errorf("worker: upload render: %w", err)
	}
	return jobOutput{keys: map[string]string{job.OutputRender: key}, frames: res.Frames}, nil
}

// download copies an object of the store into path. A missing object is
// an *job.InputError (the parent's outputs are gone).
func (dm *Daemon) download(ctx context.Context, key, path string) error {
	rc, _, err := dm.Store.Open(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return &job.InputError{Code: job.CodeSourceUnreachable, Err: fmt.Errorf("parent render %s: %w", key, err)}
	}
	if err != nil {
		return fmt.Errorf("worker: fetch parent render: %w", err)
	}
	defer rc.Close()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("worker: fetch parent render: %w", err)
	}
	_, err = io.Copy(f, store.ContextReader(ctx, rc))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("worker: fetch parent render: %w", err)
	}
	return nil
}
