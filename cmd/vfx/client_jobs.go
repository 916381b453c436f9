package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/vfxrender/vfx/client"
)

// cmdJobs is `vfx jobs list|get|download`: a table of jobs (list), the
// API's JSON answer (get, list --json), or a finished job's outputs
// saved to a folder (download).
func cmdJobs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runJobs(ctx, args, stdout, stderr, os.Getenv)
}

// runJobs is cmdJobs with the environment read through getenv.
func runJobs(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) == 0 {
		return usageError{"want a subcommand: list, get ID or download ID"}
	}
	fs := flag.NewFlagSet("jobs "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addConnFlags(fs, getenv, true, false)
	switch args[0] {
	case "list":
		limit := fs.Int("limit", 0, "jobs per page, 1-100 (server default 20)")
		token := fs.String("page-token", "", "next_page_token of the previous page")
		rawJSON := fs.Bool("json", false, "print the API's JSON answer instead of the table")
		pos, err := parseInterspersed(fs, args[1:])
		if err != nil {
			return err
		}
		if len(pos) > 0 {
			return usageError{fmt.Sprintf("unexpected argument %q", pos[0])}
		}
		c, err := cf.client(true, false)
		if err != nil {
			return err
		}
		body, err := c.ListJSON(ctx, *limit, *token)
		if err != nil {
			return err
		}
		if *rawJSON {
			return printJSON(stdout, body)
		}
		return printJobTable(stdout, body, time.Now())
	case "get":
		pos, err := parseInterspersed(fs, args[1:])
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return usageError{"want one job id: vfx jobs get ID"}
		}
		c, err := cf.client(true, false)
		if err != nil {
			return err
		}
		body, err := c.JobJSON(ctx, pos[0])
		if err != nil {
			return err
		}
		return printJSON(stdout, body)
	case "download":
		out := fs.String("out", "", "download folder (default ./out/<job id>)")
		pos, err := parseInterspersed(fs, args[1:])
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return usageError{"want one job id: vfx jobs download ID [--out DIR]"}
		}
		c, err := cf.client(true, false)
		if err != nil {
			return err
		}
		return downloadJob(ctx, c, pos[0], *out, stdout)
	default:
		return usageError{fmt.Sprintf("unknown jobs subcommand %q: want list, get or download", args[0])}
	}
}

// downloadJob saves the outputs of a completed job (after `vfx submit
// --no-wait`) into dir (default out/<id>) and prints their paths. A job
// that has not completed is an error that says its state.
func downloadJob(ctx context.Context, c *client.Client, id, dir string, stdout io.Writer) error {
	job, err := c.Job(ctx, id)
	if errors.Is(err, client.ErrUnexpectedAnswer) {
		return fmt.Errorf("jobs download: %w", err)
	} else if err != nil {
		return err
	}
	if job.Status != "completed" {
		msg := fmt.Sprintf("job %s is %s, not completed", job.ID, job.Status)
		if job.Error != "" {
			msg += ": " + client.OneLine(job.Error)
		}
		return errors.New(msg + "; nothing to download")
	}
	if dir == "" {
		dir = filepath.Join("out", job.ID)
	}
	files, err := c.DownloadOutputs(ctx, job.Output, dir)
	if err != nil {
		return fmt.Errorf("jobs download: %w", err)
	}
	for _, f := range files {
		fmt.Fprintln(stdout, f)
	}
	return nil
}
