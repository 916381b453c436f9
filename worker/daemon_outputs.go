// The daemon's outputs: the object keys of a job's outputs and their
// upload.

package worker

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sync/errgroup"

	"github.com/vfxrender/vfx/job"
)

// outputKeys are the deterministic object keys of a job's outputs under
// prefix ("jobs/<id>" or "product-jobs/<id>").
func outputKeys(prefix string, video bool) map[string]string {
	ext := "png"
	if video {
		ext = "mp4"
	}
	return map[string]string{
		job.OutputRender: prefix + "/render." + ext,
		job.OutputSource: prefix + "/source." + ext,
		job.OutputAlpha:  prefix + "/alpha." + ext,
	}
}

// upload puts the three outputs at their keys, replacing what an earlier
// attempt may have left there.
func (dm *Daemon) upload(ctx context.Context, prefix string, video bool, res Result) (map[string]string, error) {
	keys := outputKeys(prefix, video)
	ct := "image/png"
	if video {
		ct = "video/mp4"
	}
	files := map[string]string{job.OutputRender: res.Render, job.OutputSource: res.Source, job.OutputAlpha: res.Alpha}
	if res.Foreground != "" {
		files[job.OutputForeground] = res.Foreground
		keys[job.OutputForeground] = prefix + "/" + foregroundName(video)
	}
	g, gctx := errgroup.WithContext(ctx)
	for name, path := range files {
		key := keys[name]
		ct := ct
		if name == job.OutputForeground && video {
			ct = "video/quicktime"
		}
		g.Go(func() error {
			f, err := os.Open(path)
			if err != nil {
				return fmt.Errorf("worker: upload %s: %w", name, err)
			}
			defer f.Close()
			st, err := f.Stat()
			if err != nil {
				return fmt.Errorf("worker: upload %s: %w", name, err)
			}
			if _, err := dm.Store.Put(gctx, key, f, st.Size(), ct); err != nil {
				return fmt.Errorf("worker: upload %s: %w", name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return keys, nil
}
