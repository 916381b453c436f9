// Command vfx is the single binary of the vfx render farm. This build has
// `vfx serve` (API, NATS, store and workers in one process), `vfx worker`
// (the queue worker daemon), the API clients `vfx submit`, `vfx jobs` and
// `vfx admin`, the local commands `vfx render` (one job on this machine,
// no server) and `vfx bench` (fixtures and the ffmpeg comparison).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `vfx: image and video compositing and relighting

usage:
  vfx serve [flags]           API, embedded NATS, local store and workers in one process (vfx serve -h)
  vfx api [flags]             the API alone, against external NATS and S3 (vfx api -h)
  vfx worker [flags]          pull jobs from NATS and render them (vfx worker -h)
  vfx submit [flags]          upload files, start a generation, wait, download the outputs (vfx submit -h)
  vfx jobs list|get ID        list jobs as a table (--json: the raw answer), or print one as JSON
  vfx admin ...               operator API: accounts, keys, webhook secrets, product organisations (vfx admin for the list)
  vfx render [flags]          render one job locally (vfx render -h)
  vfx bench fixture [flags]   write sample media with an exact matte
  vfx bench ffmpeg [flags]    time vfx render against the ffmpeg command line
  vfx bench matte [flags]     score select on a DAVIS-layout folder of frames and masks (J, F)
  vfx bench calibrate [flags] measure the network's activation ranges for its 8-bit graph (infer/isnet-int8.json)
  vfx selftest [flags]        render a small job on the backend and compare it with the CPU reference
  vfx probe [--timeout D] URL GET a health endpoint; exit 0 on 2xx (container health checks)
  vfx version                 print the version
`

// version is set at link time (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches a command line and returns the exit code: 0 success,
// 1 job or input failure, 2 usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = cmdServe(ctx, args[1:], stdout, stderr)
	case "api":
		err = cmdAPI(ctx, args[1:], stdout, stderr)
	case "worker":
		err = cmdWorker(ctx, args[1:], stdout, stderr)
	case "submit":
		err = cmdSubmit(ctx, args[1:], stdout, stderr)
	case "jobs":
		err = cmdJobs(ctx, args[1:], stdout, stderr)
	case "admin":
		err = cmdAdmin(ctx, args[1:], stdout, stderr)
	case "render":
		err = cmdRender(ctx, args[1:], stdout, stderr)
	case "bench":
		err = cmdBench(ctx, args[1:], stdout, stderr)
	case "selftest":
		err = cmdSelftest(ctx, args[1:], stdout, stderr)
	case "probe":
		err = cmdProbe(ctx, args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "vfx", version)
		printModel(stdout, os.Getenv)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
	default:
		msg := fmt.Sprintf("vfx: unknown command %q", args[0])
		if s := nearestCommand(args[0]); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		fmt.Fprintf(stderr, "%s (vfx -h lists the commands)\n", msg)
		return 2
	}
	var help helpShown
	if errors.As(err, &help) {
		fmt.Fprint(stdout, help.text)
		return 0
	}
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			if ue.msg != "" {
				fmt.Fprintf(stderr, "vfx %s: %s\n", args[0], ue.msg)
			}
			return 2
		}
		fmt.Fprintf(stderr, "vfx %s: %s\n", args[0], errorLine(err))
		return 1
	}
	return 0
}

// usageError is a command-line mistake (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }
