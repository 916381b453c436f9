package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// sniffed is what the first bytes of an input say it is.
type sniffed struct {
	kind      Kind
	container string // png jpeg webp mp4 mov
	demuxer   string // FFmpeg demuxer forced for the open
	w, h      int    // images: size from the header
	rotation  int    // images: clockwise rotation from JPEG EXIF orientation
}

// Magic numbers.
const (
	pngSig  = "\x89PNG\r\n\x1a\n"
	jpegSig = "\xFF\xD8\xFF"
)

// isHEIFBrand reports ISO-BMFF still-image brands that the mov demuxer
// would open but that are not videos this service accepts.
func isHEIFBrand(brand string) bool {
	switch brand {
	case "heic", "heix", "heim", "heis", "mif1", "msf1", "avif", "avis", "hevc", "hevx":
		return true
	}
	return false
}

// isQTAtom reports atoms that may start a QuickTime file without an ftyp box.
func isQTAtom(typ string) bool {
	switch typ {
	case "moov", "mdat", "wide", "free", "skip", "pnot":
		return true
	}
	return false
}

// sniff identifies r by its content (magic bytes and, for images, the
// header), then seeks r back to 0. Images are rejected here, before FFmpeg
// sees them, when they are animated or their header is damaged.
func sniff(r io.ReadSeeker) (sniffed, error) {
	head := make([]byte, 64)
	n, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return sniffed{}, fmt.Errorf("codec: sniff: read: %w", err)
	}
	head, err = head[:n], nil
	var s sniffed
	switch {
	case n == 0:
		return s, fmt.Errorf("codec: sniff: empty input: %w", ErrUnsupportedFormat)
	case bytes.HasPrefix(head, []byte(pngSig)):
		s = sniffed{kind: KindImage, container: "png", demuxer: "png_pipe"}
		err = sniffPNG(r, &s)
	case bytes.HasPrefix(head, []byte(jpegSig)):
		s = sniffed{kind: KindImage, container: "jpeg", demuxer: "jpeg_pipe"}
		err = sniffJPEG(r, &s)
	case n >= 12 && string(head[0:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		s = sniffed{kind: KindImage, container: "webp", demuxer: "webp_pipe"}
		err = sniffWebP(head, &s)
	case n >= 12 && string(head[4:8]) == "ftyp":
		brand := string(head[8:12])
		if isHEIFBrand(brand) {
			return s, &formatError{fmt.Sprintf("HEIF/AVIF still image (brand %q)", brand)}
		}
		s = sniffed{kind: KindVideo, container: "mp4", demuxer: "mov"}
		if brand == "qt  " {
			s.container = "mov"
		}
	case n >= 8 && isQTAtom(string(head[4:8])):
		s = sniffed{kind: KindVideo, container: "mov", demuxer: "mov"}
	case bytes.HasPrefix(head, []byte("GIF8")):
		return s, &formatError{"GIF"}
	default:
		return s, &formatError{"not an image or video of a known kind"}
	}
	if err != nil {
		return s, err
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return s, fmt.Errorf("codec: sniff: seek: %w", err)
	}
	return s, nil
}

// readAt reads exactly len(b) bytes at off.
func readAt(r io.ReadSeeker, off int64, b []byte) error {
	if _, err := r.Seek(off, io.SeekStart); err != nil {
		return err
	}
	_, err := io.ReadFull(r, b)
	return err
}

func sniffPNG(r io.ReadSeeker, s *sniffed) error {
	var hdr [8]byte
	var ihdr [8]byte
	if err := readAt(r, 8, hdr[:]); err != nil || string(hdr[4:8]) != "IHDR" {
		return fmt.Errorf("codec: sniff: png without IHDR: %w", ErrCorrupt)
	}
	if err := readAt(r, 16, ihdr[:]); err != nil {
		return fmt.Errorf("codec: sniff: png IHDR truncated: %w", ErrCorrupt)
	}
	w, h := binary.BigEndian.Uint32(ihdr[0:4]), binary.BigEndian.Uint32(ihdr[4:8])
	if w == 0 || h == 0 || w > 1<<30 || h > 1<<30 {
		return fmt.Errorf("codec: sniff: png size %dx%d: %w", w, h, ErrCorrupt)
	}
	s.w, s.h = int(w), int(h)
	// Walk the chunks before the first IDAT looking for acTL (APNG).
	off := int64(8)
	for i := 0; i < 4096; i++ {
		if err := readAt(r, off, hdr[:]); err != nil {
			return nil // truncated: FFmpeg will say so when decoding
		}
		switch string(hdr[4:8]) {
		case "acTL":
			return fmt.Errorf("codec: sniff: animated png: %w", ErrUnsupportedFormat)
		case "IDAT", "IEND":
			return nil
		}
		off += 12 + int64(binary.BigEndian.Uint32(hdr[0:4]))
	}
	return nil
}

func sniffJPEG(r io.ReadSeeker, s *sniffed) error {
	off := int64(2)
	var b [2]byte
	for i := 0; i < 65536; i++ {
		if err := readAt(r, off, b[:]); err != nil {
			return fmt.Errorf("codec: sniff: jpeg without a frame header: %w", ErrCorrupt)
		}
		if b[0] != 0xFF {
			return fmt.Errorf("codec: sniff: jpeg marker expected at %d: %w", off, ErrCorrupt)
		}
		m := b[1]
		switch {
		case m == 0xFF: // fill byte
			off++
			continue
		case m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7): // no length
			off += 2
			continue
		case m == 0xD9 || m == 0xDA:
			return fmt.Errorf("codec: sniff: jpeg without a frame header: %w", ErrCorrupt)
		}
		if err := readAt(r, off+2, b[:]); err != nil {
			return fmt.Errorf("codec: sniff: jpeg truncated: %w", ErrCorrupt)
		}
		l := int64(binary.BigEndian.Uint16(b[:]))
		if l < 2 {
			return fmt.Errorf("codec: sniff: jpeg segment length %d: %w", l, ErrCorrupt)
		}
		if m == 0xE1 && l > 8 {
			seg := make([]byte, l-2)
			if err := readAt(r, off+4, seg); err == nil {
				s.rotation = exifRotation(seg)
			}
		}
		if m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC {
			var sof [5]byte
			if err := readAt(r, off+4, sof[:]); err != nil {
				return fmt.Errorf("codec: sniff: jpeg frame header truncated: %w", ErrCorrupt)
			}
			h, w := binary.BigEndian.Uint16(sof[1:3]), binary.BigEndian.Uint16(sof[3:5])
			if w == 0 || h == 0 {
				return fmt.Errorf("codec: sniff: jpeg size %dx%d: %w", w, h, ErrCorrupt)
			}
			s.w, s.h = int(w), int(h)
			return nil
		}
		off += 2 + l
	}
	return fmt.Errorf("codec: sniff: jpeg without a frame header: %w", ErrCorrupt)
}

func sniffWebP(head []byte, s *sniffed) error {
	if len(head) < 30 {
		return fmt.Errorf("codec: sniff: webp header truncated: %w", ErrCorrupt)
	}
	d := head[20:]
	switch string(head[12:16]) {
	case "VP8 ":
		if d[3] != 0x9d || d[4] != 0x01 || d[5] != 0x2a {
			return fmt.Errorf("codec: sniff: webp VP8 start code missing: %w", ErrCorrupt)
		}
		s.w = int(binary.LittleEndian.Uint16(d[6:8]) & 0x3fff)
		s.h = int(binary.LittleEndian.Uint16(d[8:10]) & 0x3fff)
	case "VP8L":
		if d[0] != 0x2f {
			return fmt.Errorf("codec: sniff: webp VP8L signature missing: %w", ErrCorrupt)
		}
		bits := binary.LittleEndian.Uint32(d[1:5])
		s.w = int(bits&0x3fff) + 1
		s.h = int((bits>>14)&0x3fff) + 1
	case "VP8X":
		if d[0]&0x02 != 0 {
			return fmt.Errorf("codec: sniff: animated webp: %w", ErrUnsupportedFormat)
		}
		s.w = int(uint32(d[4])|uint32(d[5])<<8|uint32(d[6])<<16) + 1
		s.h = int(uint32(d[7])|uint32(d[8])<<8|uint32(d[9])<<16) + 1
	default:
		return fmt.Errorf("codec: sniff: webp chunk %q: %w", head[12:16], ErrCorrupt)
	}
	if s.w == 0 || s.h == 0 {
		return fmt.Errorf("codec: sniff: webp size %dx%d: %w", s.w, s.h, ErrCorrupt)
	}
	return nil
}

// exifRotation reads the orientation tag of an APP1 Exif segment and
// returns the clockwise rotation it asks for: 3 -> 180, 6 -> 90, 8 -> 270.
// Mirrored orientations (2, 4, 5, 7) and anything unreadable give 0.
func exifRotation(seg []byte) int {
	if len(seg) < 14 || string(seg[:6]) != "Exif\x00\x00" {
		return 0
	}
	t := seg[6:]
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 0
	}
	ifd := int64(bo.Uint32(t[4:8]))
	if ifd < 8 || ifd+2 > int64(len(t)) {
		return 0
	}
	n := int64(bo.Uint16(t[ifd : ifd+2]))
	for i := int64(0); i < n; i++ {
		e := ifd + 2 + 12*i
		if e+12 > int64(len(t)) {
			return 0
		}
		if bo.Uint16(t[e:e+2]) != 0x0112 || bo.Uint16(t[e+2:e+4]) != 3 {
			continue
		}
		switch bo.Uint16(t[e+8 : e+10]) {
		case 3:
			return 180
		case 6:
			return 90
		case 8:
			return 270
		}
		return 0
	}
	return 0
}

// AcceptedFormats names the media this package reads, for messages that
// tell a user what to send instead.
const AcceptedFormats = "PNG, JPEG or WebP images and MP4 or MOV videos (H.264 or HEVC)"

// formatError is a file of a kind this package does not read: one line
// that says what it is and what is accepted. It wraps ErrUnsupportedFormat.
type formatError struct{ what string }

func (e *formatError) Error() string {
	return "codec: " + e.what + "; accepted: " + AcceptedFormats
}

func (e *formatError) Unwrap() error { return ErrUnsupportedFormat }
