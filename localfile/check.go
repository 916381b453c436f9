// Package localfile makes a job's local input files ready before the job
// runs (`vfx render`, `vfx submit`): it checks that a named file can be
// read, turns an image sequence (a printf pattern or a folder of frames)
// into a video, and downscales an input over the service's pixel limit
// to the largest size within it (--fit). Its errors begin with a code
// (CodeFileNotFound, or the codec's) and say the fix.
package localfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// CodeFileNotFound is the error code of a local file that does not exist
// or is not a plain file (a code of the command line: the API's codes
// come from the server or the worker).
const CodeFileNotFound = "FILE_NOT_FOUND"

// Check says, with a code and the fix, why path cannot be read
// as an input file.
func Check(what, path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %s: %s does not exist; check the path (relative paths start at %s)", CodeFileNotFound, what, path, workDir())
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: %s: %s cannot be read (permission denied); check its permissions", CodeFileNotFound, what, path)
	case err != nil:
		return fmt.Errorf("%s: %s: %w", CodeFileNotFound, what, err)
	case st.IsDir():
		return fmt.Errorf("%s: %s: %s is a folder; name a file in it", CodeFileNotFound, what, path)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s: %s: %s is not a plain file", CodeFileNotFound, what, path)
	}
	return nil
}

// workDir is the current folder, for messages about relative paths.
func workDir() string {
	if d, err := os.Getwd(); err == nil {
		return d
	}
	return "the current folder"
}
