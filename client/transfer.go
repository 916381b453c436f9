package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vfxrender/vfx/internal/retry"
)

// ContentType maps the upload extensions (docs/api.md, Uploads) to MIME
// types; application/octet-stream for any other.
func ContentType(file string) string {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".mp4":
		return "video/mp4"
	case ".mov":
		return "video/quicktime"
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".webp":
		return "image/webp"
	case ".mp3":
		return "audio/mpeg"
	case ".wav":
		return "audio/wav"
	case ".zip":
		return "application/zip"
	case ".tar":
		return "application/x-tar"
	}
	return "application/octet-stream"
}

// Upload sends a local file through POST /v1/uploads and a PUT to the
// returned URL, streaming it from disk, and returns its vfx:// URI. The
// file's name must end in one of ContentType's extensions.
func (c *Client) Upload(ctx context.Context, file string) (string, error) {
	ctype := ContentType(file)
	if ctype == "application/octet-stream" {
		return "", fmt.Errorf("INVALID_FILE_FORMAT: upload: %s: the name must end in .png, .jpg, .jpeg or .webp (images), .mp4 or .mov (videos), or .zip or .tar (an archive of PNG or EXR frames, a video)", file)
	}
	st, err := os.Stat(file)
	if err != nil {
		return "", fmt.Errorf("upload: %w", err)
	}
	_, _, raw, err := c.Call(ctx, http.MethodPost, "/v1/uploads", map[string]string{"filename": filepath.Base(file)}, CallOptions{Retry: true})
	if err != nil {
		return "", fmt.Errorf("upload %s: %w", file, err)
	}
	var rec struct {
		UploadURL string `json:"upload_url"`
		VfxURI    string `json:"vfx_uri"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil || rec.UploadURL == "" || rec.VfxURI == "" {
		return "", fmt.Errorf("upload %s: %w: %s", file, ErrUnexpectedAnswer, OneLine(string(raw)))
	}
	err = c.transient(ctx, func(ctx context.Context) (bool, error) {
		return c.putFile(ctx, rec.UploadURL, file, st.Size(), ctype)
	})
	if err != nil {
		return "", fmt.Errorf("upload %s: %w", file, err)
	}
	return rec.VfxURI, nil
}

// transient calls f, which says whether its failure is worth another
// attempt, up to MaxTransient times, pausing 1 s, 2 s, then 4 s before
// each new attempt.
func (c *Client) transient(ctx context.Context, f func(context.Context) (bool, error)) error {
	again := false
	return retry.Do(ctx, retry.Options{
		Backoff:   retry.Backoff{Initial: time.Second, Max: 4 * time.Second},
		Attempts:  MaxTransient,
		Sleep:     c.sleep,
		Retryable: func(error) (bool, time.Duration) { return again, 0 },
	}, func(ctx context.Context) (err error) {
		again, err = f(ctx)
		return err
	})
}

// putFile PUTs one file to a presigned URL and says whether a failure is
// worth another attempt.
func (c *Client) putFile(ctx context.Context, u, file string, size int64, ctype string) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, f)
	if err != nil {
		return false, err
	}
	req.ContentLength = size // a plain body, not chunked: presigned S3 PUTs need the length
	if size == 0 {
		req.Body = http.NoBody
	}
	req.Header.Set("Content-Type", ctype)
	res, err := c.hc.Do(req)
	if err != nil {
		return true, err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return res.StatusCode >= 500, ParseError(res.StatusCode, res.Header, raw)
	}
	return false, nil
}

// DownloadOutputs saves each output URL (render, source, alpha, then any
// others) into dir as <name><extension of the URL> and returns the paths.
func (c *Client) DownloadOutputs(ctx context.Context, output map[string]string, dir string) ([]string, error) {
	if len(output) == 0 {
		return nil, errors.New("completed without output URLs")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(output))
	for k := range output {
		names = append(names, k)
	}
	rank := func(k string) int {
		if i := slices.Index([]string{"render", "source", "alpha"}, k); i >= 0 {
			return i
		}
		return 3
	}
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	paths := make([]string, 0, len(names))
	for _, name := range names {
		u, err := url.Parse(output[name])
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return paths, fmt.Errorf("output %s: bad URL %q", name, output[name])
		}
		base := filepath.Base(filepath.Clean("/" + name)) // keep the name a plain file name
		dst := filepath.Join(dir, base+strings.ToLower(path.Ext(u.Path)))
		err = c.transient(ctx, func(ctx context.Context) (bool, error) { return c.download(ctx, u.String(), dst) })
		if err != nil {
			return paths, fmt.Errorf("download %s: %w", name, err)
		}
		paths = append(paths, dst)
	}
	return paths, nil
}

// download GETs a signed URL (no API key: the signature is the
// credential) into dst through a temporary file, and says whether a
// failure is worth another attempt.
func (c *Client) download(ctx context.Context, u, dst string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return true, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		return res.StatusCode >= 500, ParseError(res.StatusCode, res.Header, raw)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".download-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	n, err := io.Copy(tmp, res.Body)
	if err == nil {
		err = tmp.Chmod(0o644) // CreateTemp makes 0600; outputs are ordinary files
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return true, err
	}
	if res.ContentLength >= 0 && n != res.ContentLength {
		return true, fmt.Errorf("got %d of %d bytes", n, res.ContentLength)
	}
	return false, os.Rename(tmp.Name(), dst)
}
