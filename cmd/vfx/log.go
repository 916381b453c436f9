package main

import (
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newJSONLogger is the logger of the daemons (serve, api, worker): zap
// production JSON lines at info level on w, with the caller.
func newJSONLogger(w io.Writer) *zap.Logger {
	out := zapcore.Lock(zapcore.AddSync(w))
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), out, zap.InfoLevel),
		zap.AddCaller(), zap.ErrorOutput(out))
}

// ffmpegLog is codec.LogWarnings' sink for a service: FFmpeg's warnings
// and errors as zap lines (component "ffmpeg").
func ffmpegLog(log *zap.Logger) func(level, msg string) {
	l := log.With(zap.String("component", "ffmpeg"))
	return func(level, msg string) {
		if level == "warning" {
			l.Warn(msg)
			return
		}
		l.Error(msg, zap.String("ffmpeg_level", level))
	}
}
