// The daemon's outputs: the object keys of a job's outputs and their
// upload.

package worker

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
	if res.EXR != "" {
		// One ZIP per pass sequence: <pass>/<pass>.<frame>.exr inside.
		for _, pass := range EXRPasses {
			name := job.OutputEXR(pass)
			zp := filepath.Join(res.EXR, name+".zip")
			if err := zipFolder(filepath.Join(res.EXR, pass), pass, zp); err != nil {
				return nil, fmt.Errorf("worker: upload %s: %w", name, err)
			}
			// The frames are in the ZIP now: the job's folder holds each
			// sequence once, not twice.
			_ = os.RemoveAll(filepath.Join(res.EXR, pass))
			files[name], keys[name] = zp, prefix+"/exr/"+pass+".zip"
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	for name, path := range files {
		key := keys[name]
		ct := ct
		switch {
		case name == job.OutputForeground && video:
			ct = "video/quicktime"
		case strings.HasPrefix(name, "exr_"):
			ct = "application/zip"
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

// zipFolder writes the files of folder dir into a new ZIP at dst, under
// prefix/ and by name, stored (EXR frames are compressed already).
func zipFolder(dir, prefix, dst string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	err = func() error {
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			w, err := zw.CreateHeader(&zip.FileHeader{Name: prefix + "/" + e.Name(), Method: zip.Store})
			if err != nil {
				return err
			}
			in, err := os.Open(filepath.Join(dir, e.Name()))
			if err != nil {
				return err
			}
			_, err = io.Copy(w, in)
			in.Close()
			if err != nil {
				return err
			}
		}
		return zw.Close()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
