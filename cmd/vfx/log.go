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
