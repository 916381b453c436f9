package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// helpShown is what a command returns for -h or --help: run prints text on
// stdout and exits 0.
type helpShown struct{ text string }

func (h helpShown) Error() string { return "help requested" }

// cmdHelp is the help of one flag set beyond its flags: the synopsis, the
// flags that must be given (listed first) and one worked example.
type cmdHelp struct {
	synopsis string
	required []string
	example  string
}

// commandHelp is keyed by flag set name (fixed data, never written).
var commandHelp = map[string]cmdHelp{
	"render": {
		synopsis: "vfx render --type image|video --source FILE [flags]",
		required: []string{"type", "source"},
		example:  `vfx render --type image --source photo.jpg --alpha-mode auto --prompt "warm golden hour light" --fit --out out/photo`,
	},
	"submit": {
		synopsis: "vfx submit --type image|video --source FILE|URI --alpha-mode MODE [flags]",
		required: []string{"type", "source", "alpha-mode"},
		example:  `vfx submit --type video --source clip.mp4 --alpha-mode auto --prompt "soft blue rim light" --fit --out out/clip`,
	},
	"serve": {
		synopsis: "vfx serve [flags]",
		example:  `vfx serve --listen 127.0.0.1:8080 --data vfx-data --admin-token "$(openssl rand -hex 16)"`,
	},
	"api": {
		synopsis: "vfx api [flags]",
		example:  `vfx api --listen :8080 --nats-url nats://nats:4222 --store local --store-dir /srv/vfx-store`,
	},
	"worker": {
		synopsis: "vfx worker [flags]",
		example:  `vfx worker --nats-url nats://nats:4222 --store local --store-dir /srv/vfx-store --concurrency 2`,
	},
	"jobs list": {
		synopsis: "vfx jobs list [flags]",
		example:  `vfx jobs list --limit 50`,
	},
	"jobs get": {
		synopsis: "vfx jobs get ID [flags]",
		example:  `vfx jobs get gen_0123abcd`,
	},
	"jobs download": {
		synopsis: "vfx jobs download ID [flags]",
		example:  `vfx jobs download gen_0123abcd --out out/shot`,
	},
	"bench fixture": {
		synopsis: "vfx bench fixture [flags]",
		example:  `vfx bench fixture --out out/fx --frames 48 --width 1280 --height 720`,
	},
	"bench ffmpeg": {
		synopsis: "vfx bench ffmpeg [flags]",
		example:  `vfx bench ffmpeg --out out/bench --preset veryfast,medium --rounds 3 --fixtures synthetic,photo-large`,
	},
	"bench matte": {
		synopsis: "vfx bench matte [flags]",
		example:  `vfx bench matte --dataset ../shared/datasets/davis2016-train --clips bear,soccerball --cache out/netcache --sheet out/matte-sheet.png`,
	},
	"bench calibrate": {
		synopsis: "vfx bench calibrate --dataset DIR --out FILE [flags]",
		example:  `vfx bench calibrate --dataset ../shared/datasets/davis2016-train --fold A --per-clip 2 --out infer/isnet-int8.json`,
	},
	"bench passes": {
		synopsis: "vfx bench passes --dir DIR [flags]",
		example:  `vfx bench passes --dir out/shot --frame 1001 --out out/shot-passes.png`,
	},
	"selftest": {
		synopsis: "vfx selftest [flags]",
		example:  `vfx selftest --backend cuda --gpu 0`,
	},
	"probe": {
		synopsis: "vfx probe [--timeout D] URL",
		example:  `vfx probe http://127.0.0.1:9090/livez`,
	},
}

// parseFlags parses args with fs, whose own error output and usage are
// silenced: -h becomes helpShown, and a mistake becomes one usageError line
// (with "did you mean" for a mistyped flag).
func parseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	defer fs.SetOutput(out)
	if err := fs.Parse(args); err != nil {
		return flagError(fs, err)
	}
	return nil
}

// flagError turns an error of fs.Parse into helpShown or a usageError.
func flagError(fs *flag.FlagSet, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return helpShown{helpText(fs)}
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		msg = "unknown flag --" + name
		if s := nearestFlag(fs, name); s != "" {
			msg += "; did you mean --" + s + "?"
		}
	}
	return usageError{fmt.Sprintf("%s (vfx %s -h lists the flags)", msg, fs.Name())}
}

// nearestFlag returns the flag of fs closest to name (edit distance at
// most 2, or name as a prefix of it), or "".
func nearestFlag(fs *flag.FlagSet, name string) string {
	best, bestD := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		d := editDistance(name, f.Name)
		if len(name) >= 3 && strings.HasPrefix(f.Name, name) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// helpText is a command's help: synopsis, required flags, the other flags
// in their order, and one example.
func helpText(fs *flag.FlagSet) string {
	h := commandHelp[fs.Name()]
	var b strings.Builder
	syn := h.synopsis
	if syn == "" {
		syn = "vfx " + fs.Name() + " [flags]"
	}
	fmt.Fprintf(&b, "usage: %s\n", syn)
	req := map[string]bool{}
	for _, n := range h.required {
		req[n] = true
	}
	if len(h.required) > 0 {
		b.WriteString("\nrequired:\n")
		for _, n := range h.required {
			if f := fs.Lookup(n); f != nil {
				writeFlag(&b, f)
			}
		}
	}
	var opt []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !req[f.Name] {
			opt = append(opt, f)
		}
	})
	if len(opt) > 0 {
		b.WriteString("\nflags:\n")
		for _, f := range opt {
			writeFlag(&b, f)
		}
	}
	if h.example != "" {
		fmt.Fprintf(&b, "\nexample:\n  %s\n", h.example)
	}
	return b.String()
}

// writeFlag writes one flag's line: name, value placeholder, usage, and
// the default when it is not a zero value and the usage does not give one.
func writeFlag(b *strings.Builder, f *flag.Flag) {
	kind, usage := flag.UnquoteUsage(f)
	usage = strings.TrimSuffix(usage, " (required)")
	head := "  --" + f.Name
	if kind != "" {
		head += " " + kind
	}
	fmt.Fprintf(b, "%s\n      %s", head, usage)
	switch f.DefValue {
	case "", "0", "false", "0s":
	default:
		if !strings.Contains(usage, "default") {
			fmt.Fprintf(b, " (default %s)", f.DefValue)
		}
	}
	b.WriteByte('\n')
}

// parseInterspersed parses flags that may come before or after the
// positional arguments (`vfx jobs get ID --server URL`) and returns the
// positional arguments. "--" ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	// Each round consumes at least one argument, so len(args)+1 rounds
	// always suffice.
	for range len(args) + 1 {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	return append(pos, args...), nil
}
