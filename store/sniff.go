package store

import "bytes"

// SniffLen is how many leading bytes SniffMIME needs at most (a tar
// header's magic ends at byte 262).
const SniffLen = 512

// SniffMIME names the media type of content from its leading bytes, or
// returns "" when none of the accepted input types matches:
//
//   - image/png: the 8-byte PNG signature
//   - image/jpeg: FF D8 FF
//   - image/webp: "RIFF" size "WEBP"
//   - video/quicktime: an ISO-BMFF "ftyp" box whose major brand is "qt  ",
//     or a classic QuickTime file starting with a moov, mdat, wide, free,
//     skip or pnot atom
//   - video/mp4: any other "ftyp" box
//   - audio/mpeg: an "ID3" tag or an MPEG audio frame sync
//   - audio/wav: "RIFF" size "WAVE"
//   - application/zip: a local file header "PK\x03\x04" (a frame archive
//     of uploads only)
//   - application/x-tar: a POSIX (ustar) tar header: "ustar" at byte 257
func SniffMIME(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}):
		return "image/jpeg"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WAVE":
		return "audio/wav"
	case len(b) >= 12 && string(b[4:8]) == "ftyp" && boxSize(b) >= 12:
		if string(b[8:12]) == "qt  " {
			return "video/quicktime"
		}
		return "video/mp4"
	case len(b) >= 8 && boxSize(b) >= 8 && isQTAtom(string(b[4:8])):
		return "video/quicktime"
	case bytes.HasPrefix(b, []byte("ID3")):
		return "audio/mpeg"
	case isMPEGAudioSync(b):
		return "audio/mpeg"
	case bytes.HasPrefix(b, []byte("PK\x03\x04")):
		return "application/zip"
	case len(b) >= 262 && string(b[257:262]) == "ustar":
		return "application/x-tar"
	}
	return ""
}

// MatchesMIME reports whether content's leading bytes fit the declared
// media type mt (one of the data: URI types).
func MatchesMIME(mt string, b []byte) bool {
	got := SniffMIME(b)
	return got != "" && got == mt
}

// boxSize reads an ISO-BMFF box's 32-bit size (1 means a 64-bit size
// follows, treated as large).
func boxSize(b []byte) uint32 {
	n := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	if n == 1 {
		return 1 << 31
	}
	return n
}

func isQTAtom(t string) bool {
	switch t {
	case "moov", "mdat", "wide", "free", "skip", "pnot":
		return true
	}
	return false
}

// isMPEGAudioSync checks an MPEG audio frame header: 11 sync bits, a
// version other than "reserved", a layer other than "reserved", and a
// bitrate index other than "bad".
func isMPEGAudioSync(b []byte) bool {
	if len(b) < 3 || b[0] != 0xFF || b[1]&0xE0 != 0xE0 {
		return false
	}
	version := (b[1] >> 3) & 3
	layer := (b[1] >> 1) & 3
	bitrate := b[2] >> 4
	return version != 1 && layer != 0 && bitrate != 15
}
