package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vfxrender/vfx/bench"
	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/kernels"
	"github.com/vfxrender/vfx/matte"
	"github.com/vfxrender/vfx/worker"
)

// maxFitTrees bounds --fit-trees (each tree is a pass over every sample).
const maxFitTrees = 1000

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"want a subcommand: fixture, ffmpeg, matte, calibrate, look or passes"}
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
	if args[0] == "calibrate" {
		return benchCalibrate(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("bench "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "out/bench", "output folder")
	w := fs.Int("width", 1920, "width (even)")
	h := fs.Int("height", 1080, "height (even)")
	n := fs.Int("frames", 240, "frames")
	seed := fs.Uint64("seed", 1, "texture seed (fixture)")
	preset := fs.String("preset", "veryfast,medium", "x264 presets, comma-separated: each is compared in turn (ffmpeg)")
	crf := fs.Int("crf", 18, "x264 CRF 1..51, given to both (ffmpeg)")
	rounds := fs.Int("rounds", 1, "alternating rounds, best kept (ffmpeg)")
	x264Params := fs.String("x264-params", worker.DefaultX264Params, "libx264 options given to both (ffmpeg)")
	fixtures := fs.String("fixtures", strings.Join(bench.FixtureNames(), ","), "fixtures, comma-separated: synthetic (a clean matte) and the photo fixtures (soft, noisy x264 mattes over plates panned over photographs; they need `apt-get install mate-backgrounds`) (ffmpeg)")
	photos := fs.String("photos", bench.DefaultPhotoDir, "folder of the photo fixtures' photographs (ffmpeg)")
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
		if *crf < 1 || *crf > 51 {
			// vfx render takes 1..51: ffmpeg's lossless --crf 0 would not be the same job.
			return usageError{fmt.Sprintf("bench ffmpeg: --crf %d: want 1..51", *crf)}
		}
		names := strings.Split(*fixtures, ",")
		for i, f := range names {
			names[i] = strings.TrimSpace(f)
			if !slices.Contains(bench.FixtureNames(), names[i]) {
				return usageError{fmt.Sprintf("bench ffmpeg: unknown fixture %q in --fixtures (want %s)", f, strings.Join(bench.FixtureNames(), ", "))}
			}
		}
		first := true
		for _, f := range names {
			for _, p := range presets {
				rep, err := bench.CompareFFmpeg(ctx, bench.CompareOptions{VFX: exe, Dir: *out, Width: *w, Height: *h,
					Frames: *n, Preset: strings.TrimSpace(p), CRF: *crf, Rounds: *rounds, X264Params: *x264Params,
					Fixture: f, PhotoDir: *photos})
				if errors.Is(err, bench.ErrNoPhotos) {
					// Say so and go on with the other fixtures.
					fmt.Fprintf(stdout, "fixture %s skipped: %v\n", f, err)
					break
				}
				if err != nil {
					return err
				}
				if !first {
					fmt.Fprintln(stdout)
				}
				first = false
				fmt.Fprintln(stdout, rep)
			}
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
	every := fs.Int("every", 0, "run the network on every k-th frame (1 = every frame) in every mode, propagating between (0 = vfx's cpu default, matte.DefaultCPUSchedule: its own step for auto and for select)")
	motion := fs.Float64("motion", matte.DefaultCPUSchedule.Motion, "the motion schedule: the share (0-1) of each frame's step between network runs that follows the picture's change (0 = the fixed schedule, every --every-th frame)")
	cache := fs.String("cache", "", "folder to keep the network's maps in, so that later runs skip the network (default: none)")
	sheet := fs.String("sheet", "", "write a contact sheet PNG of a few clips (first mode) to this file")
	sheetFrames := fs.String("sheet-frames", "", "with --sheet: these frames (comma-separated indices) of every clip run (at most 4 clips), at full size over a checkerboard by their alpha, instead of frames 0, middle and last with the errors marked")
	workers := fs.Int("workers", 0, "CPU compute threads (0 = all cores)")
	fold := fs.String("fold", "", "only the clips of development fold A or B (see bench.FoldA, bench.FoldB); combines with --clips")
	fusion := fs.String("fusion", "", "the fusion model: a JSON file written by --fit, or \"hand\" for the hand rules (default: the embedded matte/fusion.json)")
	fit := fs.String("fit", "", "fit the fusion's logistic models on the clips run (select, select-mid and auto collect samples) and write them to this JSON file")
	cropArea := fs.Float64("crop-area", 0, "run the network again on a square crop around the subject where the carried shape is under this share of the frame, e.g. 0.02 (0 = off, the default)")
	cropMargin := fs.Float64("crop-margin", 0, "the crop box's margin on each side, as a share of the shape's longer side (0 = the default)")
	band := fs.Float64("select-band", 0, "with --soft-band: select's soft band around the contour in flow pixels, beyond which the matte is 0 or 1 (0 = the default, negative = no snap, which also turns --soft-band on)")
	binaryLevel := fs.Float64("binary-level", 0, "the level at which the emitted video mattes are made 0 or 1, in (0, 1) (0 = the default, 0.5); not with --soft-band")
	softBand := fs.Bool("soft-band", false, "keep a soft band around the emitted video mattes' contour (matte.SelectOptions.Binary and AutoOptions.Binary off), as before session 18; by default each emitted matte is 0 or 1 at its 0.5 level and the refiner makes the edge")
	fitLambda := fs.Float64("fit-lambda", 1e-3, "with --fit: the L2 penalty per clip on the fitted weights")
	fitTrees := fs.Int("fit-trees", 0, fmt.Sprintf("with --fit and the select step: also boost this many regression trees (depth %d) on the fitted select weights' residuals, 0..%d (0: none)", bench.DefaultTreeOptions.Depth, maxFitTrees))
	fitDrop := fs.String("fit-drop", "", "with --fit: gate features to leave out of the gates' fits, comma-separated (their weights are 0), e.g. colour_fused_only,colour_net_only")
	fitSigns := fs.String("fit-signs", "", "with --fit: gate features whose weight is held at or above 0 (NAME+) or at or below 0 (NAME-), comma-separated, e.g. net_outside-,trust_pos+")
	fitSteps := fs.String("fit-steps", "gate", "with --fit: the models to fit, comma-separated: gate (select's and auto's frame gates), select, auto, gap (the per-pixel fusion and gap fill), mem (the memory model on select's network frames), region (which regions of the network's map keep the network's values against the memory model's, select), trees (with --fit-trees and without select: boost trees on the --fusion model's select weights, kept); the steps not fitted keep the --fusion model's weights")
	memRegions := fs.Bool("memory-regions", true, "select's memory model keeps or vetoes the network's regions whole (matte.NetOptions.MemRegions); false: pixel by pixel")
	refineRadius := fs.Int("refine-radius", 0, "the refiner's guided filter window radius in flow pixels (0 = the default, 2)")
	refineEps := fs.Float64("refine-eps", 0, "the refiner's guided filter regulariser (0 = the default, 2e-4)")
	flowLevels := fs.Int("flow-levels", 0, "the flow's pyramid levels, 1..8 (0 = the default, matte.DefaultFlowOptions)")
	flowIterations := fs.Int("flow-iterations", 0, "the flow's solver steps per pyramid level, 1..32 (0 = the default)")
	flowWindow := fs.Int("flow-window", 0, "the box radius (flow pixels) of the flow's local systems, 1..16 (0 = the default)")
	baseline := fs.String("baseline", "", "the saved output of an earlier vfx bench matte run: under each table, each mode's change against it over the clips both ran (mean and median change of J, the clips up and down by 0.005 or more, and the mean without the clip that moved most)")
	memRefind := fs.String("memory-refind", "", "on: select takes a region of the network's map away from the carried shape as the object's where the memory model's mean P(object) over it is at least one half (matte.NetOptions.MemRefind); off: never (the default)")
	memRecent := fs.Bool("memory-recent", false, "select's memory keeps the last frame the network ran on beside the keyframe (matte.NetOptions.MemRecent)")
	fillFeatures := fs.Bool("fill-features", false, "with --cache: only run the network for its feature maps (infer.Card.Features) on the frames the schedule runs it on (and the middle frame), keep them in the cache and stop")
	mf := modelFlags(fs, &env{get: os.Getenv})
	mf.features = true // the memory's features, for --fit-steps mem and --fill-features
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := mf.check(); err != nil {
		return err
	}
	if *dataset == "" {
		return usageError{"bench matte: --dataset is required"}
	}
	if *fillFeatures && *cache == "" {
		return usageError{"bench matte: --fill-features needs --cache"}
	}
	ms, err := bench.ParseMatteModes(*modes)
	if err != nil {
		return usageError{err.Error()}
	}
	if *every < 0 {
		return usageError{"bench matte: --every must be at least 1, or 0 for the cpu default"}
	}
	schedule := matte.Schedule{Every: *every, Motion: *motion}
	if *every == 0 {
		schedule = matte.DefaultCPUSchedule
		schedule.Motion = *motion
	}
	if *fold != "" && bench.FoldClips(*fold) == nil {
		return usageError{fmt.Sprintf("bench matte: --fold %q: want A or B", *fold)}
	}
	if !(*binaryLevel >= 0 && *binaryLevel < 1) || (*binaryLevel > 0 && *softBand) {
		return usageError{fmt.Sprintf("bench matte: --binary-level %v: want 0 (the default) or a level in (0, 1), without --soft-band", *binaryLevel)}
	}
	if *refineRadius < 0 || !(*refineEps >= 0) {
		return usageError{fmt.Sprintf("bench matte: --refine-radius %d, --refine-eps %v: want 0 (the default) or positive", *refineRadius, *refineEps)}
	}
	for _, f := range []struct {
		name   string
		v, top int
	}{{"flow-levels", *flowLevels, 8}, {"flow-iterations", *flowIterations, 32}, {"flow-window", *flowWindow, 16}} {
		if f.v < 0 || f.v > f.top {
			return usageError{fmt.Sprintf("bench matte: --%s %d: want 0 (the default) or 1..%d", f.name, f.v, f.top)}
		}
	}
	if *memRefind != "" && *memRefind != "on" && *memRefind != "off" {
		return usageError{fmt.Sprintf("bench matte: --memory-refind %q: want on or off", *memRefind)}
	}
	if *fitTrees < 0 || *fitTrees > maxFitTrees {
		return usageError{fmt.Sprintf("bench matte: --fit-trees %d: want 0..%d", *fitTrees, maxFitTrees)}
	}
	var base []bench.MatteRow
	if *baseline != "" {
		f, err := os.Open(*baseline)
		if err != nil {
			return usageError{fmt.Sprintf("bench matte: --baseline: %v", err)}
		}
		base, err = bench.ParseMatteRows(f)
		f.Close()
		if err != nil {
			return usageError{fmt.Sprintf("bench matte: --baseline %s: %v", *baseline, err)}
		}
	}
	var netOpts *matte.NetOptions
	switch *fusion {
	case "":
	case "hand":
		o := matte.HandNetOptions()
		netOpts = &o
	default:
		b, err := os.ReadFile(*fusion)
		if err != nil {
			return fmt.Errorf("bench matte: --fusion: %w", err)
		}
		m, err := matte.ParseFusionModel(b)
		if err != nil {
			return fmt.Errorf("bench matte: --fusion %s: %w", *fusion, err)
		}
		o := matte.DefaultNetOptions()
		o.Model = m
		netOpts = &o
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
	if *fold != "" {
		var keep []string
		for _, d := range dirs {
			if bench.FoldOf(filepath.Base(d)) == *fold {
				keep = append(keep, d)
			}
		}
		dirs = keep
	}
	if len(dirs) == 0 {
		return fmt.Errorf("bench matte: no clips to run")
	}
	codec.Quiet()
	net, card, closeNet, err := mf.load(ctx)
	if err != nil {
		return err
	}
	defer closeNet()
	dev := kernels.NewCPU(*workers)
	defer dev.Close()
	key := card.Name + "-" + card.SHA256[:12]
	if net.Int8() {
		key += "-int8"
	}
	nc := &bench.NetCache{Net: net, Dir: *cache, Key: key}
	for _, m := range ms {
		// select's memory reads the features of the frames whose maps it
		// fuses: one run gives both.
		nc.WithFeatures = nc.WithFeatures || m == bench.SelectFirst || m == bench.SelectMiddle || m == bench.SelectInverse
	}
	if *fillFeatures {
		sched := schedule.ForSelect()
		for _, d := range dirs {
			clip, err := bench.OpenDAVISVideo(ctx, d)
			if err != nil {
				return err
			}
			n := clip.Len()
			for i := 0; i < n; i++ {
				if sched.Runs(i, n, n/2) {
					if _, err := nc.Features(ctx, clip, i); err != nil {
						return err
					}
				}
			}
			nc.Forget(clip)
			fmt.Fprintf(stdout, "%s: %d frames, %d feature runs so far (%.2f s a run)\n", clip.Name(), n, nc.FeatRuns, nc.Spent.Seconds()/max(float64(nc.FeatRuns), 1))
		}
		return nil
	}
	keep := map[string]bool{}
	var frames []int
	if *sheetFrames != "" {
		for _, f := range strings.Split(*sheetFrames, ",") {
			i, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || i < 0 {
				return usageError{fmt.Sprintf("bench matte: --sheet-frames %q: want frame indices", *sheetFrames)}
			}
			frames = append(frames, i)
		}
		if *sheet == "" || len(dirs) > 4 {
			return usageError{"bench matte: --sheet-frames needs --sheet and at most 4 clips"}
		}
	}
	if *sheet != "" {
		for _, i := range []int{0, len(dirs) / 3, 2 * len(dirs) / 3, len(dirs) - 1} {
			keep[filepath.Base(dirs[i])] = true
		}
	}
	if *memRecent || !*memRegions || *binaryLevel != 0 || *memRefind != "" {
		o := matte.DefaultNetOptions()
		if netOpts != nil {
			o = *netOpts
		}
		if *memRefind != "" {
			o.MemRefind = *memRefind == "on"
		}
		o.MemRecent = *memRecent
		o.MemRegions = *memRegions
		o.BinaryLevel = float32(*binaryLevel)
		netOpts = &o
	}
	cfg := bench.RealMatteConfig{Modes: ms, Schedule: schedule, Net: nc, Keep: keep, NetOptions: netOpts, SelectBand: float32(*band), Soft: *softBand, RefineRadius: *refineRadius, RefineEps: float32(*refineEps), FlowLevels: *flowLevels, FlowIterations: *flowIterations, FlowWindow: *flowWindow, CropArea: *cropArea, CropMargin: *cropMargin}
	if *fit != "" {
		cfg.Fit = &bench.FitData{Stride: 4, Steps: map[string]bool{}, Trees: *fitTrees}
		for _, st := range strings.Split(*fitSteps, ",") {
			switch st = strings.TrimSpace(st); st {
			case "gate", "select", "trees", "auto", "gap", "mem", "region":
				cfg.Fit.Steps[st] = true
			default:
				return usageError{fmt.Sprintf("bench matte: --fit-steps: unknown step %q (want gate, select, trees, auto, gap, mem or region)", st)}
			}
		}
		if st := cfg.Fit.Steps; (*fitTrees > 0 && !st["select"] && !st["trees"]) || (st["trees"] && *fitTrees == 0) {
			return usageError{fmt.Sprintf("bench matte: --fit-trees %d with --fit-steps %s: trees need the select or the trees step, and the trees step needs --fit-trees", *fitTrees, *fitSteps)}
		}
		for _, name := range strings.Split(*fitDrop, ",") {
			if name = strings.TrimSpace(name); name == "" {
				continue
			}
			k := slices.Index(matte.GateFeatureNames[:], name)
			if k <= 0 {
				return usageError{fmt.Sprintf("bench matte: --fit-drop: unknown gate feature %q (want one of %s)", name, strings.Join(matte.GateFeatureNames[1:], ", "))}
			}
			cfg.Fit.DropGate = append(cfg.Fit.DropGate, k)
		}
		if *fitSigns != "" {
			cfg.Fit.GateSigns = make([]int8, matte.NumGateFeatures)
		}
		for _, f := range strings.Split(*fitSigns, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			sign := int8(1)
			if strings.HasSuffix(f, "-") {
				sign = -1
			}
			name := strings.TrimRight(f, "+-")
			k := slices.Index(matte.GateFeatureNames[:], name)
			if k <= 0 || len(name) == len(f) {
				return usageError{fmt.Sprintf("bench matte: --fit-signs: %q is not a gate feature followed by + or - (features: %s)", f, strings.Join(matte.GateFeatureNames[1:], ", "))}
			}
			cfg.Fit.GateSigns[k] = sign
		}
	}
	sched := fmt.Sprintf("network every %d frame(s)", schedule.Every)
	if sel := schedule.ForSelect().Every; sel != schedule.Every {
		sched = fmt.Sprintf("network every %d frame(s), select's every %d", schedule.Every, sel)
	}
	if *motion > 0 {
		sched = fmt.Sprintf("network on as many frames as every %d (select's %d), placed by motion %.2f", schedule.Every, schedule.ForSelect().Every, *motion)
	}
	prec := "fp32"
	if net.Int8() {
		prec = "8-bit"
	}
	fmt.Fprintf(stdout, "model %s (%s, %s), %s, %d clips from %s (DAVIS protocol: first and last frame left out of each clip's means)\n",
		card.Name, card.Licence, prec, sched, len(dirs), *dataset)
	fmt.Fprintf(stdout, "%-18s %-10s %4s %6s %6s %7s %8s %6s %7s %7s %7s %9s %5s\n", "clip", "mode", "fold", "J", "F", "decay", "flicker%", "copyJ", "inner%", "half%", "frames", "matte f/s", "crops")
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
			fmt.Fprintf(stdout, "%-18s %-10s %4s %6.3f %6.3f %+7.3f %8.2f %6.3f %7.2f %7.2f %7d %9s %5d\n", r.Clip, r.Mode, bench.FoldOf(r.Clip), r.Scores.J, r.Scores.F,
				r.Scores.JDecay, r.Scores.Flicker, r.CopyJ, r.Scores.Interior, r.Scores.Half, r.Frames, rate(float64(r.Frames), r.Matte.Seconds()), r.CropRuns)
		}
		if keep[clip.Name()] && len(rs) > 0 && len(rs[0].Mattes) > 0 {
			r := rs[0]
			var row []bench.SheetTile
			pick := []int{0, len(r.Mattes) / 2, len(r.Mattes) - 1}
			if frames != nil {
				pick = nil
				for _, i := range frames {
					if i < len(r.Mattes) {
						pick = append(pick, i)
					}
				}
			}
			for _, i := range pick {
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
	fmt.Fprintf(stdout, "crops around small subjects: %d asked for, %d run (the rest from the cache), %.2f s a run\n", nc.Crops, nc.CropRuns,
		nc.CropSpent.Seconds()/max(float64(nc.CropRuns), 1))
	for _, part := range []struct{ name, fold string }{{"all", ""}, {"fold A", "A"}, {"fold B", "B"}} {
		var rs []bench.ClipResult
		for _, r := range all {
			if part.fold == "" || bench.FoldOf(r.Clip) == part.fold {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 || (part.fold != "" && len(rs) == len(all)) {
			continue
		}
		fmt.Fprintf(stdout, "\n%s:\n", part.name)
		fmt.Fprintf(stdout, "%-10s %5s %6s %6s %7s %8s %6s %7s %7s %9s %8s %6s  %s\n", "mode", "clips", "J", "F", "decay", "flicker%", "copyJ", "inner%", "half%", "matte f/s", "net/frm", "crops", "below copy")
		for _, s := range bench.Summarise(rs) {
			fps := "–" // the net modes do no matte work
			if s.FramesPerSecond > 0 {
				fps = fmt.Sprintf("%.1f", s.FramesPerSecond)
			}
			fmt.Fprintf(stdout, "%-10s %5d %6.3f %6.3f %+7.3f %8.2f %6.3f %7.2f %7.2f %9s %8.2f %6d  %v\n", s.Mode, s.Clips, s.J, s.F, s.Decay, s.Flicker, s.CopyJ,
				s.Interior, s.Half, fps, float64(s.NetRuns)/float64(s.Frames), s.CropRuns, s.BelowCopy)
		}
		printSelectOnNet(stdout, rs)
		if base != nil {
			printBaseline(stdout, *baseline, bench.CompareMatteRows(base, rs))
		}
	}
	if cfg.Fit != nil {
		// One model on every clip run (FILE), and, when the run holds
		// clips of both folds, one per fold (FILE with -A, -B before the
		// extension) to validate on the other fold.
		parts := []struct{ suffix, fold string }{{"", ""}}
		var inA, inB bool
		for _, d := range dirs {
			inA = inA || bench.FoldOf(filepath.Base(d)) == "A"
			inB = inB || bench.FoldOf(filepath.Base(d)) == "B"
		}
		if inA && inB {
			parts = append(parts, struct{ suffix, fold string }{"-A", "A"}, struct{ suffix, fold string }{"-B", "B"})
		}
		for _, part := range parts {
			data, used := cfg.Fit, dirs
			if part.fold != "" {
				used = nil
				for _, d := range dirs {
					if bench.FoldOf(filepath.Base(d)) == part.fold {
						used = append(used, d)
					}
				}
				data = cfg.Fit.Subset(bench.FoldClips(part.fold))
			}
			// The model the run used: the steps not fitted keep its weights.
			base := matte.DefaultNetOptions().Model
			if netOpts != nil {
				base = netOpts.Model
			}
			if base != nil {
				data.Base = base.Select
			}
			m, err := bench.FitFusion(data, *fitLambda)
			if err != nil {
				return err
			}
			if len(m.SelectTrees) > 0 {
				fmt.Fprintf(stdout, "select%s: log loss on its samples %.5f with the weights, %.5f with %d trees\n", part.suffix,
					bench.LogLossTrees(&data.Select, m.Select, nil), bench.LogLossTrees(&data.Select, m.Select, m.SelectTrees), len(m.SelectTrees))
			}
			if base != nil && !data.Wants("select") && !data.Wants("trees") {
				m.SelectTrees = base.SelectTrees
			}
			if base != nil {
				for _, st := range []struct {
					step     string
					dst, src *[]float64
				}{{"select", &m.Select, &base.Select}, {"auto", &m.Auto, &base.Auto}, {"gap", &m.Gap, &base.Gap},
					{"gate", &m.Gate, &base.Gate}, {"gate", &m.GateAuto, &base.GateAuto}, {"mem", &m.Mem, &base.Mem}, {"region", &m.Region, &base.Region}} {
					if !data.Wants(st.step) {
						*st.dst = *st.src
					}
				}
			}
			m.FittedBy = "vfx bench matte " + strings.Join(args, " ")
			m.Data = fmt.Sprintf("%d clips (%s): %d select samples, %d auto samples, %d gap samples (every %d-th pixel in x and y at the flow size, twice that between network frames); %d select gate and %d auto gate samples (network frames where the fused matte and the network's map differ in IoU with the truth by 0.002 or more, weighted by that difference); %d memory samples (select's network frames, every %d-th pixel); %d region samples (one per region of the network's map on select's network frames, weighted by its share of the frame, labelled with its share inside the true matte)",
				len(used), clipNames(used), data.Select.Len(), data.Auto.Len(), data.Gap.Len(), data.Stride, data.Gate.Len(), data.GateAuto.Len(), data.Mem.Len(), data.Stride, data.Region.Len())
			b, err := json.MarshalIndent(m, "", "  ")
			if err != nil {
				return err
			}
			file := strings.TrimSuffix(*fit, filepath.Ext(*fit)) + part.suffix + filepath.Ext(*fit)
			if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
				return fmt.Errorf("bench matte: --fit: %w", err)
			}
			fmt.Fprintf(stdout, "fitted fusion model written to %s (%d clips; select %d, auto %d, gap %d, gate %d, auto gate %d, memory %d, region %d samples)\n", file, len(used),
				data.Select.Len(), data.Auto.Len(), data.Gap.Len(), data.Gate.Len(), data.GateAuto.Len(), data.Mem.Len(), data.Region.Len())
		}
	}
	if *sheet != "" && len(rows) > 0 {
		write := bench.WriteSheet
		if frames != nil {
			write = bench.WriteAlphaSheet
		}
		if err := write(*sheet, rows); err != nil {
			return err
		}
		if frames != nil {
			fmt.Fprintf(stdout, "contact sheet (%s; full size, each frame over a grey checkerboard by its alpha): %s\n", ms[0], *sheet)
		} else {
			fmt.Fprintf(stdout, "contact sheet (%s; darkened = background, red = missed, blue = added): %s\n", ms[0], *sheet)
		}
	}
	return nil
}

// printBaseline prints each mode's change against the --baseline run.
func printBaseline(w io.Writer, file string, ds []bench.MatteDelta) {
	if len(ds) == 0 {
		fmt.Fprintf(w, "against %s: no clip and mode in common\n", file)
		return
	}
	fmt.Fprintf(w, "against %s (clips up / down: J moved by %.3f or more):\n", file, bench.DeltaStep)
	fmt.Fprintf(w, "%-10s %5s %7s %7s %9s %4s %5s  %s\n", "mode", "clips", "dJ", "dF", "median dJ", "up", "down", "moved most (dJ); mean dJ of the others")
	for _, d := range ds {
		fmt.Fprintf(w, "%-10s %5d %+7.3f %+7.3f %+9.3f %4d %5d  %s (%+.3f); %+.3f\n", d.Mode, d.Clips, d.DJ, d.DF, d.MedianDJ, d.Up, d.Down, d.Top, d.TopDJ, d.DJWithoutTop)
	}
}

// clipNames lists the base names of clip folders, comma-separated.
func clipNames(dirs []string) string {
	var n []string
	for _, d := range dirs {
		n = append(n, filepath.Base(d))
	}
	return strings.Join(n, ",")
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

// printSelectOnNet compares select with net-select on the same frames
// (the network's: ClipResult.SelectOnNet), when the run had both modes:
// the means and the clips where select is more than 0.03 below.
func printSelectOnNet(w io.Writer, rs []bench.ClipResult) {
	var n int
	var sel, net float64
	var below []string
	for _, r := range rs {
		if r.Mode != bench.NetSelect || r.SelectOnNet == nil {
			continue
		}
		n++
		sel += r.SelectOnNet.J
		net += r.Scores.J
		if d := r.SelectOnNet.J - r.Scores.J; d < -0.03 {
			below = append(below, fmt.Sprintf("%s %+.3f", r.Clip, d))
		}
	}
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "select on net-select's frames (the network's), %d clips: J %.3f against net-select %.3f; more than 0.03 below: %v\n",
		n, sel/float64(n), net/float64(n), below)
}
