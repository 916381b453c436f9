package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/infer"
)

// benchCalibrate measures the segmentation network's activation ranges on
// frames of real clips (infer.Runtime.Calibrate) and writes the card's
// 8-bit calibration (infer.Int8) as JSON: the file infer/isnet-int8.json
// is made by this command, and its fitted_by field is the command line.
func benchCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataset := fs.String("dataset", "", "dataset folder: NAME/source.mp4 per clip (required), e.g. ../shared/datasets/davis2016-train")
	fold := fs.String("fold", "", "only the clips of development fold A or B (bench.FoldA, bench.FoldB)")
	perClip := fs.Int("per-clip", 1, "frames of each clip, 1..8, evenly spaced inside it")
	pct := fs.Float64("percentile", 0.9999, "the share of each activation's values that its range holds on each frame, in (0.5, 1]")
	out := fs.String("out", "", "the JSON file to write (required), e.g. infer/isnet-int8.json")
	mf := modelFlags(fs, &env{get: os.Getenv})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *dataset == "" || *out == "":
		return usageError{"bench calibrate: --dataset and --out are required"}
	case *fold != "" && *fold != "A" && *fold != "B":
		return usageError{fmt.Sprintf("bench calibrate: --fold %q: want A or B", *fold)}
	case *perClip < 1 || *perClip > 8:
		return usageError{fmt.Sprintf("bench calibrate: --per-clip %d: want 1..8", *perClip)}
	case !(*pct > 0.5 && *pct <= 1):
		return usageError{fmt.Sprintf("bench calibrate: --percentile %g: want above 0.5 and at most 1", *pct)}
	case *mf.provider != string(infer.CPU):
		return usageError{"bench calibrate: runs on the cpu provider only"}
	}
	dirs, err := bench.DAVISVideoDirs(*dataset)
	if err != nil {
		return err
	}
	var clips []string
	for _, d := range dirs {
		if *fold == "" || bench.FoldOf(filepath.Base(d)) == *fold {
			clips = append(clips, d)
		}
	}
	if len(clips) == 0 {
		return fmt.Errorf("bench calibrate: no clips in %s", *dataset)
	}
	codec.Quiet()
	card := infer.ISNetIMGLY()
	if *mf.card != "" {
		if card, err = infer.ReadCard(*mf.card); err != nil {
			return err
		}
	}
	if *mf.size != 0 {
		if card, err = card.At(*mf.size); err != nil {
			return err
		}
	}
	rt, err := infer.Open(infer.Options{Dir: *mf.dir, Provider: infer.CPU, Threads: *mf.threads})
	if err != nil {
		return err
	}
	defer rt.Close()
	var names []string
	var clip *bench.DAVISVideo // the clip of the last picture: its frames are asked for in turn
	picture := func(i int) ([]float32, int, int, error) {
		if i%*perClip == 0 {
			var err error
			if clip, err = bench.OpenDAVISVideo(ctx, clips[i / *perClip]); err != nil {
				return nil, 0, 0, err
			}
		}
		w, h := clip.Size()
		k := (i%*perClip + 1) * clip.Len() / (*perClip + 1)
		rgb := make([]float32, 3*w*h)
		if err := clip.Load(k, rgb, nil); err != nil {
			return nil, 0, 0, err
		}
		names = append(names, fmt.Sprintf("%s:%d", clip.Name(), k))
		fmt.Fprintf(stdout, "calibrating on %s frame %d\n", clip.Name(), k)
		return rgb, w, h, nil
	}
	rg, err := rt.Calibrate(ctx, card, *pct, len(clips)**perClip, picture)
	if err != nil {
		return err
	}
	q := infer.Int8{Percentile: *pct, Pictures: strings.Join(names, ","), FittedBy: "vfx bench calibrate " + strings.Join(args, " "), Ranges: rg}
	b, err := json.MarshalIndent(q, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d ranges from %d frames\n", *out, len(rg), len(names))
	return nil
}
