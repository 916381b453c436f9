package media

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/job"
)

// pngFrame encodes a w x h PNG (16-bit grey when deep), its level v.
func pngFrame(t *testing.T, w, h int, v uint8, deep bool) []byte {
	t.Helper()
	var img image.Image
	if deep {
		g := image.NewGray16(image.Rect(0, 0, w, h))
		for i := range g.Pix {
			g.Pix[i] = v
		}
		img = g
	} else {
		g := image.NewNRGBA(image.Rect(0, 0, w, h))
		for i := 0; i < len(g.Pix); i += 4 {
			g.Pix[i], g.Pix[i+1], g.Pix[i+2], g.Pix[i+3] = v, 255-v, v/2, 255
		}
		img = g
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// member is one archive entry to write.
type member struct {
	name string
	data []byte
	mode fs.FileMode // 0: a regular file
	link string      // tar link target
	typ  byte        // tar type flag (0: from mode)
	// store writes the ZIP entry uncompressed.
	store bool
}

func frames(t *testing.T, n, w, h int) []member {
	t.Helper()
	var ms []member
	for i := range n {
		ms = append(ms, member{name: fmt.Sprintf("shot/shot.%04d.png", 1001+i), data: pngFrame(t, w, h, uint8(i*7), i%2 == 1)})
	}
	return ms
}

func writeZip(t *testing.T, path string, ms []member) string {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, m := range ms {
		h := &zip.FileHeader{Name: m.name, Method: zip.Deflate}
		if m.store {
			h.Method = zip.Store
		}
		if m.mode != 0 {
			h.SetMode(m.mode)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeTar(t *testing.T, path string, ms []member) string {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, m := range ms {
		h := &tar.Header{Name: m.name, Size: int64(len(m.data)), Mode: 0o644, Typeflag: tar.TypeReg, Linkname: m.link, Format: tar.FormatPAX}
		if m.typ != 0 {
			h.Typeflag, h.Size = m.typ, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write(m.data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestArchiveGood: a ZIP and a TAR of 8 and 16-bit PNG frames (with a
// folder, a __MACOSX resource fork and a hidden file beside them) are read
// from their index as a video of their frames in name order, at the first
// frame's size; extraction writes exactly those frames, under names of its
// own, byte for byte.
func TestArchiveGood(t *testing.T) {
	dir := t.TempDir()
	ms := frames(t, 5, 64, 48)
	ms[0], ms[3] = ms[3], ms[0] // out of order in the archive
	extra := []member{{name: "shot/", mode: fs.ModeDir | 0o755, typ: tar.TypeDir}, {name: "__MACOSX/shot/._shot.1001.png", data: []byte("x")},
		{name: "shot/.DS_Store", data: []byte("x")}}
	for _, c := range []struct {
		name, path string
	}{
		{"zip", writeZip(t, filepath.Join(dir, "f.zip"), append(extra, ms...))},
		{"tar", writeTar(t, filepath.Join(dir, "f.tar"), append(extra, ms...))},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := codec.FileInput(c.path)
			if f, err := SniffArchive(in); err != nil || f != c.name {
				t.Fatalf("SniffArchive: %q, %v", f, err)
			}
			a, err := InspectArchive(context.Background(), in, codec.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Frames) != 5 || a.Width != 64 || a.Height != 48 || a.Ext != ".png" || a.Frames[0].Name != "shot/shot.1001.png" || a.Frames[4].Name != "shot/shot.1005.png" {
				t.Fatalf("archive %+v", a)
			}
			m, err := Check(context.Background(), Inputs{JobRequest: job.JobRequest{GenerationType: "video", AlphaMode: "fill"}, Source: &in}, codec.DefaultLimits())
			if err != nil || m.Frames() != 5 || m.Source.DisplayWidth != 64 {
				t.Fatalf("Check: %+v, %v", m.Source, err)
			}
			if _, err := Check(context.Background(), Inputs{JobRequest: job.JobRequest{GenerationType: "image", AlphaMode: "fill"}, Source: &in}, codec.DefaultLimits()); job.CodeOf(err) != job.CodeInvalidFileFormat {
				t.Errorf("an archive for an image job: %v, want INVALID_FILE_FORMAT", err)
			}
			out := t.TempDir()
			paths, err := ExtractArchive(context.Background(), in, a, out)
			if err != nil {
				t.Fatal(err)
			}
			entries, _ := os.ReadDir(out)
			if len(paths) != 5 || len(entries) != 5 {
				t.Fatalf("extracted %v, folder holds %d entries", paths, len(entries))
			}
			want := map[string][]byte{}
			for _, m := range ms {
				want[m.name] = m.data
			}
			for i, p := range paths {
				got, _ := os.ReadFile(p)
				if filepath.Base(p) != fmt.Sprintf("frame.%06d.png", i) || !bytes.Equal(got, want[a.Frames[i].Name]) {
					t.Errorf("frame %d: %s, %d bytes; want frame.%06d.png holding %s", i, p, len(got), i, a.Frames[i].Name)
				}
			}
		})
	}
}

// TestArchiveLimits: the frame count at the limit (240) passes and one
// more is VIDEO_TOO_MANY_FRAMES; a first frame of exactly the pixel limit
// passes and one of a row more is SOURCE_TOO_LARGE; all from the index and
// the first frame's header.
func TestArchiveLimits(t *testing.T) {
	dir := t.TempDir()
	lim := codec.DefaultLimits()
	tiny := pngFrame(t, 16, 16, 9, false)
	many := func(n int) []member {
		ms := make([]member, n)
		for i := range ms {
			ms[i] = member{name: fmt.Sprintf("f%04d.png", i), data: tiny}
		}
		return ms
	}
	for _, c := range []struct {
		name string
		ms   []member
		code job.Code
		msg  string
	}{
		{"240 frames", many(lim.MaxFrames), "", ""},
		{"241 frames", many(lim.MaxFrames + 1), job.CodeVideoTooManyFrames, "241 frames, over the limit of 240"},
		{"2770x1000 pixels", []member{{name: "a.png", data: pngFrame(t, 2770, 1000, 1, false)}}, "", ""},
		{"2770x1001 pixels", []member{{name: "a.png", data: pngFrame(t, 2770, 1001, 1, false)}}, job.CodeSourceTooLarge, "2770x1001 (2772770 pixels), over the limit of 2770000"},
		{"aspect 4:1", []member{{name: "a.png", data: pngFrame(t, 400, 100, 1, false)}}, "", ""},
		{"aspect over 4:1", []member{{name: "a.png", data: pngFrame(t, 402, 100, 1, false)}}, job.CodeExtremeAspectRatio, "aspect ratio 4.02:1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range []string{writeZip(t, filepath.Join(dir, "a.zip"), c.ms), writeTar(t, filepath.Join(dir, "a.tar"), c.ms)} {
				a, err := InspectArchive(context.Background(), codec.FileInput(p), lim)
				if job.CodeOf(err) != c.code || (err != nil && !strings.Contains(err.Error(), c.msg)) {
					t.Errorf("%s: %v; want code %q naming %q", filepath.Ext(p), err, c.code, c.msg)
				}
				if c.code == "" && len(a.Frames) != len(c.ms) {
					t.Errorf("%s: %d frames, want %d", filepath.Ext(p), len(a.Frames), len(c.ms))
				}
			}
		})
	}
}

// TestArchiveRefused: every refusal, with its code and its message, from
// the index, before anything is extracted (the extraction folder stays
// empty because nothing reaches it).
func TestArchiveRefused(t *testing.T) {
	dir := t.TempDir()
	ok := pngFrame(t, 64, 48, 3, false)
	good := member{name: "f.0001.png", data: ok}
	bomb := bytes.Repeat([]byte{0}, 4<<20) // deflates over 1000:1
	big := bytes.Repeat([]byte{1}, 1<<20+16<<10+1)
	dirs := make([]member, 0, 305)
	for i := range 305 {
		dirs = append(dirs, member{name: fmt.Sprintf("d%03d/", i), mode: fs.ModeDir | 0o755, typ: tar.TypeDir})
	}
	cases := []struct {
		name string
		zip  []member // nil: not tried as a ZIP
		tar  []member // nil: not tried as a TAR
		code job.Code
		msg  string
	}{
		{"absolute path", []member{good, {name: "/etc/f.0002.png", data: ok}}, []member{good, {name: "/etc/f.0002.png", data: ok}},
			job.CodeInvalidArchive, "/etc/f.0002.png is an absolute path"},
		{"dot dot", []member{good, {name: "../f.0002.png", data: ok}}, []member{good, {name: "../f.0002.png", data: ok}},
			job.CodeInvalidArchive, "../f.0002.png leads out of its folder (..)"},
		{"dot dot inside", []member{good, {name: "a/../../f.0002.png", data: ok}}, []member{good, {name: "a/../../f.0002.png", data: ok}},
			job.CodeInvalidArchive, "leads out of its folder"},
		{"backslash", []member{good, {name: `..\f.0002.png`, data: ok}}, nil, job.CodeInvalidArchive, "holds a backslash"},
		{"drive letter", []member{good, {name: "C:/f.0002.png", data: ok}}, nil, job.CodeInvalidArchive, "starts with a drive letter"},
		{"symlink", []member{good, {name: "f.0002.png", data: []byte("/etc/passwd"), mode: fs.ModeSymlink | 0o777}},
			[]member{good, {name: "f.0002.png", link: "/etc/passwd", typ: tar.TypeSymlink}}, job.CodeInvalidArchive, "f.0002.png is a symbolic link"},
		{"hard link", nil, []member{good, {name: "f.0002.png", link: "f.0001.png", typ: tar.TypeLink}}, job.CodeInvalidArchive, "f.0002.png is a hard link"},
		{"zip bomb", []member{good, {name: "f.0002.png", data: bomb}}, nil, job.CodeInvalidArchive, "a ratio over 100:1 (a zip bomb?)"},
		{"frame over the frame bound", []member{good, {name: "f.0002.png", data: big, store: true}}, []member{good, {name: "f.0002.png", data: big}},
			job.CodeInvalidArchive, "declares 1064961 bytes, more than a frame within the limit of 1000 pixels can take (1064576)"},
		{"too many entries", append(dirs, good), append(dirs, good), job.CodeInvalidArchive, "(240 frames and 64 others)"},
		{"twice", []member{good, good}, []member{good, good}, job.CodeInvalidArchive, "f.0001.png appears twice"},
		{"not a frame", []member{good, {name: "notes.txt", data: []byte("hi")}}, []member{good, {name: "notes.txt", data: []byte("hi")}},
			job.CodeInvalidFileFormat, "notes.txt is not a .png or .exr frame"},
		{"mixed", []member{good, {name: "f.0002.exr", data: ok}}, []member{good, {name: "f.0002.exr", data: ok}},
			job.CodeInvalidFileFormat, "mixes .png and .exr frames"},
		{"no frame", []member{{name: "a/", mode: fs.ModeDir | 0o755}}, []member{{name: "a/", typ: tar.TypeDir}}, job.CodeInvalidFileFormat, "no .png or .exr frame"},
		{"first frame not a PNG", []member{{name: "f.0001.png", data: []byte("not a png, only text")}}, nil, job.CodeInvalidFileFormat, "first frame f.0001.png: not a PNG"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lim := codec.DefaultLimits()
			if c.name == "frame over the frame bound" {
				lim.MaxPixels = 1000
			}
			for _, p := range []string{"a.zip", "a.tar"} {
				ms := c.zip
				if p == "a.tar" {
					ms = c.tar
				}
				if ms == nil {
					continue
				}
				path := filepath.Join(dir, p)
				if p == "a.zip" {
					writeZip(t, path, ms)
				} else {
					writeTar(t, path, ms)
				}
				_, err := InspectArchive(context.Background(), codec.FileInput(path), lim)
				if job.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.msg) {
					t.Errorf("%s: %v; want %s naming %q", p, err, c.code, c.msg)
				}
			}
		})
	}
}

// TestArchiveExtractHoldsDeclared: an entry holding more bytes than its
// declared size (an index patched after writing) is refused on extraction
// with INVALID_ARCHIVE, not written out in full.
func TestArchiveExtractHoldsDeclared(t *testing.T) {
	dir := t.TempDir()
	data := pngFrame(t, 64, 48, 5, false)
	path := writeTar(t, filepath.Join(dir, "a.tar"), []member{{name: "f.0001.png", data: data}})
	a, err := InspectArchive(context.Background(), codec.FileInput(path), codec.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	a.Frames[0].Size = 100 // as if the index had said 100 bytes
	out := t.TempDir()
	if _, err := ExtractArchive(context.Background(), codec.FileInput(path), a, out); job.CodeOf(err) != job.CodeInvalidArchive ||
		!strings.Contains(err.Error(), "holds more than the 100 bytes it declares") {
		t.Errorf("%v; want INVALID_ARCHIVE naming the declared size", err)
	}
}

// TestArchiveEXR: a ZIP of EXR frames is read at the size its headers
// give (the data window), and extracted frame for frame.
func TestArchiveEXR(t *testing.T) {
	dir := t.TempDir()
	var ms []member
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("e%d.exr", i))
		w, h := 40, 30
		ch := make([][]float32, 3)
		for c := range ch {
			ch[c] = make([]float32, w*h)
			for k := range ch[c] {
				ch[c][k] = float32(k%w) / float32(w) * float32(c+i+1) / 4
			}
		}
		if err := codec.WriteEXR(context.Background(), p, codec.EXRImage{Width: w, Height: h, Channels: ch, Chromaticities: codec.Rec709Chromaticities}); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		ms = append(ms, member{name: fmt.Sprintf("plate/plate.%04d.exr", 1001+i), data: b})
	}
	in := codec.FileInput(writeZip(t, filepath.Join(dir, "e.zip"), ms))
	a, err := InspectArchive(context.Background(), in, codec.DefaultLimits())
	if err != nil || len(a.Frames) != 3 || a.Ext != ".exr" || a.Width != 40 || a.Height != 30 {
		t.Fatalf("%+v, %v; want 3 EXR frames of 40x30", a, err)
	}
	paths, err := ExtractArchive(context.Background(), in, a, t.TempDir())
	if err != nil || len(paths) != 3 || !strings.HasSuffix(paths[2], "frame.000002.exr") {
		t.Fatalf("%v, %v", paths, err)
	}
	if got, _ := os.ReadFile(paths[1]); !bytes.Equal(got, ms[1].data) {
		t.Error("frame 1 differs from plate.1002.exr")
	}
}

// TestArchiveInsecurePathSetting: with GODEBUG=zipinsecurepath=0, where
// archive/zip itself flags such names, an unsafe name is still refused by
// its own rule and message (not as an unreadable ZIP).
func TestArchiveInsecurePathSetting(t *testing.T) {
	t.Setenv("GODEBUG", "zipinsecurepath=0")
	path := writeZip(t, filepath.Join(t.TempDir(), "a.zip"), []member{{name: "f.0001.png", data: pngFrame(t, 64, 48, 1, false)},
		{name: "../f.0002.png", data: pngFrame(t, 64, 48, 2, false)}})
	_, err := InspectArchive(context.Background(), codec.FileInput(path), codec.DefaultLimits())
	if job.CodeOf(err) != job.CodeInvalidArchive || !strings.Contains(err.Error(), "../f.0002.png leads out of its folder") {
		t.Errorf("%v; want INVALID_ARCHIVE naming ../f.0002.png", err)
	}
}
