package worker

import (
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/media"
)

// inputErr is a *job.InputError: a failure of the job's input that can
// never succeed on retry.
func inputErr(code job.Code, format string, args ...any) error {
	return job.Errorf(code, format, args...)
}

// classify wraps err as a *job.InputError when it stems from the input
// (media.AsInputError), prefixing what the input was.
func classify(what string, err error) error { return media.AsInputError(what, err) }
