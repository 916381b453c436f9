package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/vfxrender/vfx/client"
)

// promptWidth is how many characters of a prompt the table shows.
const promptWidth = 32

// printJobTable writes a GET /v1/vfx/generations answer as a table for
// people: id, status, type, alpha mode, frames, short prompt, created
// (local time) and age at now; then how to get the next page.
func printJobTable(w io.Writer, raw []byte, now time.Time) error {
	var page client.JobPage
	if err := json.Unmarshal(raw, &page); err != nil {
		return fmt.Errorf("unexpected answer: %s", client.OneLine(string(raw)))
	}
	if len(page.Jobs) == 0 {
		_, err := fmt.Fprintln(w, "no jobs yet: vfx submit -h shows how to start one")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tTYPE\tALPHA\tFRAMES\tPROMPT\tCREATED\tAGE")
	for _, j := range page.Jobs {
		status := j.Status
		if j.Status == "processing" && j.Progress != nil {
			status += " " + strconv.Itoa(*j.Progress) + "%"
		}
		frames := "-"
		if j.Frames > 0 {
			frames = strconv.Itoa(j.Frames)
		}
		created, age := j.CreatedAt, "-"
		if t, err := time.Parse(time.RFC3339Nano, j.CreatedAt); err == nil {
			created = t.Local().Format("2006-01-02 15:04")
			age = shortAge(now.Sub(t))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, status, orDash(j.GenerationType), orDash(j.AlphaMode),
			frames, shortPrompt(j.Prompt), created, age)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.NextPageToken != nil && *page.NextPageToken != "" {
		fmt.Fprintf(w, "more: vfx jobs list --page-token %s\n", *page.NextPageToken)
	}
	return nil
}

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

// shortPrompt folds a prompt onto one line and cuts it to promptWidth
// characters, quoted; "-" when empty.
func shortPrompt(p string) string {
	p = strings.Join(strings.Fields(p), " ")
	if p == "" {
		return "-"
	}
	if utf8.RuneCountInString(p) > promptWidth {
		p = string([]rune(p)[:promptWidth-1]) + "…"
	}
	return strconv.Quote(p)
}

// shortAge renders a duration as its largest unit: 45s, 12m, 3h, 2d.
func shortAge(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
