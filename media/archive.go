package media

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/vfxrender/vfx/codec"
	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/job"
)

// Frame archives: a ZIP or TAR of PNG (8 or 16-bit) or EXR frames given as
// a video source. The archive is judged from its index (the ZIP central
// directory, the TAR headers, whose entries' data is skipped by seeking)
// and the first frame's header before anything is extracted; extraction
// then writes the frames under names of its own in the job's folder,
// never under the names the archive gives.
const (
	// ArchiveZip and ArchiveTar are the archive formats.
	ArchiveZip = "zip"
	ArchiveTar = "tar"
	// ArchiveMaxRatio bounds a ZIP entry's declared size over its
	// compressed size. PNG and EXR frames are compressed already (a ZIP of
	// them shrinks by a few per cent); a larger ratio is a zip bomb.
	ArchiveMaxRatio = 100
	// ArchiveMaxBytes bounds the declared unpacked size of all the frames.
	ArchiveMaxBytes = 4 << 30
	// ArchiveExtraEntries is how many entries an archive may hold beyond
	// its frames (folders, __MACOSX/ and hidden files, which are skipped).
	ArchiveExtraEntries = 64
	// archiveHeadBytes is how much of the first frame is read for its size
	// (a PNG's IHDR, an EXR's header).
	archiveHeadBytes = 64 << 10
)

// ArchiveMaxFrameBytes bounds one frame's declared size: what a frame
// within the pixel limit can take (four float32 channels, uncompressed,
// and 1 MiB of header).
func ArchiveMaxFrameBytes(lim codec.Limits) int64 {
	return int64(lim.MaxPixels)*16 + 1<<20
}

// ArchiveFormat names the archive format of content from its leading
// bytes (at least 262 for a TAR), or "".
func ArchiveFormat(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return ArchiveZip
	case len(head) >= 262 && string(head[257:262]) == "ustar":
		return ArchiveTar
	}
	return ""
}

// ArchiveFrame is one frame of an archive: its name there and its
// declared size.
type ArchiveFrame struct {
	Name string
	Size int64
}

// Archive is a frame archive judged from its index.
type Archive struct {
	Format string // ArchiveZip or ArchiveTar
	Ext    string // ".png" or ".exr": every frame has it
	// Frames are the frames in order (by name, as a folder of frames is
	// read).
	Frames        []ArchiveFrame
	Width, Height int // the first frame's
}

// Info is the archive as a probed video source: KindVideo, its frame
// count and the first frame's size.
func (a Archive) Info() codec.Info {
	return codec.Info{Kind: codec.KindVideo, Container: a.Format, Frames: len(a.Frames), Width: a.Width, Height: a.Height,
		DisplayWidth: a.Width, DisplayHeight: a.Height}
}

// archiveErr is an INVALID_ARCHIVE refusal.
func archiveErr(format string, args ...any) error {
	return job.Errorf(job.CodeInvalidArchive, "source archive: "+format, args...)
}

// readerAt serves ReadAt from a ReadSeeker (one call at a time).
type readerAt struct {
	mu sync.Mutex
	r  io.ReadSeeker
}

func (ra *readerAt) ReadAt(p []byte, off int64) (int, error) {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if _, err := ra.r.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	return io.ReadFull(ra.r, p)
}

// openInput opens a codec input for reading and returns its size.
func openInput(in codec.Input) (io.ReadSeekCloser, int64, error) {
	var rc io.ReadSeekCloser
	if in.Open != nil {
		r, err := in.Open()
		if err != nil {
			return nil, 0, err
		}
		rc = r
	} else {
		f, err := os.Open(in.Path)
		if err != nil {
			return nil, 0, err
		}
		rc = f
	}
	size, err := rc.Seek(0, io.SeekEnd)
	if err == nil {
		_, err = rc.Seek(0, io.SeekStart)
	}
	if err != nil {
		rc.Close()
		return nil, 0, err
	}
	return rc, size, nil
}

// SniffArchive returns the archive format of an input ("" for anything
// else).
func SniffArchive(in codec.Input) (string, error) {
	rc, _, err := openInput(in)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(rc, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", err
	}
	return ArchiveFormat(head[:n]), nil
}

// entry is one index entry, format aside.
type entry struct {
	name       string
	size, comp int64 // declared size; compressed size (ZIP)
	regular    bool
	kind       string // what it is when not a regular file or folder
	dir        bool
	zf         *zip.File
}

// InspectArchive judges a frame archive from its index, before anything is
// extracted, against lim (the limits of a video source) and returns its
// frames and the first frame's size. Refused, each an *job.InputError:
//
//   - more entries than lim.MaxFrames + ArchiveExtraEntries, or a name
//     that is absolute, holds "..", a backslash or a drive letter, or a
//     link, device or other non-regular entry: INVALID_ARCHIVE;
//   - a ZIP entry declaring more than ArchiveMaxRatio times its compressed
//     size, a frame declaring more than ArchiveMaxFrameBytes, all of them
//     more than ArchiveMaxBytes: INVALID_ARCHIVE (a zip bomb);
//   - files that are not .png or .exr frames, or both kinds:
//     INVALID_FILE_FORMAT; no frame at all: INVALID_FILE_FORMAT;
//   - more than lim.MaxFrames frames: VIDEO_TOO_MANY_FRAMES;
//   - a first frame over lim.MaxPixels: SOURCE_TOO_LARGE; outside the
//     aspect limit: EXTREME_ASPECT_RATIO (its size is read from its
//     header, the only frame bytes read).
func InspectArchive(ctx context.Context, in codec.Input, lim codec.Limits) (Archive, error) {
	lim = withDefaults(lim)
	rc, size, err := openInput(in)
	if err != nil {
		return Archive{}, err
	}
	defer rc.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(rc, head)
	a := Archive{Format: ArchiveFormat(head[:n])}
	if _, err := rc.Seek(0, io.SeekStart); err != nil {
		return Archive{}, err
	}
	maxEntries := lim.MaxFrames + ArchiveExtraEntries
	var entries []entry
	switch a.Format {
	case ArchiveZip:
		zr, err := zip.NewReader(&readerAt{r: rc}, size)
		if err != nil && !errors.Is(err, zip.ErrInsecurePath) { // insecure names: refused below, with their name
			return Archive{}, archiveErr("not a readable ZIP (%v)", err)
		}
		if len(zr.File) > maxEntries {
			return Archive{}, archiveErr("%d entries, over the limit of %d (%d frames and %d others)", len(zr.File), maxEntries, lim.MaxFrames, ArchiveExtraEntries)
		}
		for _, f := range zr.File {
			m := f.Mode()
			e := entry{name: f.Name, size: int64(f.UncompressedSize64), comp: int64(f.CompressedSize64), zf: f,
				regular: m.IsRegular(), dir: m.IsDir() || strings.HasSuffix(f.Name, "/")}
			if f.UncompressedSize64 > 1<<62 || f.CompressedSize64 > 1<<62 {
				return Archive{}, archiveErr("%s declares an impossible size", trunc.String(f.Name, 80))
			}
			if m&os.ModeSymlink != 0 {
				e.kind = "a symbolic link"
			} else if !e.regular && !e.dir {
				e.kind = "not a regular file (" + m.Type().String() + ")"
			}
			entries = append(entries, e)
		}
	case ArchiveTar:
		tr := tar.NewReader(rc) // rc seeks: the entries' data is skipped, not read
		for {
			if err := ctx.Err(); err != nil {
				return Archive{}, err
			}
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return Archive{}, archiveErr("not a readable TAR (%v)", err)
			}
			if len(entries) == maxEntries {
				return Archive{}, archiveErr("over %d entries, the limit (%d frames and %d others)", maxEntries, lim.MaxFrames, ArchiveExtraEntries)
			}
			e := entry{name: h.Name, size: h.Size, comp: h.Size}
			switch h.Typeflag {
			case tar.TypeReg:
				e.regular = true
			case tar.TypeDir:
				e.dir = true
			case tar.TypeSymlink:
				e.kind = "a symbolic link (to " + trunc.String(h.Linkname, 80) + ")"
			case tar.TypeLink:
				e.kind = "a hard link (to " + trunc.String(h.Linkname, 80) + ")"
			default:
				e.kind = fmt.Sprintf("not a regular file (tar type %q)", h.Typeflag)
			}
			entries = append(entries, e)
		}
	default:
		return Archive{}, job.Errorf(job.CodeInvalidFileFormat, "source: not a ZIP or TAR archive")
	}

	var total int64
	maxFrame := ArchiveMaxFrameBytes(lim)
	exts := map[string]bool{}
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if err := checkArchiveName(e.name); err != nil {
			return Archive{}, err
		}
		if seen[e.name] {
			return Archive{}, archiveErr("%s appears twice", trunc.String(e.name, 80))
		}
		seen[e.name] = true
		name := trunc.String(e.name, 80)
		if e.kind != "" {
			return Archive{}, archiveErr("%s is %s; an archive of frames holds only files and folders", name, e.kind)
		}
		if e.dir {
			continue
		}
		if e.size < 0 || e.comp < 0 {
			return Archive{}, archiveErr("%s declares a negative size", name)
		}
		if a.Format == ArchiveZip && e.size > 0 && (e.comp == 0 || e.size/ArchiveMaxRatio > e.comp) {
			return Archive{}, archiveErr("%s declares %d bytes packed in %d, a ratio over %d:1 (a zip bomb?); PNG and EXR frames barely compress", name, e.size, e.comp, ArchiveMaxRatio)
		}
		if skippedEntry(e.name) {
			continue
		}
		if e.size > maxFrame {
			return Archive{}, archiveErr("%s declares %d bytes, more than a frame within the limit of %d pixels can take (%d)", name, e.size, lim.MaxPixels, maxFrame)
		}
		total += e.size
		if total > ArchiveMaxBytes {
			return Archive{}, archiveErr("the frames declare over %d bytes unpacked, the limit", int64(ArchiveMaxBytes))
		}
		ext := strings.ToLower(path.Ext(e.name))
		if ext != ".png" && ext != ".exr" {
			return Archive{}, job.Errorf(job.CodeInvalidFileFormat, "source archive: %s is not a .png or .exr frame; an archive of frames holds only those", name)
		}
		exts[ext] = true
		a.Frames = append(a.Frames, ArchiveFrame{Name: e.name, Size: e.size})
	}
	switch {
	case len(a.Frames) == 0:
		return Archive{}, job.Errorf(job.CodeInvalidFileFormat, "source archive: no .png or .exr frame in it")
	case len(exts) > 1:
		return Archive{}, job.Errorf(job.CodeInvalidFileFormat, "source archive: it mixes .png and .exr frames; give one kind")
	case len(a.Frames) > lim.MaxFrames:
		return Archive{}, job.Errorf(job.CodeVideoTooManyFrames, "source archive: %d frames, over the limit of %d", len(a.Frames), lim.MaxFrames)
	}
	for ext := range exts {
		a.Ext = ext
	}
	sort.Slice(a.Frames, func(i, j int) bool { return a.Frames[i].Name < a.Frames[j].Name })

	// The first frame's size from its header: the only frame bytes read
	// before extraction.
	first := a.Frames[0]
	var fh []byte
	switch a.Format {
	case ArchiveZip:
		for _, e := range entries {
			if e.name == first.Name && e.zf != nil {
				r, err := e.zf.Open()
				if err != nil {
					return Archive{}, archiveErr("%s: %v", trunc.String(first.Name, 80), err)
				}
				fh, err = io.ReadAll(io.LimitReader(r, archiveHeadBytes))
				r.Close()
				if err != nil {
					return Archive{}, archiveErr("%s: %v", trunc.String(first.Name, 80), err)
				}
				break
			}
		}
	case ArchiveTar:
		if _, err := rc.Seek(0, io.SeekStart); err != nil {
			return Archive{}, err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err != nil {
				return Archive{}, archiveErr("%s: %v", trunc.String(first.Name, 80), err)
			}
			if h.Name == first.Name {
				if fh, err = io.ReadAll(io.LimitReader(tr, archiveHeadBytes)); err != nil {
					return Archive{}, archiveErr("%s: %v", trunc.String(first.Name, 80), err)
				}
				break
			}
		}
	}
	if a.Width, a.Height, err = frameHeaderSize(fh, a.Ext); err != nil {
		return Archive{}, job.Errorf(job.CodeInvalidFileFormat, "source archive: first frame %s: %v", trunc.String(first.Name, 80), err)
	}
	if a.Width*a.Height > lim.MaxPixels {
		return Archive{}, job.Errorf(job.CodeSourceTooLarge, "source archive: frames of %dx%d (%d pixels), over the limit of %d", a.Width, a.Height, a.Width*a.Height, lim.MaxPixels)
	}
	if r := float64(max(a.Width, a.Height)) / float64(min(a.Width, a.Height)); r > lim.MaxAspect {
		return Archive{}, job.Errorf(job.CodeExtremeAspectRatio, "source archive: frames of %dx%d, aspect ratio %.2f:1 outside 1:%g..%g:1", a.Width, a.Height, r, lim.MaxAspect, lim.MaxAspect)
	}
	return a, nil
}

// withDefaults fills a zero limit with the service's.
func withDefaults(lim codec.Limits) codec.Limits {
	d := codec.DefaultLimits()
	if lim.MaxPixels <= 0 {
		lim.MaxPixels = d.MaxPixels
	}
	if lim.MaxFrames <= 0 {
		lim.MaxFrames = d.MaxFrames
	}
	if lim.MaxAspect <= 0 {
		lim.MaxAspect = d.MaxAspect
	}
	return lim
}

// checkArchiveName refuses an entry name that could land outside the
// folder it is extracted to: absolute, with a drive letter or a
// backslash, or with a ".." element. (Extraction never uses the names;
// an archive holding such a name is refused all the same.)
func checkArchiveName(name string) error {
	n := trunc.String(name, 80)
	switch {
	case name == "":
		return archiveErr("an entry has no name")
	case strings.HasPrefix(name, "/"):
		return archiveErr("%s is an absolute path; an archive of frames holds relative names only", n)
	case strings.Contains(name, `\`):
		return archiveErr("%s holds a backslash; use / between folders", n)
	case len(name) >= 2 && name[1] == ':':
		return archiveErr("%s starts with a drive letter; an archive of frames holds relative names only", n)
	case strings.ContainsRune(name, 0):
		return archiveErr("%s holds a NUL byte", n)
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			return archiveErr("%s leads out of its folder (..); an archive of frames holds relative names only", n)
		}
	}
	return nil
}

// skippedEntry reports files that archivers add beside the frames: macOS
// resource forks (__MACOSX/, ._name) and hidden files.
func skippedEntry(name string) bool {
	return strings.HasPrefix(name, "__MACOSX/") || strings.HasPrefix(path.Base(name), ".")
}

// frameHeaderSize reads a PNG's IHDR or an EXR header for the frame size.
func frameHeaderSize(head []byte, ext string) (int, int, error) {
	if ext == ".exr" {
		return codec.EXRHeaderSize(head)
	}
	if len(head) < 24 || !bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")) || string(head[12:16]) != "IHDR" {
		return 0, 0, errors.New("not a PNG")
	}
	w, h := binary.BigEndian.Uint32(head[16:]), binary.BigEndian.Uint32(head[20:])
	if w == 0 || h == 0 || w > 1<<20 || h > 1<<20 {
		return 0, 0, fmt.Errorf("PNG of %dx%d", w, h)
	}
	return int(w), int(h), nil
}

// ExtractArchive writes the frames of a (checked) archive into dir as
// frame.000000<ext>, frame.000001<ext>, ... in a's order and returns their
// paths. It writes no name the archive gives, reads no more of an entry
// than its declared size (an entry holding more is refused, INVALID_ARCHIVE),
// and checks ctx between frames.
func ExtractArchive(ctx context.Context, in codec.Input, a Archive, dir string) ([]string, error) {
	rc, size, err := openInput(in)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	want := make(map[string]int, len(a.Frames))
	for i, f := range a.Frames {
		want[f.Name] = i
	}
	paths := make([]string, len(a.Frames))
	write := func(name string, r io.Reader) error {
		i, ok := want[name]
		if !ok || paths[i] != "" {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		p := filepath.Join(dir, fmt.Sprintf("frame.%06d%s", i, a.Ext))
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("media: extract: %w", err)
		}
		declared := a.Frames[i].Size
		n, err := io.Copy(f, io.LimitReader(r, declared+1))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		switch {
		case err != nil && errors.Is(err, zip.ErrFormat), err != nil && errors.Is(err, zip.ErrChecksum):
			return archiveErr("%s: %v", trunc.String(name, 80), err)
		case err != nil:
			return fmt.Errorf("media: extract %s: %w", trunc.String(name, 80), err)
		case n > declared:
			return archiveErr("%s holds more than the %d bytes it declares (a zip bomb?)", trunc.String(name, 80), declared)
		}
		paths[i] = p
		return nil
	}
	switch a.Format {
	case ArchiveZip:
		zr, err := zip.NewReader(&readerAt{r: rc}, size)
		if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
			return nil, archiveErr("not a readable ZIP (%v)", err)
		}
		for _, zf := range zr.File {
			if _, ok := want[zf.Name]; !ok {
				continue
			}
			r, err := zf.Open()
			if err != nil {
				return nil, archiveErr("%s: %v", trunc.String(zf.Name, 80), err)
			}
			err = write(zf.Name, r)
			r.Close()
			if err != nil {
				return nil, err
			}
		}
	case ArchiveTar:
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, archiveErr("not a readable TAR (%v)", err)
			}
			if h.Typeflag != tar.TypeReg {
				continue
			}
			if err := write(h.Name, tr); err != nil {
				return nil, err
			}
		}
	}
	for i, p := range paths {
		if p == "" {
			return nil, archiveErr("%s is missing on extraction", trunc.String(a.Frames[i].Name, 80))
		}
	}
	return paths, nil
}
