package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/vfxrender/vfx/bench/look"
	"github.com/vfxrender/vfx/codec"
)

// benchLook renders the look bench's fixed prompts on real subjects
// (DAVIS-2016 train, first frames with their masks) and prints the
// issue-15 measures as medians over subjects.
func benchLook(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench look", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataset := fs.String("dataset", "../shared/datasets/davis2016-train", "davis2016-train folder (source.mp4 and masks/ per sequence)")
	subjects := fs.String("subjects", "", "comma-separated sequence names (default: "+strings.Join(look.Subjects, ",")+")")
	sheet := fs.String("sheet", "", "write a contact sheet PNG here (rows: subjects; columns: source, each prompt, then each placement of the placement check)")
	frames := fs.Int("frames", 12, "frames per subject of the flicker check (below 2 skips it)")
	workers := fs.Int("workers", 0, "CPU compute threads (0 = all cores)")
	seed := fs.Uint("seed", 1, "render seed")
	perSubject := fs.Bool("per-subject", false, "also print every measure per subject")
	noPlate := fs.Bool("no-plate-match", false, "render without plate matching (grain, defocus, black level), for before figures")
	noFocus := fs.Bool("no-focus-match", false, "render without matched focus (the plate keeps its sharpness), for before figures")
	cameraClips := fs.String("camera-clips", strings.Join(look.CameraClips, ","), "comma-separated clips of the camera-lock check (empty skips it)")
	cameraFrames := fs.Int("camera-frames", 16, "frames per clip of the camera-lock check")
	noLock := fs.Bool("no-camera-lock", false, "render with a still plate, for before figures")
	reach := fs.Float64("contact-reach", 0, "contact shadow reach, a share of the subject's height (0 = the renderer's default)")
	noPlace := fs.Bool("no-placement-check", false, "skip the placement check (the subject placed by each of the bench's placements)")
	fitReach := fs.Bool("fit-contact-reach", false, "fit the contact reach on --subjects (default: fold A of the bench's subjects) and print the grid; renders nothing else")
	if err := fs.Parse(args); err != nil {
		return usageError{}
	}
	if !(*reach >= 0 && *reach <= 1) {
		return usageError{"--contact-reach: want a share of the height in [0, 1]"}
	}
	codec.Quiet()
	opt := look.Options{Dataset: *dataset, Sheet: *sheet, VideoFrames: *frames, Workers: *workers, Seed: uint32(*seed), NoPlateMatch: *noPlate, NoFocusMatch: *noFocus,
		CameraClips: []string{}, CameraFrames: *cameraFrames, NoCameraLock: *noLock, ContactReach: *reach,
		NoPlacement: *noPlace}
	if *cameraClips != "" {
		opt.CameraClips = strings.Split(*cameraClips, ",")
	}
	if *frames < 2 {
		opt.VideoFrames = -1
	}
	if *subjects != "" {
		opt.Subjects = strings.Split(*subjects, ",")
	}
	if *fitReach {
		fit, err := look.FitContactReach(ctx, opt, nil)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, fit)
		return nil
	}
	rep, err := look.Run(ctx, opt)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, rep)
	if *perSubject {
		fmt.Fprint(stdout, rep.PerSubject())
	}
	if *sheet != "" {
		fmt.Fprintf(stdout, "contact sheet: %s\n", *sheet)
	}
	return nil
}
