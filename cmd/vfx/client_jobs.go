package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// cmdJobs is `vfx jobs list|get`: a table of jobs (list) or the API's JSON
// answer (get, list --json).
func cmdJobs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runJobs(ctx, args, stdout, stderr, os.Getenv)
}

// runJobs is cmdJobs with the environment read through getenv.
func runJobs(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) == 0 {
		return usageError{"want a subcommand: list or get ID"}
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
	default:
		return usageError{fmt.Sprintf("unknown jobs subcommand %q: want list or get", args[0])}
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
