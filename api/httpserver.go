package api

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// HTTP server limits. A 50 MB inline data: URI is a body of about 67 MB;
// at the minimum body rate after its grace it takes under BodyTimeout on a
// link of about 1 Mbit/s.
const (
	// HeaderTimeout bounds reading a request's headers.
	HeaderTimeout = 10 * time.Second
	// BodyTimeout bounds reading one API request body, whatever its rate.
	BodyTimeout = 10 * time.Minute
	// DefaultMinBodyRate is the slowest average rate, in bytes a second, at
	// which an API request body may arrive after DefaultMinBodyGrace.
	DefaultMinBodyRate int64 = 32 << 10
	// DefaultMinBodyGrace is the time a body gets before the rate counts.
	DefaultMinBodyGrace = 10 * time.Second
	// ServerReadTimeout and ServerWriteTimeout bound a whole request on the
	// connection (signed upload PUTs and output downloads of the local store
	// included: the one-hour lifetime of an upload URL).
	ServerReadTimeout = time.Hour
	// ServerWriteTimeout: see ServerReadTimeout.
	ServerWriteTimeout = time.Hour
	// IdleTimeout closes idle keep-alive connections.
	IdleTimeout = 2 * time.Minute
)

// NewHTTPServer is an http.Server for h with the timeouts above.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: HeaderTimeout, ReadTimeout: ServerReadTimeout,
		WriteTimeout: ServerWriteTimeout, IdleTimeout: IdleTimeout}
}

// errSlowBody: the body came slower than the minimum rate or BodyTimeout.
var errSlowBody = errors.New("api: request body too slow")

// minRateBody reads a request body under a read deadline that moves with
// the bytes received: byte n must arrive by start + grace + n/rate, and
// all of them by start + BodyTimeout.
type minRateBody struct {
	rc    *http.ResponseController
	r     io.Reader
	start time.Time
	n     int64
	rate  int64
	grace time.Duration
}

// slowBodyGuard wraps a request body in a minRateBody; done lifts its
// deadline once the body is read whole, so that the server's background
// read of the connection does not time out (which would cancel the
// request). After a failed read the deadline stays: the server then gives
// up draining the rest of the body and closes the connection after its
// answer.
func (s *Server) slowBodyGuard(w http.ResponseWriter, r io.Reader) (guarded io.Reader, done func()) {
	rc := http.NewResponseController(w)
	b := &minRateBody{rc: rc, r: r, start: time.Now(), rate: s.Cfg.MinBodyRate, grace: s.Cfg.MinBodyGrace}
	if err := rc.SetReadDeadline(b.deadline()); err != nil {
		return r, func() {} // the writer cannot set deadlines: only the server's own apply
	}
	return b, func() { _ = rc.SetReadDeadline(time.Time{}) }
}

func (b *minRateBody) deadline() time.Time {
	due := b.grace + time.Duration(float64(b.n+1)/float64(b.rate)*float64(time.Second))
	return b.start.Add(min(due, BodyTimeout))
}

func (b *minRateBody) Read(p []byte) (int, error) {
	_ = b.rc.SetReadDeadline(b.deadline())
	n, err := b.r.Read(p)
	b.n += int64(n)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = errSlowBody
	}
	return n, err
}
