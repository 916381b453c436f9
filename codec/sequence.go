package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/asticode/go-astiav"
	"github.com/vfxrender/vfx/frame"
)

// exrMagic starts every OpenEXR file.
var exrMagic = []byte{0x76, 0x2f, 0x31, 0x01}

// IsEXR reports whether the file at path starts with the OpenEXR magic
// number (content, not the name).
func IsEXR(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	n, _ := f.Read(b[:])
	return n == 4 && bytes.Equal(b[:], exrMagic)
}

// SequenceOptions describe an image sequence for WriteSequenceVideo.
type SequenceOptions struct {
	// FrameRate of the video (required).
	FrameRate Rational
	// Gray keeps one channel (a matte): the frames' grey level (an EXR's
	// Y, else its R) becomes the luma of a grey video.
	Gray bool
}

// WriteSequenceVideo reads the still images files, in order (PNG 8 or
// 16-bit, JPEG, WebP, by content; or OpenEXR, read as linear light), and
// writes them as one lossless H.264 MP4 (qp 0, BT.709, limited range) at
// opts.FrameRate, the form every job takes. The frame count is checked
// against lim before anything is read and the first frame's size before
// any frame is decoded; every frame must have the first one's size, which
// must be even. An EXR frame's `chromaticities` are honoured (converted to
// linear Rec.709, D65, by a Bradford adaptation); without the attribute
// Rec.709 primaries are assumed; the values are then encoded with the
// sRGB curve, the render's working transfer, and rounded to 8 bits (as
// PNG frames are). ctx is checked between frames.
func WriteSequenceVideo(ctx context.Context, files []string, out string, lim Limits, opts SequenceOptions) error {
	lim = lim.withDefaults()
	if len(files) == 0 {
		return fmt.Errorf("codec: sequence: no frames: %w", ErrCorrupt)
	}
	if err := lim.checkFrames(len(files), false); err != nil {
		return err
	}
	if !opts.FrameRate.valid() {
		return fmt.Errorf("codec: sequence: frame rate %v invalid", opts.FrameRate)
	}
	format := frame.RGB24
	if opts.Gray {
		format = frame.Gray8
	}
	var enc *Encoder
	defer func() {
		if enc != nil {
			enc.Close()
		}
	}()
	w, h := 0, 0
	for i, path := range files {
		if err := ctxErr(ctx, "sequence"); err != nil {
			return err
		}
		f, err := readStill(ctx, path, lim, format)
		if err != nil {
			return fmt.Errorf("codec: sequence frame %d (%s): %w", i, path, err)
		}
		if enc == nil {
			w, h = f.Width, f.Height
			if w%2 != 0 || h%2 != 0 {
				return fmt.Errorf("codec: sequence: frames are %dx%d, must be even: %w", w, h, ErrUnsupportedFormat)
			}
			enc, err = NewEncoder(ctx, out, EncoderOptions{Container: "mp4", Width: w, Height: h, Input: format, Gray: opts.Gray,
				FrameRate: opts.FrameRate, TimeBase: Rational{opts.FrameRate.Den, opts.FrameRate.Num},
				ColorSpace: frame.BT709, Preset: "ultrafast", CRF: 1, X264Params: "qp=0"})
			if err != nil {
				return fmt.Errorf("codec: sequence: %w", err)
			}
		}
		if f.Width != w || f.Height != h {
			return fmt.Errorf("codec: sequence frame %d (%s) is %dx%d, the first %dx%d: %w", i, path, f.Width, f.Height, w, h, ErrCorrupt)
		}
		f.PTS = int64(i)
		if err := enc.Write(ctx, f); err != nil {
			return fmt.Errorf("codec: sequence: %w", err)
		}
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("codec: sequence: %w", err)
	}
	enc = nil
	return nil
}

// readStill decodes one still image file into format (RGB24 or Gray8).
func readStill(ctx context.Context, path string, lim Limits, format frame.PixelFormat) (*frame.HostFrame, error) {
	if IsEXR(path) {
		return readEXRFrame(path, lim, format)
	}
	dec, err := NewDecoder(ctx, FileInput(path), lim, DecodeOptions{Format: format})
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	if dec.Info().Kind != KindImage {
		return nil, fmt.Errorf("codec: a sequence frame must be a still image, not a %s: %w", dec.Info().Kind, ErrUnsupportedFormat)
	}
	f := &frame.HostFrame{}
	if err := dec.Next(ctx, f); err != nil {
		return nil, err
	}
	return f, nil
}

// exrHeader is what this package reads from an EXR header.
type exrHeader struct {
	compression  int
	xMin, yMin   int
	xMax, yMax   int
	end          int // index of the header's terminating NUL
	chroma       Chromaticities
	hasChroma    bool
	multiOrTiled bool // tiled, long names, deep or multi-part
}

// parseEXRHeader reads a single-part EXR header's attributes.
func parseEXRHeader(data []byte) (exrHeader, error) {
	hd := exrHeader{compression: -1, yMax: -1, xMax: -1}
	if len(data) < 8 || !bytes.Equal(data[:4], exrMagic) {
		return hd, errors.New("exr: not an OpenEXR file")
	}
	hd.multiOrTiled = data[5]&0x1e != 0
	p := 8
	for {
		if p >= len(data) {
			return hd, errors.New("exr: header runs past the end")
		}
		if data[p] == 0 {
			hd.end = p
			return hd, nil
		}
		name, n, err := cString(data, p)
		if err != nil {
			return hd, err
		}
		typ, n2, err := cString(data, n)
		if err != nil {
			return hd, err
		}
		if n2+4 > len(data) {
			return hd, errors.New("exr: header runs past the end")
		}
		size := int(int32(binary.LittleEndian.Uint32(data[n2:])))
		v := n2 + 4
		if size < 0 || v+size > len(data) {
			return hd, fmt.Errorf("exr: attribute %s: size %d", name, size)
		}
		le := binary.LittleEndian
		switch {
		case name == "chromaticities" && typ == "chromaticities" && size == 32:
			for i := range hd.chroma {
				hd.chroma[i] = math.Float32frombits(le.Uint32(data[v+4*i:]))
			}
			hd.hasChroma = true
		case name == "compression" && typ == "compression" && size == 1:
			hd.compression = int(data[v])
		case name == "dataWindow" && typ == "box2i" && size == 16:
			hd.xMin, hd.yMin = int(int32(le.Uint32(data[v:]))), int(int32(le.Uint32(data[v+4:])))
			hd.xMax, hd.yMax = int(int32(le.Uint32(data[v+8:]))), int(int32(le.Uint32(data[v+12:])))
		}
		p = v + size
	}
}

// readEXRFrame decodes an EXR file with FFmpeg's decoder as linear
// light, converts its primaries to Rec.709 and encodes it with the sRGB
// curve into an 8-bit frame (RGB24, or Gray8 from Y or R).
func readEXRFrame(path string, lim Limits, format frame.PixelFormat) (*frame.HostFrame, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("codec: read exr: %w", err)
	}
	hd, err := parseEXRHeader(data)
	if err != nil {
		return nil, fmt.Errorf("codec: read exr: %w: %w", err, ErrCorrupt)
	}
	if w, h := hd.xMax-hd.xMin+1, hd.yMax-hd.yMin+1; w > 0 && h > 0 {
		if err := lim.checkSize(w, h, w, h); err != nil {
			return nil, err
		}
	}
	c := astiav.FindDecoderByName("exr")
	if c == nil {
		return nil, errors.New("codec: read exr: the exr decoder is missing from this FFmpeg")
	}
	cc := astiav.AllocCodecContext(c)
	if cc == nil {
		return nil, errors.New("codec: read exr: alloc codec context: out of memory")
	}
	defer cc.Free()
	cc.SetThreadCount(1)
	if err := cc.Open(c, nil); err != nil {
		return nil, fmt.Errorf("codec: read exr: open decoder: %w", err)
	}
	pkt := astiav.AllocPacket()
	if pkt == nil {
		return nil, errors.New("codec: read exr: alloc packet: out of memory")
	}
	defer pkt.Free()
	if err := pkt.FromData(data); err != nil {
		return nil, fmt.Errorf("codec: read exr: %w", err)
	}
	if err := cc.SendPacket(pkt); err != nil {
		return nil, fmt.Errorf("codec: read exr: decode: %w: %w", err, ErrCorrupt)
	}
	fr := astiav.AllocFrame()
	if fr == nil {
		return nil, errors.New("codec: read exr: alloc frame: out of memory")
	}
	defer fr.Free()
	if err := cc.ReceiveFrame(fr); err != nil {
		return nil, fmt.Errorf("codec: read exr: decode: %w: %w", err, ErrCorrupt)
	}
	w, h := fr.Width(), fr.Height()
	if err := lim.checkSize(w, h, w, h); err != nil {
		return nil, err
	}
	var order []int // FFmpeg plane of R, G, B
	switch fr.PixelFormat() {
	case astiav.PixelFormatGbrpf32Le, astiav.PixelFormatGbrapf32Le:
		order = []int{2, 0, 1}
	case astiav.PixelFormatGrayf32Le:
		order = []int{0, 0, 0}
	default:
		return nil, fmt.Errorf("codec: read exr: decoded as %s: %w", fr.PixelFormat().Name(), ErrUnsupportedFormat)
	}
	var planes [3][]byte
	var strides [3]int
	for i, k := range order {
		if planes[i], strides[i], err = planeOf(fr, k, h); err != nil {
			return nil, fmt.Errorf("codec: read exr: %w", err)
		}
	}
	m, identity := [3][3]float64{}, true
	if hd.hasChroma {
		m, identity = toRec709(hd.chroma)
	}
	out, err := frame.New(format, w, h)
	if err != nil {
		return nil, fmt.Errorf("codec: read exr: %w", err)
	}
	out.ColorSpace, out.FullRange = frame.BT709, true
	le := binary.LittleEndian
	// Code k covers linear values from the decode of k-0.5 to that of
	// k+0.5: the rounding of the exact curve, found by binary search.
	var edges [255]float64
	for k := range edges {
		edges[k] = srgbDecode((float64(k) + 0.5) / 255)
	}
	enc := func(v float64) uint8 {
		if !(v > 0) { // NaN and negatives
			return 0
		}
		lo, hi := 0, len(edges)
		for lo < hi {
			mid := (lo + hi) / 2
			if v >= edges[mid] {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		return uint8(lo)
	}
	for y := range h {
		var rgb [3]float64
		for x := range w {
			for c := range 3 {
				rgb[c] = float64(math.Float32frombits(le.Uint32(planes[c][y*strides[c]+4*x:])))
			}
			if !identity {
				r, g, b := rgb[0], rgb[1], rgb[2]
				for c := range 3 {
					rgb[c] = m[c][0]*r + m[c][1]*g + m[c][2]*b
				}
			}
			if format == frame.Gray8 {
				out.Planes[0][y*out.Strides[0]+x] = enc(rgb[0])
				continue
			}
			row := out.Planes[0][y*out.Strides[0]:]
			row[3*x], row[3*x+1], row[3*x+2] = enc(rgb[0]), enc(rgb[1]), enc(rgb[2])
		}
	}
	return out, nil
}

// srgbDecode is the inverse sRGB transfer curve, encoded 0..1 to linear.
func srgbDecode(v float64) float64 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

// toRec709 is the matrix from linear RGB with chromaticities c to linear
// Rec.709 (D65), with a Bradford adaptation between the white points; it
// reports identity when c is Rec.709 within 1e-3.
func toRec709(c Chromaticities) ([3][3]float64, bool) {
	same := true
	for i, v := range c {
		if math.Abs(float64(v-Rec709Chromaticities[i])) > 1e-3 {
			same = false
		}
	}
	if same {
		return [3][3]float64{}, true
	}
	src := rgbToXYZ(c)
	dst := rgbToXYZ(Rec709Chromaticities)
	adapt := bradford(whiteXYZ(c), whiteXYZ(Rec709Chromaticities))
	return mul3(inv3(dst), mul3(adapt, src)), false
}

func whiteXYZ(c Chromaticities) [3]float64 {
	wx, wy := float64(c[6]), float64(c[7])
	return [3]float64{wx / wy, 1, (1 - wx - wy) / wy}
}

// rgbToXYZ is the normalised primary matrix of chromaticities c.
func rgbToXYZ(c Chromaticities) [3][3]float64 {
	var p [3][3]float64 // columns: the primaries' XYZ with Y = 1
	for i := range 3 {
		x, y := float64(c[2*i]), float64(c[2*i+1])
		p[0][i], p[1][i], p[2][i] = x/y, 1, (1-x-y)/y
	}
	s := apply3(inv3(p), whiteXYZ(c))
	for r := range 3 {
		for i := range 3 {
			p[r][i] *= s[i]
		}
	}
	return p
}

// bradford adapts XYZ from white ws to white wd.
func bradford(ws, wd [3]float64) [3][3]float64 {
	b := [3][3]float64{{0.8951, 0.2664, -0.1614}, {-0.7502, 1.7135, 0.0367}, {0.0389, -0.0685, 1.0296}}
	s, d := apply3(b, ws), apply3(b, wd)
	var k [3][3]float64
	for i := range 3 {
		k[i][i] = d[i] / s[i]
	}
	return mul3(inv3(b), mul3(k, b))
}

func apply3(m [3][3]float64, v [3]float64) [3]float64 {
	var o [3]float64
	for r := range 3 {
		o[r] = m[r][0]*v[0] + m[r][1]*v[1] + m[r][2]*v[2]
	}
	return o
}

func mul3(a, b [3][3]float64) [3][3]float64 {
	var o [3][3]float64
	for r := range 3 {
		for c := range 3 {
			o[r][c] = a[r][0]*b[0][c] + a[r][1]*b[1][c] + a[r][2]*b[2][c]
		}
	}
	return o
}

func inv3(m [3][3]float64) [3][3]float64 {
	det := m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) - m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) + m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
	var o [3][3]float64
	for r := range 3 {
		for c := range 3 {
			// cofactor of (c, r)
			r1, r2 := (c+1)%3, (c+2)%3
			c1, c2 := (r+1)%3, (r+2)%3
			o[r][c] = (m[r1][c1]*m[r2][c2] - m[r1][c2]*m[r2][c1]) / det
		}
	}
	return o
}

// EXRHeaderSize reads the data window of a single-part scanline OpenEXR
// file from its leading bytes (the header: a few hundred bytes), without
// decoding anything: the frame's width and height.
func EXRHeaderSize(head []byte) (w, h int, err error) {
	hd, err := parseEXRHeader(head)
	if err != nil {
		return 0, 0, fmt.Errorf("codec: %w: %w", err, ErrCorrupt)
	}
	if hd.multiOrTiled {
		return 0, 0, fmt.Errorf("codec: exr: tiled, deep or multi-part files are not read: %w", ErrUnsupportedFormat)
	}
	w, h = hd.xMax-hd.xMin+1, hd.yMax-hd.yMin+1
	if w <= 0 || h <= 0 {
		return 0, 0, fmt.Errorf("codec: exr: data window %d,%d-%d,%d: %w", hd.xMin, hd.yMin, hd.xMax, hd.yMax, ErrCorrupt)
	}
	return w, h, nil
}
