package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// defaultReadyTimeout bounds StartEmbedded when ctx carries no deadline.
const defaultReadyTimeout = 10 * time.Second

// EmbeddedConfig configures an in-process nats-server with JetStream.
type EmbeddedConfig struct {
	// StoreDir is the JetStream file store directory. Required.
	StoreDir string
	// Host is the listen address; empty means 127.0.0.1.
	Host string
	// Port is the client port; -1 picks a free port, 0 means the NATS
	// default (4222).
	Port int
	// Logger, when set, receives the server's notices, warnings and errors.
	// Nil keeps the server silent.
	Logger *zap.Logger
	// MaxPayload caps one message in bytes; 0 means the NATS default (1 MB).
	MaxPayload int32
}

// Embedded is a nats-server with JetStream running in this process.
type Embedded struct {
	ns   *server.Server
	once sync.Once
}

// StartEmbedded starts a nats-server with JetStream (file storage under
// cfg.StoreDir) and waits until it accepts client connections. It waits until
// ctx's deadline, or 10 s when ctx has none; on timeout or cancellation the
// server is shut down and an error is returned.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("queue: start embedded server: StoreDir is required")
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	opts := &server.Options{
		ServerName: "vfx-embedded",
		Host:       cfg.Host,
		Port:       cfg.Port,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		NoSigs:     true,
		NoLog:      cfg.Logger == nil,
		MaxPayload: cfg.MaxPayload,
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("queue: start embedded server: %w", err)
	}
	if cfg.Logger != nil {
		ns.SetLoggerV2(&serverLogger{l: cfg.Logger.Sugar()}, false, false, false)
	}
	ns.Start()
	e := &Embedded{ns: ns}

	deadline := time.Now().Add(defaultReadyTimeout)
	if d, ok := ctx.Deadline(); ok {
		deadline = d
	}
	for !ns.ReadyForConnections(100 * time.Millisecond) {
		if err := ctx.Err(); err != nil {
			e.Shutdown()
			return nil, fmt.Errorf("queue: start embedded server: %w", err)
		}
		if time.Now().After(deadline) {
			e.Shutdown()
			return nil, errors.New("queue: start embedded server: not ready for connections in time")
		}
	}
	if !ns.JetStreamEnabled() {
		e.Shutdown()
		return nil, errors.New("queue: start embedded server: jetstream is not enabled")
	}
	return e, nil
}

// ClientURL is the URL clients connect to (nats://host:port).
func (e *Embedded) ClientURL() string { return e.ns.ClientURL() }

// Shutdown stops the server and waits until it has stopped. It is safe to
// call more than once.
func (e *Embedded) Shutdown() {
	e.once.Do(func() {
		e.ns.Shutdown()
		e.ns.WaitForShutdown()
	})
}

// serverLogger adapts zap to nats-server's Logger interface. Notices (the
// start-up banner, about 25 lines) go to debug level: an embedded server is
// an implementation detail of `vfx serve`, not something to read at start.
type serverLogger struct{ l *zap.SugaredLogger }

func (s *serverLogger) Noticef(format string, v ...any) { s.l.Debugf(format, v...) }
func (s *serverLogger) Warnf(format string, v ...any)   { s.l.Warnf(format, v...) }
func (s *serverLogger) Fatalf(format string, v ...any)  { s.l.Errorf(format, v...) }
func (s *serverLogger) Errorf(format string, v ...any)  { s.l.Errorf(format, v...) }
func (s *serverLogger) Debugf(format string, v ...any)  { s.l.Debugf(format, v...) }
func (s *serverLogger) Tracef(format string, v ...any)  { s.l.Debugf(format, v...) }

// ConnConfig says how to reach a NATS server.
type ConnConfig struct {
	// URL is one or more comma-separated server URLs. Required.
	URL string
	// CredsFile is a NATS credentials file (JWT + nkey); optional.
	CredsFile string
	// Token is an authentication token; optional.
	Token string
	// Name is the connection name shown in server monitoring.
	Name string
	// ReconnectWait is the pause between reconnect attempts; 0 means 2 s.
	ReconnectWait time.Duration
	// Logger, when set, is told about disconnects, reconnects and
	// asynchronous errors. Nil logs nothing.
	Logger *zap.Logger
}

// Connect dials NATS and waits until the first connection is up. The
// connection reconnects forever (MaxReconnects -1) with a jittered
// ReconnectWait, also when the server is not reachable at first. Connect
// returns when connected, or with ctx's error (the half-open connection
// closed) when ctx ends first.
func Connect(ctx context.Context, cfg ConnConfig) (*nats.Conn, error) {
	if cfg.URL == "" {
		return nil, errors.New("queue: connect: URL is required")
	}
	if cfg.ReconnectWait <= 0 {
		cfg.ReconnectWait = 2 * time.Second
	}
	connected := make(chan struct{})
	var once sync.Once
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(cfg.ReconnectWait),
		nats.ReconnectJitter(500*time.Millisecond, 2*time.Second),
		nats.RetryOnFailedConnect(true),
		nats.ConnectHandler(func(*nats.Conn) { once.Do(func() { close(connected) }) }),
	}
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.Token != "" {
		opts = append(opts, nats.Token(cfg.Token))
	}
	if l := cfg.Logger; l != nil {
		opts = append(opts,
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
				l.Warn("nats disconnected", zap.Error(err))
			}),
			nats.ReconnectHandler(func(nc *nats.Conn) {
				l.Info("nats reconnected", zap.String("url", nc.ConnectedUrlRedacted()))
			}),
			nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
				subject := ""
				if sub != nil {
					subject = sub.Subject
				}
				l.Error("nats async error", zap.String("subject", subject), zap.Error(err))
			}),
		)
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("queue: connect %s: %w", cfg.URL, err)
	}
	if nc.IsConnected() {
		return nc, nil
	}
	select {
	case <-connected:
		return nc, nil
	case <-ctx.Done():
		nc.Close()
		return nil, fmt.Errorf("queue: connect %s: %w", cfg.URL, ctx.Err())
	}
}
