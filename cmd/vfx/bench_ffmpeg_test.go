package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBenchFFmpegFixtures: an unknown fixture is a usage error naming the
// known ones, and a photo fixture without its photographs is skipped
// with a line that says how to get them (exit 0, nothing timed).
func TestBenchFFmpegFixtures(t *testing.T) {
	code, _, e := runCLI("bench", "ffmpeg", "--fixtures", "synthetic,nope")
	if code != 2 || !strings.Contains(e, `unknown fixture "nope"`) || !strings.Contains(e, "photo-large") {
		t.Fatalf("unknown fixture: exit %d, %q", code, e)
	}
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("skipping the rest: the ffmpeg command is not on PATH")
	}
	code, out, e := runCLI("bench", "ffmpeg", "--out", t.TempDir(), "--frames", "2", "--width", "64", "--height", "36",
		"--preset", "veryfast", "--fixtures", "photo-small,photo-large", "--photos", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	for _, f := range []string{"photo-small", "photo-large"} {
		if !strings.Contains(out, "fixture "+f+" skipped:") || !strings.Contains(out, "apt-get install mate-backgrounds") {
			t.Fatalf("no skip line for %s:\n%s", f, out)
		}
	}
	if strings.Contains(out, "ratio") {
		t.Fatalf("something was timed:\n%s", out)
	}
}
