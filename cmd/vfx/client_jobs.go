package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vfxrender/vfx/api"
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
	var path string
	asJSON := true
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
		q := make([]string, 0, 2)
		if *limit != 0 {
			q = append(q, "limit="+strconv.Itoa(*limit))
		}
		if *token != "" {
			q = append(q, "page_token="+url.QueryEscape(*token))
		}
		path = "/v1/vfx/generations"
		if len(q) > 0 {
			path += "?" + strings.Join(q, "&")
		}
		asJSON = *rawJSON
	case "get":
		pos, err := parseInterspersed(fs, args[1:])
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return usageError{"want one job id: vfx jobs get ID"}
		}
		path = "/v1/vfx/generations/" + url.PathEscape(pos[0])
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
	c, err := cf.client(true, false)
	if err != nil {
		return err
	}
	_, _, body, err := c.call(ctx, http.MethodGet, path, nil, callOptions{retry: true})
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, body)
	}
	return printJobTable(stdout, body, time.Now())
}

// downloadJob saves the outputs of a completed job (after `vfx submit
// --no-wait`) into dir (default out/<id>) and prints their paths. A job
// that has not completed is an error that says its state.
func downloadJob(ctx context.Context, c *apiClient, id, dir string, stdout io.Writer) error {
	_, _, raw, err := c.call(ctx, http.MethodGet, "/v1/vfx/generations/"+url.PathEscape(id), nil, callOptions{retry: true})
	if err != nil {
		return err
	}
	var job api.Job
	if err := json.Unmarshal(raw, &job); err != nil || job.ID == "" {
		return fmt.Errorf("jobs download: unexpected answer: %.200s", raw)
	}
	if job.Status != "completed" {
		msg := fmt.Sprintf("job %s is %s, not completed", job.ID, job.Status)
		if job.Error != "" {
			msg += ": " + oneLine(job.Error)
		}
		return errors.New(msg + "; nothing to download")
	}
	if dir == "" {
		dir = filepath.Join("out", job.ID)
	}
	files, err := c.downloadOutputs(ctx, job.Output, dir)
	if err != nil {
		return fmt.Errorf("jobs download: %w", err)
	}
	for _, f := range files {
		fmt.Fprintln(stdout, f)
	}
	return nil
}
