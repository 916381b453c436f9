package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/frame"
)

// writeFrameArchives writes n PNG frames (8-bit RGB and 16-bit grey in
// turn, a moving gradient) into a folder and the same files into a ZIP and
// a TAR, and returns the three paths.
func writeFrameArchives(t *testing.T, dir string, n int, bad string) (folder, zipPath, tarPath string) {
	t.Helper()
	folder = filepath.Join(dir, "frames")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	var zb, tb bytes.Buffer
	zw, tw := zip.NewWriter(&zb), tar.NewWriter(&tb)
	add := func(name string, data []byte) {
		w, err := zw.Create(name)
		if err == nil {
			_, err = w.Write(data)
		}
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Name: name, Size: int64(len(data)), Mode: 0o644, Typeflag: tar.TypeReg})
		}
		if err == nil {
			_, err = tw.Write(data)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		var img image.Image
		if i%2 == 0 {
			m := image.NewNRGBA(image.Rect(0, 0, 64, 48))
			for p := 0; p < len(m.Pix); p += 4 {
				x := (p / 4) % 64
				m.Pix[p], m.Pix[p+1], m.Pix[p+2], m.Pix[p+3] = uint8(4*x+8*i), 120, uint8(200-2*x), 255
			}
			img = m
		} else {
			m := image.NewGray16(image.Rect(0, 0, 64, 48))
			for p := 0; p < len(m.Pix); p += 2 {
				v := uint16((p/2)%64*1000 + 500*i)
				m.Pix[p], m.Pix[p+1] = uint8(v>>8), uint8(v)
			}
			img = m
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("shot.%04d.png", 1001+i)
		if err := os.WriteFile(filepath.Join(folder, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		add("shot/"+name, b.Bytes())
	}
	if bad != "" {
		add(bad, []byte("x"))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zipPath, tarPath = filepath.Join(dir, "frames.zip"), filepath.Join(dir, "frames.tar")
	for p, b := range map[string][]byte{zipPath: zb.Bytes(), tarPath: tb.Bytes()} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return folder, zipPath, tarPath
}

// TestRenderArchiveSource: a ZIP and a TAR of PNG frames (8 and 16-bit)
// render as a video source, frame for frame as the same frames in a
// folder; an archive with a name that leads out of its folder is refused
// with INVALID_ARCHIVE before anything is extracted.
func TestRenderArchiveSource(t *testing.T) {
	dir := t.TempDir()
	folder, zipPath, tarPath := writeFrameArchives(t, dir, 6, "")
	var renders [][]*frame.HostFrame
	for i, src := range []string{folder, zipPath, tarPath} {
		out := filepath.Join(dir, fmt.Sprintf("out%d", i))
		code, stdout, stderr := runCLI("render", "--type", "video", "--source", src, "--alpha-mode", "fill",
			"--prompt", "warm key light from the left", "--seed", "5", "--out", out, "--quiet")
		if code != 0 || !strings.Contains(stdout, "rendered 6 frame(s) 64x48") {
			t.Fatalf("%s: exit %d, %q, %q", src, code, stdout, stderr)
		}
		renders = append(renders, decodeFrames(t, filepath.Join(out, "render.mp4"), frame.RGB24))
	}
	for k, r := range renders[1:] {
		if len(r) != 6 {
			t.Fatalf("archive %d: %d frames", k, len(r))
		}
		for i := range r {
			if !bytes.Equal(r[i].Planes[0], renders[0][i].Planes[0]) {
				t.Errorf("archive %d frame %d differs from the folder's render", k, i)
			}
		}
	}
	_, badZip, badTar := writeFrameArchives(t, filepath.Join(dir, "bad"), 2, "shot/../../evil.png")
	for _, src := range []string{badZip, badTar} {
		code, _, stderr := runCLI("render", "--type", "video", "--source", src, "--alpha-mode", "fill", "--prompt", "x",
			"--out", filepath.Join(dir, "bad-out"), "--quiet")
		if code == 0 || !strings.Contains(stderr, "INVALID_ARCHIVE") || !strings.Contains(stderr, "shot/../../evil.png leads out of its folder") {
			t.Errorf("%s: exit %d, %q", src, code, stderr)
		}
	}
}
