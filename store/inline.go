package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// ExtMIME is the media type an upload filename's extension names (any
// case; ".jpg" and ".jpeg" both image/jpeg), or "" for another extension.
func ExtMIME(filename string) string {
	switch strings.ToLower(path.Ext(filename)) {
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".webp":
		return "image/webp"
	case ".mp4":
		return "video/mp4"
	case ".mov":
		return "video/quicktime"
	case ".mp3":
		return "audio/mpeg"
	case ".wav":
		return "audio/wav"
	case ".zip":
		return "application/zip"
	case ".tar":
		return "application/x-tar"
	}
	return ""
}

// CheckSniff is the one content-sniffing rule of uploads and data: URIs
// alike: the media type sniffed from the content's leading bytes
// (SniffMIME) must be the declared one (a data: URI's MIME type, or the
// type of an upload filename's extension). MP4 and QuickTime, one
// container family, stand for each other. The error wraps ErrMIMEMismatch.
func CheckSniff(declared string, head []byte) error {
	got := SniffMIME(head)
	if got == declared && got != "" {
		return nil
	}
	if isISOBMFF(got) && isISOBMFF(declared) {
		return nil
	}
	if got == "" {
		got = "unrecognised content"
	}
	return fmt.Errorf("store: declared %s, content is %s: %w", declared, got, ErrMIMEMismatch)
}

func isISOBMFF(mt string) bool { return mt == "video/mp4" || mt == "video/quicktime" }

// PutData streams the decoded content of a data: URI into key of st,
// without holding the content in memory, after the CheckSniff rule on its
// leading bytes. Nothing is stored when the content fails the rule, the
// base64 is bad (ErrInvalidURI) or ctx ends.
func PutData(ctx context.Context, st Store, key string, u URI) (Object, error) {
	if u.Kind != KindData {
		return Object{}, fmt.Errorf("store: put data %s: not a data: uri: %w", key, ErrInvalidURI)
	}
	size := u.DataSize()
	r := u.DataReader()
	head := make([]byte, min(int64(SniffLen), size))
	if _, err := io.ReadFull(r, head); err != nil {
		if errors.Is(err, ErrInvalidURI) {
			return Object{}, err
		}
		return Object{}, fmt.Errorf("store: data uri: %w: %w", ErrInvalidURI, err)
	}
	if err := CheckSniff(u.MIME, head); err != nil {
		return Object{}, fmt.Errorf("store: data uri: %w", err)
	}
	// The content is counted as it streams: more than size bytes (which
	// parsing checked against the limit) stops at the first byte over.
	body := &sizedReader{r: io.LimitReader(io.MultiReader(bytes.NewReader(head), r), size+1), max: size}
	obj, err := st.Put(ctx, key, body, size, u.MIME)
	if err != nil {
		return Object{}, err
	}
	return obj, nil
}

// sizedReader reads at most max bytes from r and fails with ErrTooLarge at
// the first byte past max.
type sizedReader struct {
	r   io.Reader
	n   int64
	max int64
}

func (s *sizedReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.n += int64(n)
	if s.n > s.max {
		return n - int(s.n-s.max), fmt.Errorf("store: data uri: more than %d decoded bytes: %w", s.max, ErrTooLarge)
	}
	return n, err
}
