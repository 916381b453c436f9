package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/vfxrender/vfx/client"
	"github.com/vfxrender/vfx/localfile"
)

// requireFlags returns one usage line naming the required flags of fs
// (commandHelp) that are missing or empty, with an example.
func requireFlags(fs *flag.FlagSet) error {
	h := commandHelp[fs.Name()]
	var missing []string
	for _, n := range h.required {
		if f := fs.Lookup(n); f != nil && strings.TrimSpace(f.Value.String()) == "" {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	word := "flag"
	if len(missing) > 1 {
		word = "flags"
	}
	return usageError{fmt.Sprintf("missing required %s %s; for example: %s", word, strings.Join(missing, ", "), h.example)}
}

// fixes are the hints added to an error line by its code when the message
// does not already say what to do.
var fixes = map[string]string{
	"VIDEO_TOO_MANY_FRAMES": "trim it to 240 frames or fewer (ffmpeg -i in.mp4 -frames:v 240 out.mp4)",
	"EXTREME_ASPECT_RATIO":  "crop it to between 1:4 and 4:1",
	"INVALID_API_KEY":       "check --key or VFX_API_KEY (vfx serve prints the development key on its first start)",
	"MISSING_STYLE_INPUT":   "give --prompt or --reference",
	"MISSING_ALPHA":         "give --alpha with a matte, or use --alpha-mode auto or fill",
	"INVALID_ALPHA_MODE":    "use --alpha-mode auto, fill, custom or select",
}

// errorLine renders a command's error on one line, with its fix when the
// code has one and the message does not already carry it.
func errorLine(err error) string {
	msg := client.OneLine(err.Error())
	if strings.Contains(msg, "SOURCE_TOO_LARGE:") && !strings.Contains(msg, "--fit") {
		if h := localfile.FitHint(msg); h != "" {
			return msg + "; " + h
		}
	}
	for code, fix := range fixes {
		if strings.HasPrefix(msg, code+":") || strings.Contains(msg, " "+code+":") {
			msg += "; " + fix
			break
		}
	}
	return msg
}

// commands are the first words `vfx` knows, for "did you mean".
var commands = []string{"serve", "api", "worker", "submit", "jobs", "admin", "render", "bench", "selftest", "probe", "version", "help"}

// nearestCommand returns the command closest to name (edit distance at
// most 2), or "".
func nearestCommand(name string) string {
	best, bestD := "", 3
	for _, c := range commands {
		if d := editDistance(name, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}
