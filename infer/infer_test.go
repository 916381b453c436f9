package infer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// installed is the model directory of `make models`, or a skip that says
// why it is missing (a failure under VFX_REQUIRE_MODELS=1, as in make test).
func installed(t testing.TB) string {
	t.Helper()
	dir := DefaultDir()
	_, errL := os.Stat(filepath.Join(dir, LibraryFile))
	_, errM := os.Stat(filepath.Join(dir, ISNetIMGLY().File))
	if err := errors.Join(errL, errM); err != nil {
		if os.Getenv("VFX_REQUIRE_MODELS") == "1" {
			t.Fatalf("models required (VFX_REQUIRE_MODELS=1): %v", err)
		}
		t.Skipf("models not installed (make models): %v", err)
	}
	return dir
}

func TestCardValidate(t *testing.T) {
	if err := ISNetIMGLY().Validate(); err != nil {
		t.Fatalf("default card: %v", err)
	}
	for name, edit := range map[string]func(*Card){
		"no name":     func(c *Card) { c.Name = "" },
		"short sha":   func(c *Card) { c.SHA256 = "abc" },
		"non-hex sha": func(c *Card) { c.SHA256 = strings.Repeat("z", 64) },
		"tiny input":  func(c *Card) { c.Width = 8 },
		"no licence":  func(c *Card) { c.Licence = "" },
		"zero scale":  func(c *Card) { c.Scale[1] = 0 },
		"no output":   func(c *Card) { c.Output = "" },
	} {
		c := ISNetIMGLY()
		edit(&c)
		if err := c.Validate(); !errors.Is(err, ErrCard) {
			t.Errorf("%s: err = %v, want ErrCard", name, err)
		}
	}
}

func TestReadCard(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "card.json")
	os.WriteFile(p, []byte(`{"name":"u2net","file":"u2net.onnx","sha256":"`+strings.Repeat("ab", 32)+`","licence":"Apache-2.0",
		"input":"input.1","output":"1959","width":320,"height":320,"mean":[123.7,116.3,103.5],"scale":[58.4,57.1,57.4]}`), 0o644)
	c, err := ReadCard(p)
	if err != nil || c.Name != "u2net" || c.Width != 320 || c.Licence != "Apache-2.0" {
		t.Fatalf("ReadCard: %+v, %v", c, err)
	}
	os.WriteFile(p, []byte(`{"name":`), 0o644)
	if _, err := ReadCard(p); !errors.Is(err, ErrCard) {
		t.Errorf("broken JSON: err = %v, want ErrCard", err)
	}
}

func TestVerifyRefusesAnotherFile(t *testing.T) {
	dir := t.TempDir()
	c := ISNetIMGLY()
	if _, err := c.Verify(dir); !errors.Is(err, ErrNoModel) || !strings.Contains(err.Error(), "make models") {
		t.Errorf("missing file: err = %v, want ErrNoModel with the install hint", err)
	}
	// The right size but other bytes: the sha256 refuses it.
	f, _ := os.Create(filepath.Join(dir, c.File))
	f.Truncate(c.Bytes)
	f.Close()
	if _, err := c.Verify(dir); !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("wrong bytes: err = %v, want ErrChecksum naming the sha256", err)
	}
	if _, err := c.Read(dir); !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("Read, wrong bytes: err = %v, want ErrChecksum naming the sha256", err)
	}
	os.Truncate(filepath.Join(dir, c.File), 10)
	if _, err := c.Verify(dir); !errors.Is(err, ErrChecksum) {
		t.Errorf("wrong size: err = %v, want ErrChecksum", err)
	}
	if _, err := c.Read(dir); !errors.Is(err, ErrChecksum) {
		t.Errorf("Read, wrong size: err = %v, want ErrChecksum", err)
	}
	if _, err := c.Read(t.TempDir()); !errors.Is(err, ErrNoModel) {
		t.Errorf("Read, missing file: err = %v, want ErrNoModel", err)
	}
	// The file its card describes: Read returns exactly its bytes.
	body := []byte("a small file standing in for a model")
	sum := sha256.Sum256(body)
	small := Card{Name: "small", File: "small.onnx", SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(body)),
		Licence: "MIT", Input: "in", Output: "out", Width: 32, Height: 32, Scale: [3]float32{1, 1, 1}}
	os.WriteFile(filepath.Join(dir, small.File), body, 0o644)
	if got, err := small.Read(dir); err != nil || string(got) != string(body) {
		t.Errorf("Read of the right file: %q, %v", got, err)
	}
	if _, err := small.Verify(dir); err != nil {
		t.Errorf("Verify of the right file: %v", err)
	}
}

func TestOpenWithoutRuntime(t *testing.T) {
	if _, err := Open(Options{Dir: t.TempDir(), Provider: "tpu"}); !errors.Is(err, ErrProvider) {
		t.Errorf("provider tpu: err = %v, want ErrProvider", err)
	}
	if isInit() {
		t.Skip("ONNX Runtime is already loaded in this process: a missing library cannot be shown")
	}
	if _, err := Open(Options{Dir: t.TempDir()}); !errors.Is(err, ErrNoRuntime) || !strings.Contains(err.Error(), "make models") {
		t.Errorf("no library: err = %v, want ErrNoRuntime with the install hint", err)
	}
}

func TestSegmentRealModel(t *testing.T) {
	dir := installed(t)
	rt, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	// Another file under the default card's name is refused by Load too.
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, ISNetIMGLY().File), []byte("not a model"), 0o644)
	rtBad := &Runtime{o: Options{Dir: bad, Threads: 1, Provider: CPU}}
	if _, err := rtBad.Load(context.Background(), ISNetIMGLY()); !errors.Is(err, ErrChecksum) {
		t.Errorf("Load of a wrong file: err = %v, want ErrChecksum", err)
	}
	m, err := rt.Load(context.Background(), ISNetIMGLY())
	if err != nil {
		t.Fatal(err)
	}
	// A bright disk on a dark, flat background: the salient object.
	w, h := 160, 120
	rgb := make([]float32, 3*w*h)
	truth := make([]bool, w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			in := (x-80)*(x-80)+(y-60)*(y-60) < 35*35
			truth[y*w+x] = in
			for c := 0; c < 3; c++ {
				v := float32(0.15)
				if in {
					v = []float32{0.9, 0.5, 0.2}[c]
				}
				rgb[c*w*h+y*w+x] = v
			}
		}
	}
	out := make([]float32, w*h)
	if err := m.Segment(context.Background(), rgb, w, h, out); err != nil {
		t.Fatal(err)
	}
	var in, un int
	for i, v := range out {
		p := v >= 0.5
		if p && truth[i] {
			in++
		}
		if p || truth[i] {
			un++
		}
	}
	if j := float64(in) / float64(max(un, 1)); j < 0.8 {
		t.Errorf("disk: IoU %.3f, want >= 0.8", j)
	}
	if err := m.Segment(context.Background(), rgb[:10], w, h, out); !errors.Is(err, ErrShape) {
		t.Errorf("short input: err = %v, want ErrShape", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Segment(ctx, rgb, w, h, out); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}
	m.Close()
	m.Close() // idempotent
	if err := m.Segment(context.Background(), rgb, w, h, out); err == nil {
		t.Error("run after Close: no error")
	}
}
