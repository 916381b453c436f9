module github.com/vfxrender/vfx

go 1.26.8

require (
	github.com/asticode/go-astiav v0.16.0 // indirect
	github.com/asticode/go-astikit v0.42.0 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
)
