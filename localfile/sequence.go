package localfile

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/vfxrender/vfx/codec"
)

// seqExts are the file name endings of a folder's frames.
var seqExts = map[string]bool{".exr": true, ".png": true, ".jpg": true, ".jpeg": true, ".webp": true}

// printfFrame is a printf frame-number field: %d or %0Nd.
var printfFrame = regexp.MustCompile(`%(0?\d*)d`)

// SequenceFiles returns the frames of an image-sequence source, in order:
// for a printf pattern (shot.%04d.exr) the existing files it names, by
// frame number; for a folder its .exr, .png, .jpg, .jpeg and .webp files,
// by name. ok is false for a plain path (a file, or one that does not
// exist and is no pattern).
func SequenceFiles(path string) (files []string, ok bool, err error) {
	if loc := printfFrame.FindStringIndex(filepath.Base(path)); loc != nil {
		dir, base := filepath.Split(path)
		if dir == "" {
			dir = "."
		}
		pre, post := base[:loc[0]], base[loc[1]:]
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, true, fmt.Errorf("%s: source: %s: %w; check the path", CodeFileNotFound, dir, err)
		}
		type numbered struct {
			n    int
			path string
		}
		var got []numbered
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasPrefix(name, pre) || !strings.HasSuffix(name, post) || len(name) <= len(pre)+len(post) {
				continue
			}
			num := name[len(pre) : len(name)-len(post)]
			n, err := strconv.Atoi(num)
			if err != nil || n < 0 || num[0] == '+' {
				continue
			}
			got = append(got, numbered{n, filepath.Join(dir, name)})
		}
		sort.Slice(got, func(i, j int) bool { return got[i].n < got[j].n })
		for _, g := range got {
			files = append(files, g.path)
		}
		if len(files) == 0 {
			return nil, true, fmt.Errorf("%s: no file matches %s; check the pattern (printf style: shot.%%04d.exr)", CodeFileNotFound, path)
		}
		return files, true, nil
	}
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return nil, false, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, true, fmt.Errorf("%s: %s: %w", CodeFileNotFound, path, err)
	}
	for _, e := range entries {
		if !e.IsDir() && seqExts[strings.ToLower(filepath.Ext(e.Name()))] {
			files = append(files, filepath.Join(path, e.Name()))
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, true, fmt.Errorf("%s: %s is a folder with no .exr, .png, .jpg or .webp frames; name a file or a folder of frames", CodeFileNotFound, path)
	}
	return files, true, nil
}

// ParseFPS reads a frame rate: "24", "25", "23.976" (24000/1001),
// "29.97", "59.94" or "30000/1001".
func ParseFPS(s string) (codec.Rational, error) {
	if num, den, ok := strings.Cut(s, "/"); ok {
		n, err1 := strconv.Atoi(num)
		d, err2 := strconv.Atoi(den)
		if err1 != nil || err2 != nil || n <= 0 || d <= 0 {
			return codec.Rational{}, fmt.Errorf("--fps %q: want a number or N/D", s)
		}
		return codec.Rational{Num: n, Den: d}, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f > 0) || f > 240 {
		return codec.Rational{}, fmt.Errorf("--fps %q: want a number in (0, 240] or N/D", s)
	}
	for _, ntsc := range []int{24, 30, 48, 60, 120} {
		if r := float64(ntsc) * 1000 / 1001; f != float64(ntsc) && f > r-0.006 && f < r+0.006 {
			return codec.Rational{Num: ntsc * 1000, Den: 1001}, nil
		}
	}
	if f == float64(int(f)) {
		return codec.Rational{Num: int(f), Den: 1}, nil
	}
	return codec.Rational{Num: int(f*1000 + 0.5), Den: 1000}, nil
}

// Sequences turns image-sequence sources (a printf pattern or a
// folder of frames, for the source and a custom matte) into lossless
// H.264 videos in dir, and returns the paths to render from. Other paths
// are returned as they are.
func Sequences(ctx context.Context, files map[string]string, fps codec.Rational, dir string, w io.Writer) (map[string]string, error) {
	out := make(map[string]string, len(files))
	for what, p := range files {
		out[what] = p
		frames, ok, err := SequenceFiles(p)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		dst := filepath.Join(dir, what+"-sequence.mp4")
		if err := codec.WriteSequenceVideo(ctx, frames, dst, codec.DefaultLimits(), codec.SequenceOptions{FrameRate: fps, Gray: what == "alpha"}); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		fmt.Fprintf(w, "sequence: %s %s: %d frames at %s fps (%s … %s)\n", what, p, len(frames), fps, filepath.Base(frames[0]), filepath.Base(frames[len(frames)-1]))
		out[what] = dst
	}
	return out, nil
}
