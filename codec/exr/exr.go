// Package exr holds the parts of the OpenEXR format that need no FFmpeg:
// the header's attributes (the data window, the compression, the
// chromaticities), adding a chromaticities attribute to a file FFmpeg
// wrote, the conversion of a file's primaries to linear Rec.709 (Bradford
// adaptation of the white point) and the sRGB encoding of decoded linear
// light into 8-bit frames. Package codec decodes and encodes EXR files
// with FFmpeg and uses it.
package exr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/vfxrender/vfx/frame"
)

// Magic starts every OpenEXR file.
var Magic = []byte{0x76, 0x2f, 0x31, 0x01}

// Chromaticities are the CIE xy coordinates of a colour space's red,
// green and blue primaries and white point (the OpenEXR `chromaticities`
// attribute: rx, ry, gx, gy, bx, by, wx, wy).
type Chromaticities [8]float32

// The colour spaces an EXR output can be tagged with.
var (
	// Rec709Chromaticities are linear Rec.709 / sRGB primaries with a
	// D65 white: the working space of the render.
	Rec709 = Chromaticities{0.64, 0.33, 0.30, 0.60, 0.15, 0.06, 0.3127, 0.3290}
	// ACEScgChromaticities are the ACES AP1 primaries with the ACES white.
	ACEScg = Chromaticities{0.713, 0.293, 0.165, 0.830, 0.128, 0.044, 0.32168, 0.33767}
)

// Header is what this package reads from an EXR header.
type Header struct {
	Compression  int
	XMin, YMin   int
	XMax, YMax   int
	End          int // index of the header's terminating NUL
	Chroma       Chromaticities
	HasChroma    bool
	MultiOrTiled bool // tiled, long names, deep or multi-part
}

// ParseHeader reads a single-part EXR header's attributes.
func ParseHeader(data []byte) (Header, error) {
	hd := Header{Compression: -1, YMax: -1, XMax: -1}
	if len(data) < 8 || !bytes.Equal(data[:4], Magic) {
		return hd, errors.New("exr: not an OpenEXR file")
	}
	hd.MultiOrTiled = data[5]&0x1e != 0
	p := 8
	for {
		if p >= len(data) {
			return hd, errors.New("exr: header runs past the end")
		}
		if data[p] == 0 {
			hd.End = p
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
			for i := range hd.Chroma {
				hd.Chroma[i] = math.Float32frombits(le.Uint32(data[v+4*i:]))
			}
			hd.HasChroma = true
		case name == "compression" && typ == "compression" && size == 1:
			hd.Compression = int(data[v])
		case name == "dataWindow" && typ == "box2i" && size == 16:
			hd.XMin, hd.YMin = int(int32(le.Uint32(data[v:]))), int(int32(le.Uint32(data[v+4:])))
			hd.XMax, hd.YMax = int(int32(le.Uint32(data[v+8:]))), int(int32(le.Uint32(data[v+12:])))
		}
		p = v + size
	}
}

// linesPerChunk are the scan lines per chunk of each OpenEXR
// compression (none, rle, zips, zip, piz, pxr24, b44, b44a).
var linesPerChunk = [...]int{1, 1, 1, 16, 32, 16, 32, 32}

// AddChromaticities inserts a `chromaticities` attribute at the end of a
// single-part scan-line EXR file's header and moves the offset table's
// entries by its length. A file that already has one is returned as it
// is.
func AddChromaticities(data []byte, c Chromaticities) ([]byte, error) {
	hd, err := ParseHeader(data)
	if err != nil {
		return nil, err
	}
	if hd.MultiOrTiled {
		return nil, fmt.Errorf("exr: version flags %#x: only single-part scan-line files are patched", data[5])
	}
	if hd.HasChroma {
		return data, nil
	}
	if hd.Compression < 0 || hd.Compression >= len(linesPerChunk) || hd.YMax < hd.YMin {
		return nil, fmt.Errorf("exr: compression %d, data window rows %d..%d", hd.Compression, hd.YMin, hd.YMax)
	}
	chunks := (hd.YMax - hd.YMin + linesPerChunk[hd.Compression]) / linesPerChunk[hd.Compression]
	var attr bytes.Buffer
	attr.WriteString("chromaticities\x00chromaticities\x00")
	_ = binary.Write(&attr, binary.LittleEndian, int32(32))
	_ = binary.Write(&attr, binary.LittleEndian, c)
	p := hd.End
	table := p + 1
	if table+8*chunks > len(data) {
		return nil, errors.New("exr: offset table runs past the end")
	}
	out := make([]byte, 0, len(data)+attr.Len())
	out = append(out, data[:p]...)
	out = append(out, attr.Bytes()...)
	out = append(out, data[p:]...)
	shift := uint64(attr.Len())
	for i := range chunks {
		o := out[table+attr.Len()+8*i:]
		binary.LittleEndian.PutUint64(o, binary.LittleEndian.Uint64(o)+shift)
	}
	return out, nil
}

// cString returns the NUL-terminated string at data[p:] (at most 255
// bytes, as OpenEXR names are) and the index after its NUL.
func cString(data []byte, p int) (string, int, error) {
	i := bytes.IndexByte(data[p:min(len(data), p+256)], 0)
	if i < 0 {
		return "", 0, errors.New("exr: header name without an end")
	}
	return string(data[p : p+i]), p + i + 1, nil
}

// ToRec709 is the matrix from linear RGB with chromaticities c to linear
// Rec.709 (D65), with a Bradford adaptation between the white points; it
// reports identity when c is Rec.709 within 1e-3.
func ToRec709(c Chromaticities) ([3][3]float64, bool) {
	same := true
	for i, v := range c {
		if math.Abs(float64(v-Rec709[i])) > 1e-3 {
			same = false
		}
	}
	if same {
		return [3][3]float64{}, true
	}
	src := rgbToXYZ(c)
	dst := rgbToXYZ(Rec709)
	adapt := bradford(whiteXYZ(c), whiteXYZ(Rec709))
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

// srgbDecode is the inverse sRGB transfer curve, encoded 0..1 to linear.
func srgbDecode(v float64) float64 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

// ToSRGB8 writes linear-light float32 planes (little-endian bytes; R, G,
// B, each with its stride) into out (RGB24, or Gray8 from R) with the sRGB
// curve, after the matrix m unless identity: code k covers the linear
// values from the curve's decode of k-0.5 to that of k+0.5 (the exact
// curve's rounding, found by binary search); NaN and negatives give 0.
func ToSRGB8(out *frame.HostFrame, planes [3][]byte, strides [3]int, m [3][3]float64, identity bool) {
	w, h, format := out.Width, out.Height, out.Format
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
}
