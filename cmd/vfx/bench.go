package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/matte"
	"github.com/vfxrender/vfx/worker"
)

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"want a subcommand: fixture, ffmpeg, matte or look"}
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
	preset := fs.String("preset", "medium", "x264 preset (ffmpeg)")
	crf := fs.Int("crf", 18, "x264 CRF (ffmpeg)")
	rounds := fs.Int("rounds", 1, "alternating rounds, best kept (ffmpeg)")
	x264Params := fs.String("x264-params", worker.DefaultX264Params, "libx264 options given to both (ffmpeg)")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{}
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
		rep, err := bench.CompareFFmpeg(ctx, bench.CompareOptions{VFX: exe, Dir: *out, Width: *w, Height: *h,
			Frames: *n, Preset: *preset, CRF: *crf, Rounds: *rounds, X264Params: *x264Params})
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, rep)
		return nil
	}
	return usageError{fmt.Sprintf("unknown bench subcommand %q", args[0])}
}

// benchMatte scores select propagation on a folder in the DAVIS layout.
func benchMatte(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench matte", flag.ContinueOnError)
	fs.SetOutput(stderr)
	framesDir := fs.String("frames", "", "folder of JPEG frames named by number (DAVIS layout, required)")
	masksDir := fs.String("masks", "", "folder of PNG masks {0,255} named like the frames (required)")
	keyframe := fs.Int("keyframe", 0, "frame whose true mask seeds the propagation")
	workers := fs.Int("workers", 0, "CPU compute threads (0 = all cores)")
	if err := fs.Parse(args); err != nil {
		return usageError{}
	}
	if *framesDir == "" || *masksDir == "" {
		return usageError{"bench matte: --frames and --masks are required"}
	}
	clip, err := bench.OpenDAVIS(*framesDir, *masksDir)
	if err != nil {
		return err
	}
	dev := kernels.NewCPU(*workers)
	defer dev.Close()
	run, err := bench.RunSelectClip(ctx, dev, clip, *keyframe, matte.DefaultSelectOptions())
	if err != nil {
		return err
	}
	w, h := clip.Size()
	fmt.Fprintf(stdout, "%s: %d frames %dx%d, keyframe %d (DAVIS protocol: first and last frame left out of the means)\n",
		clip.Name(), clip.Len(), w, h, *keyframe)
	fmt.Fprintln(stdout, run)
	return nil
}
