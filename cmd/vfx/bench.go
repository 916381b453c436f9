package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/matte"
	"github.com/vfxrender/vfx/worker"
)

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"want a subcommand: fixture, ffmpeg, matte, look or passes"}
	}
	if args[0] == "passes" {
		return benchPasses(ctx, args[1:], stdout, stderr)
	}
	if args[0] == "matte" {
		return benchMatte(ctx, args[1:], stdout, stderr)
	}
	if args[0] == "look" {
		return benchLook(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("bench "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "out/bench", "output folder")
	w := fs.Int("width", 1920, "width (even)")
	h := fs.Int("height", 1080, "height (even)")
	n := fs.Int("frames", 240, "frames")
	seed := fs.Uint64("seed", 1, "texture seed (fixture)")
	preset := fs.String("preset", "veryfast,medium", "x264 presets, comma-separated: each is compared in turn (ffmpeg)")
	crf := fs.Int("crf", 18, "x264 CRF (ffmpeg)")
	rounds := fs.Int("rounds", 1, "alternating rounds, best kept (ffmpeg)")
	x264Params := fs.String("x264-params", worker.DefaultX264Params, "libx264 options given to both (ffmpeg)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	codec.Quiet()
	switch args[0] {
	case "fixture":
		p, err := bench.WriteFixture(ctx, *out, bench.FixtureOptions{Width: *w, Height: *h, Frames: *n, Seed: *seed})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s %s %s %s %s\n", p.Source, p.Matte, p.Reference, p.Still, p.StillMatte)
		return nil
	case "ffmpeg":
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		presets := strings.Split(*preset, ",")
		for _, p := range presets {
			if strings.TrimSpace(p) == "" {
				return usageError{fmt.Sprintf("bench ffmpeg: empty preset in --preset %q", *preset)}
			}
		}
		for i, p := range presets {
			rep, err := bench.CompareFFmpeg(ctx, bench.CompareOptions{VFX: exe, Dir: *out, Width: *w, Height: *h,
				Frames: *n, Preset: strings.TrimSpace(p), CRF: *crf, Rounds: *rounds, X264Params: *x264Params})
			if err != nil {
				return err
			}
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprintln(stdout, rep)
		}
		return nil
	}
	return usageError{fmt.Sprintf("unknown bench subcommand %q", args[0])}
}

// benchMatte scores the mattes on real footage with hand-made masks: a
// dataset folder in the layout of ../shared/datasets (NAME/source.mp4 and
// NAME/masks/NNNNN.png), one row per clip and mode, then the means.
func benchMatte(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench matte", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataset := fs.String("dataset", "", "dataset folder: NAME/source.mp4 + NAME/masks/NNNNN.png per clip (required), e.g. ../shared/datasets/davis2016-train")
	clips := fs.String("clips", "", "comma-separated clip names (default: every clip)")
	modes := fs.String("modes", "all", "comma-separated modes: select, select-mid, select-inv, auto, auto-still, or all")
	every := fs.Int("every", matte.DefaultCPUSchedule.Every, "run the network on every k-th frame (1 = every frame), propagating between")
	cache := fs.String("cache", "", "folder to keep the network's maps in, so that later runs skip the network (default: none)")
	sheet := fs.String("sheet", "", "write a contact sheet PNG of a few clips (first mode) to this file")
	workers := fs.Int("workers", 0, "CPU compute threads (0 = all cores)")
	mf := modelFlags(fs, &env{get: os.Getenv})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dataset == "" {
		return usageError{"bench matte: --dataset is required"}
	}
	ms, err := bench.ParseMatteModes(*modes)
	if err != nil {
		return usageError{err.Error()}
	}
	if *every < 1 {
		return usageError{"bench matte: --every must be at least 1"}
	}
	dirs, err := bench.DAVISVideoDirs(*dataset)
	if err != nil {
		return err
	}
	if *clips != "" {
		want := map[string]bool{}
		for _, c := range strings.Split(*clips, ",") {
			want[c] = true
		}
		var keep []string
		for _, d := range dirs {
			if want[filepath.Base(d)] {
				keep = append(keep, d)
				delete(want, filepath.Base(d))
			}
		}
		if len(want) > 0 {
			return fmt.Errorf("bench matte: no clip named %v in %s", slices.Sorted(maps.Keys(want)), *dataset)
		}
		dirs = keep
	}
	codec.Quiet()
	net, card, closeNet, err := mf.load(ctx)
	if err != nil {
		return err
	}
	defer closeNet()
	dev := kernels.NewCPU(*workers)
	defer dev.Close()
	nc := &bench.NetCache{Net: net, Dir: *cache, Key: card.Name + "-" + card.SHA256[:12]}
	keep := map[string]bool{}
	if *sheet != "" {
		for _, i := range []int{0, len(dirs) / 3, 2 * len(dirs) / 3, len(dirs) - 1} {
			keep[filepath.Base(dirs[i])] = true
		}
	}
	cfg := bench.RealMatteConfig{Modes: ms, Schedule: matte.Schedule{Every: *every}, Net: nc, Keep: keep}
	fmt.Fprintf(stdout, "model %s (%s), network every %d frame(s), %d clips from %s (DAVIS protocol: first and last frame left out of each clip's means)\n",
		card.Name, card.Licence, *every, len(dirs), *dataset)
	fmt.Fprintf(stdout, "%-18s %-10s %6s %6s %7s %8s %6s %7s %9s\n", "clip", "mode", "J", "F", "decay", "flicker%", "copyJ", "frames", "matte f/s")
	var all []bench.ClipResult
	var rows [][]bench.SheetTile
	t0 := time.Now()
	for _, d := range dirs {
		clip, err := bench.OpenDAVISVideo(ctx, d)
		if err != nil {
			return err
		}
		rs, err := bench.RunRealMattes(ctx, dev, clip, cfg)
		if err != nil {
			return err
		}
		for _, r := range rs {
			fmt.Fprintf(stdout, "%-18s %-10s %6.3f %6.3f %+7.3f %8.2f %6.3f %7d %9s\n", r.Clip, r.Mode, r.Scores.J, r.Scores.F,
				r.Scores.JDecay, r.Scores.Flicker, r.CopyJ, r.Frames, rate(float64(r.Frames), r.Matte.Seconds()))
		}
		if keep[clip.Name()] && len(rs) > 0 && len(rs[0].Mattes) > 0 {
			r := rs[0]
			var row []bench.SheetTile
			for _, i := range []int{0, len(r.Mattes) / 2, len(r.Mattes) - 1} {
				w, h := clip.Size()
				truth := make([]float32, w*h)
				rgb := make([]float32, 3*w*h)
				if err := clip.Load(i, rgb, truth); err != nil {
					return err
				}
				if r.Mode == bench.SelectInverse {
					for k := range truth {
						truth[k] = 1 - truth[k]
					}
				}
				row = append(row, bench.SheetTile{Clip: clip, Frame: i, Matte: r.Mattes[i], Truth: truth})
			}
			rows = append(rows, row)
		}
		nc.Forget(clip)
		all = append(all, rs...)
	}
	fmt.Fprintf(stdout, "\nmeans over %d clips (network: %d runs, %.2f s a run; wall %s)\n", len(dirs), nc.Runs,
		nc.Spent.Seconds()/max(float64(nc.Runs), 1), time.Since(t0).Round(time.Second))
	fmt.Fprintf(stdout, "%-10s %6s %6s %7s %8s %6s %9s %8s  %s\n", "mode", "J", "F", "decay", "flicker%", "copyJ", "matte f/s", "net/frm", "below copy")
	for _, s := range bench.Summarise(all) {
		fps := "–" // the net mode does no matte work
		if s.FramesPerSecond > 0 {
			fps = fmt.Sprintf("%.1f", s.FramesPerSecond)
		}
		fmt.Fprintf(stdout, "%-10s %6.3f %6.3f %+7.3f %8.2f %6.3f %9s %8.2f  %v\n", s.Mode, s.J, s.F, s.Decay, s.Flicker, s.CopyJ,
			fps, float64(s.NetRuns)/float64(s.Frames), s.BelowCopy)
	}
	if *sheet != "" && len(rows) > 0 {
		if err := bench.WriteSheet(*sheet, rows); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "contact sheet (%s; darkened = background, red = missed, blue = added): %s\n", ms[0], *sheet)
	}
	return nil
}

// rate formats n per secs a second, or "–" where no time was spent.
func rate(n, secs float64) string {
	if secs <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", n/secs)
}

// benchPasses writes a contact sheet of one frame of a job's EXR passes.
func benchPasses(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench passes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "output folder of a vfx render --output-format exr job (required)")
	number := fs.Int("frame", worker.DefaultStartFrame, "frame number")
	out := fs.String("out", "out/passes.png", "sheet PNG to write")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return usageError{"bench passes: --dir is required"}
	}
	if err := bench.WritePassSheet(ctx, *dir, *number, *out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}
