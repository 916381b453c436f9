package store_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/store"
)

func pngBytes(t testing.TB) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 4, 3))
	img.Set(1, 1, color.NRGBA{R: 255, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func dataURI(mime string, b []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b)
}

func TestResolverUploads(t *testing.T) {
	ctx := t.Context()
	l, _ := newLocal(t, "")
	r := &store.Resolver{Store: l}
	content := pngBytes(t)
	id := store.NewUploadID()
	if err := store.ValidateUploadID(id); err != nil {
		t.Fatalf("NewUploadID gave %q: %v", id, err)
	}
	if _, err := l.Put(ctx, store.UploadKey(id, "still frame.png"), bytes.NewReader(content), int64(len(content)), "image/png"); err != nil {
		t.Fatal(err)
	}

	rc, info, err := r.Open(ctx, store.UploadURI(id, "still frame.png"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer rc.Close()
	if got := readAll(t, rc); !bytes.Equal(got, content) {
		t.Fatal("content differs")
	}
	if info.Size != int64(len(content)) || info.ContentType != "image/png" || info.Name != "still frame.png" || info.URI.Kind != store.KindUpload {
		t.Fatalf("info = %+v", info)
	}

	for _, tc := range []struct {
		uri  string
		want error
	}{
		{"vfx://uploads/upload_abcd1234/missing.mp4", store.ErrNotFound},
		{"vfx://uploads/upload_ab/x.mp4", store.ErrInvalidURI},           // id too short
		{"vfx://uploads/file_abcd1234/x.mp4", store.ErrInvalidURI},       // wrong prefix
		{"vfx://uploads/upload_abcd-1234/x.mp4", store.ErrInvalidURI},    // bad id char
		{"vfx://uploads/upload_abcd1234/clip.avi", store.ErrInvalidURI},  // extension
		{"vfx://uploads/upload_abcd1234/clip", store.ErrInvalidURI},      // no extension
		{"vfx://uploads/upload_abcd1234/.mp4", store.ErrInvalidURI},      // no stem
		{"vfx://uploads/upload_abcd1234/a/b.mp4", store.ErrInvalidURI},   // slash
		{"vfx://uploads/upload_abcd1234/../x.mp4", store.ErrInvalidURI},  // traversal
		{"vfx://uploads/upload_abcd1234/a%2Fb.mp4", store.ErrInvalidURI}, // percent
		{"vfx://uploads/upload_abcd1234", store.ErrInvalidURI},
		{"vfx://elsewhere/upload_abcd1234/x.mp4", store.ErrInvalidURI},
		{"vfx://uploads/upload_abcd1234/" + strings.Repeat("a", 252) + ".png", store.ErrInvalidURI}, // 256 chars
	} {
		if _, _, err := r.Open(ctx, tc.uri); !errors.Is(err, tc.want) {
			t.Errorf("Open(%q) = %v, want %v", tc.uri, err, tc.want)
		}
	}
	// 255 characters is the longest name.
	if _, err := store.ParseURI("vfx://uploads/upload_abcd1234/" + strings.Repeat("a", 251) + ".png"); err != nil {
		t.Errorf("255-char filename refused: %v", err)
	}
	if _, _, err := (&store.Resolver{}).Open(ctx, store.UploadURI(id, "still frame.png")); err == nil {
		t.Error("upload opened without a store")
	}
}

func TestResolverData(t *testing.T) {
	ctx := t.Context()
	r := &store.Resolver{}
	content := pngBytes(t)

	rc, info, err := r.Open(ctx, dataURI("image/png", content))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if got := readAll(t, rc); !bytes.Equal(got, content) {
		t.Fatal("content differs")
	}
	if _, err := rc.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(rc); err != nil {
		t.Fatalf("decode after seek: %v", err)
	}
	_ = rc.Close()
	if info.Size != int64(len(content)) || info.ContentType != "image/png" || info.URI.Kind != store.KindData {
		t.Fatalf("info = %+v", info)
	}
	// Unpadded base64 and MIME parameters are accepted.
	raw := "data:IMAGE/PNG;name=x.png;base64," + base64.RawStdEncoding.EncodeToString(content)
	if _, _, err := r.Open(ctx, raw); err != nil {
		t.Fatalf("unpadded/params: %v", err)
	}

	small := &store.Resolver{MaxDataBytes: 20}
	for _, tc := range []struct {
		name string
		r    *store.Resolver
		uri  string
		want error
	}{
		{"mismatch", r, dataURI("image/jpeg", content), store.ErrMIMEMismatch},
		{"unrecognised", r, dataURI("video/mp4", []byte("not a video at all")), store.ErrMIMEMismatch},
		{"mime not accepted", r, dataURI("image/gif", []byte("GIF89a")), store.ErrInvalidURI},
		{"not base64 form", r, "data:image/png," + string(content[:8]), store.ErrInvalidURI},
		{"bad base64 char", r, "data:image/png;base64,iVBO*w0KGgo=", store.ErrInvalidURI},
		{"bad base64 length", r, "data:image/png;base64,iVBORw0KG", store.ErrInvalidURI},
		{"bad padding", r, "data:image/png;base64,iVBORw==0KGgo", store.ErrInvalidURI},
		{"empty", r, "data:image/png;base64,", store.ErrInvalidURI},
		{"no comma", r, "data:image/png;base64", store.ErrInvalidURI},
		{"over the limit", small, dataURI("image/png", content), store.ErrTooLarge},
		// Judged on the encoded length: garbage that is too long is too
		// large, not invalid, so nothing was decoded or scanned.
		{"over the limit undecoded", small, "data:image/png;base64," + strings.Repeat("*", 200), store.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := tc.r.Open(ctx, tc.uri); !errors.Is(err, tc.want) {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
		})
	}
	// At the limit exactly is fine.
	exact := &store.Resolver{MaxDataBytes: int64(len(content))}
	if _, _, err := exact.Open(ctx, dataURI("image/png", content)); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	// The default limit is 50 MB decoded, checked before decoding (here a
	// text far over) and, exactly, on the decoded length (TestDataLimitEdge).
	big := "data:video/mp4;base64," + strings.Repeat("A", int(store.DefaultMaxDataBytes/3*4)+8)
	if _, err := store.ParseURI(big); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("ParseURI of a 50 MB+ data uri = %v, want ErrTooLarge", err)
	}
}

func TestSniffMIME(t *testing.T) {
	ftyp := func(brand string) []byte {
		return append([]byte{0, 0, 0, 20}, []byte("ftyp"+brand+"\x00\x00\x02\x00isom")...)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"png", pngBytes(t), "image/png"},
		{"jpeg", []byte{0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, 'J', 'F', 'I', 'F'}, "image/jpeg"},
		{"webp", []byte("RIFF\x24\x00\x00\x00WEBPVP8 "), "image/webp"},
		{"wav", []byte("RIFF\x24\x00\x00\x00WAVEfmt "), "audio/wav"},
		{"mp4", ftyp("isom"), "video/mp4"},
		{"mp4 brand", ftyp("mp42"), "video/mp4"},
		{"quicktime ftyp", ftyp("qt  "), "video/quicktime"},
		{"quicktime classic", []byte("\x00\x00\x00\x08wide\x00\x00\x00\x10mdat"), "video/quicktime"},
		{"mp3 id3", []byte("ID3\x04\x00\x00\x00\x00\x00\x00"), "audio/mpeg"},
		{"mp3 sync", []byte{0xFF, 0xFB, 0x90, 0x44}, "audio/mpeg"},
		{"bad sync", []byte{0xFF, 0xE2, 0xF0, 0x00}, ""},
		{"riff other", []byte("RIFF\x24\x00\x00\x00AVI LIST"), ""},
		{"text", []byte("hello world, not media"), ""},
		{"short", []byte{0x89}, ""},
		{"empty", nil, ""},
	} {
		if got := store.SniffMIME(tc.b); got != tc.want {
			t.Errorf("%s: SniffMIME = %q, want %q", tc.name, got, tc.want)
		}
	}
	if store.MatchesMIME("video/mp4", ftyp("qt  ")) {
		t.Error("qt brand matched video/mp4")
	}
}

func TestClassifyAddr(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want string
	}{
		{"10.0.0.1", store.AddrPrivate},
		{"172.16.5.4", store.AddrPrivate},
		{"172.31.255.255", store.AddrPrivate},
		{"172.32.0.1", store.AddrPublic},
		{"192.168.1.1", store.AddrPrivate},
		{"127.0.0.1", store.AddrLoopback},
		{"127.8.9.10", store.AddrLoopback},
		{"::1", store.AddrLoopback},
		{"169.254.169.254", store.AddrMetadata},
		{"fd00:ec2::254", store.AddrMetadata},
		{"169.254.1.1", store.AddrLinkLocal},
		{"fe80::1", store.AddrLinkLocal},
		{"fe80::1%eth0", store.AddrLinkLocal},
		{"fc00::1", store.AddrPrivate},
		{"fd12:3456::1", store.AddrPrivate},
		{"100.64.0.1", store.AddrCGNAT},
		{"100.127.255.254", store.AddrCGNAT},
		{"100.128.0.1", store.AddrPublic},
		{"0.0.0.0", store.AddrUnspecified},
		{"0.1.2.3", store.AddrUnspecified},
		{"::", store.AddrUnspecified},
		{"224.0.0.1", store.AddrMulticast},
		{"239.255.255.250", store.AddrMulticast},
		{"ff02::1", store.AddrMulticast},
		{"255.255.255.255", store.AddrReserved},
		{"::ffff:127.0.0.1", store.AddrLoopback},
		{"::ffff:10.1.2.3", store.AddrPrivate},
		{"::ffff:169.254.169.254", store.AddrMetadata},
		{"64:ff9b::a00:1", store.AddrPrivate},     // NAT64 of 10.0.0.1
		{"64:ff9b::808:808", store.AddrPublic},    // NAT64 of 8.8.8.8
		{"2002:7f00:1::1", store.AddrLoopback},    // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::1", store.AddrMetadata}, // 6to4 of 169.254.169.254
		{"8.8.8.8", store.AddrPublic},
		{"1.1.1.1", store.AddrPublic},
		{"2606:4700::1111", store.AddrPublic},
		{"2001:4860:4860::8888", store.AddrPublic},
	} {
		ip := netip.MustParseAddr(tc.ip)
		if got := store.ClassifyAddr(ip); got != tc.want {
			t.Errorf("ClassifyAddr(%s) = %q, want %q", tc.ip, got, tc.want)
		}
	}
	if got := store.ClassifyAddr(netip.Addr{}); got != store.AddrInvalid {
		t.Errorf("zero Addr = %q", got)
	}
	g := &store.AddressGuard{AllowHosts: []string{"127.0.0.1", "10.1.0.0/16", "fd00::/8", "Files.Internal."}}
	for ip, ok := range map[string]bool{
		"127.0.0.1": true, "127.0.0.2": false, "10.1.200.3": true, "10.2.0.1": false,
		"fd00:ec2::254": true, "::ffff:127.0.0.1": true, "8.8.8.8": true, "169.254.169.254": false,
	} {
		err := g.CheckIP(netip.MustParseAddr(ip))
		if ok != (err == nil) || (err != nil && !errors.Is(err, store.ErrForbiddenAddress)) {
			t.Errorf("CheckIP(%s) = %v, want allowed=%v", ip, err, ok)
		}
	}
	if err := (&store.AddressGuard{AllowHosts: []string{"10.0.0.0/99"}}).CheckIP(netip.MustParseAddr("8.8.8.8")); err == nil {
		t.Error("bad CIDR in allow-list accepted")
	}
}

// tlsSource starts a loopback TLS server and returns it with a Resolver
// that trusts it (and nothing allow-listed).
func tlsSource(t *testing.T, h http.Handler) (*httptest.Server, *store.Resolver) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv, &store.Resolver{RootCAs: pool}
}

func TestResolverHTTPS(t *testing.T) {
	ctx := t.Context()
	content := bytes.Repeat([]byte("frame-data-"), 10_000) // 110 kB
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/media/clip.mp4", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "video/mp4; codecs=avc1")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(content))
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		for range 20 {
			_, _ = w.Write(content[:1000])
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/boom", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "x", http.StatusServiceUnavailable) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/hop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/media/clip.mp4", http.StatusFound)
	})
	var redirectTarget string
	mux.HandleFunc("/redir", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, redirectTarget, http.StatusFound)
	})
	srv, base := tlsSource(t, mux)
	t.Cleanup(func() { close(release) })
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	allowed := func() *store.Resolver {
		r := *base
		r.AllowHosts = []string{"127.0.0.1"}
		return &r
	}

	t.Run("loopback refused by default", func(t *testing.T) {
		if _, _, err := base.Open(ctx, srv.URL+"/media/clip.mp4"); !errors.Is(err, store.ErrForbiddenAddress) {
			t.Fatalf("Open = %v, want ErrForbiddenAddress", err)
		}
	})
	t.Run("name resolving to loopback refused at dial", func(t *testing.T) {
		_, _, err := base.Open(ctx, "https://localhost:"+port+"/media/clip.mp4")
		if !errors.Is(err, store.ErrForbiddenAddress) {
			t.Fatalf("Open = %v, want ErrForbiddenAddress", err)
		}
	})
	t.Run("allowed", func(t *testing.T) {
		rc, info, err := allowed().Open(ctx, srv.URL+"/media/clip.mp4?token=secret")
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer rc.Close()
		if got := readAll(t, rc); !bytes.Equal(got, content) {
			t.Fatal("content differs")
		}
		if _, err := rc.Seek(-5, io.SeekEnd); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, rc); string(got) != "data-" {
			t.Fatalf("tail = %q", got)
		}
		if info.Size != int64(len(content)) || info.ContentType != "video/mp4" || info.Name != "clip.mp4" || info.URI.Kind != store.KindHTTP {
			t.Fatalf("info = %+v", info)
		}
	})
	t.Run("allowed by CIDR after a redirect", func(t *testing.T) {
		r := *base
		r.AllowHosts = []string{"127.0.0.0/8"}
		rc, info, err := r.Open(ctx, srv.URL+"/hop")
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		_ = rc.Close()
		if info.Name != "clip.mp4" {
			t.Fatalf("info = %+v", info)
		}
	})
	t.Run("spooled to a temp file", func(t *testing.T) {
		r := allowed()
		r.SpoolMemory = 1024
		r.TempDir = t.TempDir()
		rc, info, err := r.Open(ctx, srv.URL+"/media/clip.mp4")
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if _, err := rc.Seek(11, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, rc); !bytes.Equal(got, content[11:]) || info.Size != int64(len(content)) {
			t.Fatal("content differs")
		}
		if err := rc.Close(); err != nil {
			t.Fatal(err)
		}
		if err := rc.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if left, _ := os.ReadDir(r.TempDir); len(left) != 0 {
			t.Fatalf("spool files left: %v", left)
		}
	})
	for _, target := range []string{
		"https://127.0.0.2:" + port + "/media/clip.mp4",
		"https://169.254.169.254/latest/meta-data/",
		"https://10.0.0.1/x.png",
		"https://[::1]:" + port + "/media/clip.mp4",
		"http://127.0.0.1:" + port + "/media/clip.mp4",
	} {
		t.Run("redirect to "+target, func(t *testing.T) {
			redirectTarget = target
			if _, _, err := allowed().Open(ctx, srv.URL+"/redir"); !errors.Is(err, store.ErrForbiddenAddress) {
				t.Fatalf("Open = %v, want ErrForbiddenAddress", err)
			}
		})
	}
	t.Run("too many redirects", func(t *testing.T) {
		if _, _, err := allowed().Open(ctx, srv.URL+"/loop"); !errors.Is(err, store.ErrUnreachable) {
			t.Fatalf("Open = %v, want ErrUnreachable", err)
		}
	})
	t.Run("size cap with content-length", func(t *testing.T) {
		r := allowed()
		r.MaxHTTPBytes = 1000
		if _, _, err := r.Open(ctx, srv.URL+"/media/clip.mp4"); !errors.Is(err, store.ErrTooLarge) {
			t.Fatalf("Open = %v, want ErrTooLarge", err)
		}
	})
	t.Run("size cap streaming", func(t *testing.T) {
		for _, spool := range []int64{0, 100} {
			r := allowed()
			r.MaxHTTPBytes = 15_000
			r.SpoolMemory = spool
			r.TempDir = t.TempDir()
			if _, _, err := r.Open(ctx, srv.URL+"/chunked"); !errors.Is(err, store.ErrTooLarge) {
				t.Fatalf("spool %d: Open = %v, want ErrTooLarge", spool, err)
			}
			r.MaxHTTPBytes = 20_000
			rc, info, err := r.Open(ctx, srv.URL+"/chunked")
			if err != nil || info.Size != 20_000 {
				t.Fatalf("spool %d: at the cap: %+v %v", spool, info, err)
			}
			_ = rc.Close()
		}
	})
	t.Run("status", func(t *testing.T) {
		for path, code := range map[string]int{"/missing": 404, "/boom": 503} {
			_, _, err := allowed().Open(ctx, srv.URL+path)
			var se *store.StatusError
			if !errors.Is(err, store.ErrUnreachable) || !errors.As(err, &se) || se.StatusCode != code {
				t.Fatalf("%s: Open = %v, want ErrUnreachable with status %d", path, err, code)
			}
		}
	})
	t.Run("timeout", func(t *testing.T) {
		r := allowed()
		r.Timeout = 200 * time.Millisecond
		_, _, err := r.Open(ctx, srv.URL+"/slow")
		if !errors.Is(err, store.ErrUnreachable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Open = %v, want ErrUnreachable and DeadlineExceeded", err)
		}
	})
	t.Run("caller cancels", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, _, err := allowed().Open(cctx, srv.URL+"/slow")
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, store.ErrUnreachable) {
			t.Fatalf("Open = %v, want the caller's DeadlineExceeded only", err)
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		r := &store.Resolver{AllowHosts: []string{"127.0.0.1"}}
		if _, _, err := r.Open(ctx, srv.URL+"/media/clip.mp4"); !errors.Is(err, store.ErrUnreachable) {
			t.Fatalf("Open = %v, want ErrUnreachable", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		if _, _, err := allowed().Open(ctx, "https://"+addr+"/x.png"); !errors.Is(err, store.ErrUnreachable) {
			t.Fatalf("Open = %v, want ErrUnreachable", err)
		}
	})
	t.Run("error hides the query", func(t *testing.T) {
		_, _, err := allowed().Open(ctx, srv.URL+"/missing?X-Amz-Signature=topsecret")
		if err == nil || strings.Contains(err.Error(), "topsecret") {
			t.Fatalf("error %v leaks the query", err)
		}
	})
}

func TestResolverHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprint(w, "plain")
	}))
	t.Cleanup(srv.Close)
	if _, _, err := (&store.Resolver{AllowHosts: []string{"127.0.0.1"}}).Open(t.Context(), srv.URL+"/a.png"); !errors.Is(err, store.ErrInvalidURI) {
		t.Fatalf("http:// without AllowHTTP = %v, want ErrInvalidURI", err)
	}
	if _, _, err := (&store.Resolver{AllowHTTP: true}).Open(t.Context(), srv.URL+"/a.png"); !errors.Is(err, store.ErrForbiddenAddress) {
		t.Fatalf("http:// loopback without allow-list = %v, want ErrForbiddenAddress", err)
	}
	rc, info, err := (&store.Resolver{AllowHTTP: true, AllowHosts: []string{"127.0.0.1"}}).Open(t.Context(), srv.URL+"/a.png")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got := readAll(t, rc); string(got) != "plain" || info.Size != 5 {
		t.Fatalf("got %q %+v", got, info)
	}
}

func TestParseURI(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind store.URIKind
		want error
	}{
		{"vfx://uploads/upload_abcd1234/clip.MOV", store.KindUpload, nil},
		{"https://cdn.example.com/a/b.mp4?sig=1", store.KindHTTP, nil},
		{"HTTPS://cdn.example.com/a.png", store.KindHTTP, nil},
		{"https://[2606:4700::1111]:8443/a.png", store.KindHTTP, nil},
		{"data:image/png;base64,iVBORw0KGgo=", store.KindData, nil},
		{"http://cdn.example.com/a.png", 0, store.ErrInvalidURI},
		{"ftp://cdn.example.com/a.png", 0, store.ErrInvalidURI},
		{"file:///etc/passwd", 0, store.ErrInvalidURI},
		{"https://user:pw@cdn.example.com/a.png", 0, store.ErrInvalidURI},
		{"https:///a.png", 0, store.ErrInvalidURI},
		{"https://cdn.example.com:99999/a.png", 0, store.ErrInvalidURI},
		{"https://" + strings.Repeat("a", store.MaxURLLen) + ".com/", 0, store.ErrInvalidURI},
		{"no scheme", 0, store.ErrInvalidURI},
		{"", 0, store.ErrInvalidURI},
		{"/local/path.png", 0, store.ErrInvalidURI},
	} {
		u, err := store.ParseURI(tc.in)
		if !errors.Is(err, tc.want) || (err == nil && u.Kind != tc.kind) {
			t.Errorf("ParseURI(%.60q) = %v %v, want kind %v err %v", tc.in, u.Kind, err, tc.kind, tc.want)
		}
	}
	u, _ := store.ParseURI("https://cdn.example.com/a.png?X-Amz-Signature=secret#frag")
	if s := u.String(); strings.Contains(s, "secret") || strings.Contains(s, "frag") {
		t.Errorf("String() = %q leaks the query", s)
	}
	u, _ = store.ParseURI("data:image/png;base64,iVBORw0KGgo=")
	if s := u.String(); s != "data:image/png;base64,<12 chars>" || u.EncodedLen() != 12 {
		t.Errorf("String() = %q", s)
	}
	// Resolver.Parse refuses literal forbidden hosts at once.
	if _, err := (&store.Resolver{}).Parse("https://169.254.169.254/latest"); !errors.Is(err, store.ErrForbiddenAddress) {
		t.Errorf("Parse of a metadata IP = %v", err)
	}
	if _, err := (&store.Resolver{}).Parse("https://[fd00:ec2::254]/latest"); !errors.Is(err, store.ErrForbiddenAddress) {
		t.Errorf("Parse of the IPv6 metadata IP = %v", err)
	}
}

func FuzzParseURI(f *testing.F) {
	for _, s := range []string{
		"vfx://uploads/upload_abcd1234/clip.mp4",
		"vfx://uploads/upload_abcd1234/a b (1).png",
		"https://cdn.example.com/a/b.mp4?x=1#y",
		"https://[::1]:443/x",
		"data:image/png;base64,iVBORw0KGgo=",
		"data:video/mp4;codecs=avc1;base64,AAAA",
		"data:,",
		"vfx://",
		"https://%zz",
		"\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := store.ParseURI(s)
		if err != nil {
			if !errors.Is(err, store.ErrInvalidURI) && !errors.Is(err, store.ErrTooLarge) {
				t.Fatalf("ParseURI(%q) error %v wraps no sentinel", s, err)
			}
			return
		}
		_ = u.String()
		switch u.Kind {
		case store.KindUpload:
			if err := store.ValidateKey(u.Key()); err != nil {
				t.Fatalf("ParseURI(%q) gave an invalid key: %v", s, err)
			}
			// The scheme is case-insensitive; the rest is taken literally.
			if got := store.UploadURI(u.UploadID, u.Filename); !strings.EqualFold(got[:3], s[:3]) || got[3:] != s[3:] {
				t.Fatalf("ParseURI(%q) does not round-trip", s)
			}
		case store.KindHTTP:
			if u.URL == nil || u.URL.Hostname() == "" || (u.URL.Scheme != "https") {
				t.Fatalf("ParseURI(%q) gave URL %v", s, u.URL)
			}
		case store.KindData:
			if !store.DataMIMEAllowed(u.MIME) {
				t.Fatalf("ParseURI(%q) gave MIME %q", s, u.MIME)
			}
		default:
			t.Fatalf("ParseURI(%q) gave kind %v", s, u.Kind)
		}
	})
}

// TestDataLimitEdge: the data: limit counts decoded bytes: 50,000,000
// are accepted and 50,000,001 refused with ErrTooLarge, padded or not
// (a padded text of 50,000,001 bytes is as long as one of 50,000,000:
// 66,666,668 characters).
func TestDataLimitEdge(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds 67 MB data: URIs")
	}
	limit := int(store.DefaultMaxDataBytes)
	content := make([]byte, limit+1)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
		for _, c := range []struct {
			n    int
			want error
		}{{limit - 1, nil}, {limit, nil}, {limit + 1, store.ErrTooLarge}} {
			uri := "data:image/png;base64," + enc.EncodeToString(content[:c.n])
			u, err := store.ParseURI(uri)
			if !errors.Is(err, c.want) || (c.want != nil) != (err != nil) {
				t.Fatalf("%d decoded bytes (padding %v): err %v, want %v", c.n, enc == base64.StdEncoding, err, c.want)
			}
			if err == nil && u.DataSize() != int64(c.n) {
				t.Fatalf("%d decoded bytes: DataSize %d", c.n, u.DataSize())
			}
		}
	}
}
