package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelpHidesSecrets: -h of the client commands never prints the API
// key or the operator token taken from the environment, and the key is
// still used when --key is not given.
func TestHelpHidesSecrets(t *testing.T) {
	const key, token = "vfx_sk_secret_0123456789", "admin-secret-987654321"
	env := func(n string) string {
		return map[string]string{"VFX_API_KEY": key, "VFX_ADMIN_TOKEN": token}[n]
	}
	t.Setenv("VFX_API_KEY", key)
	t.Setenv("VFX_ADMIN_TOKEN", token)
	var help strings.Builder
	for _, args := range [][]string{{"submit", "-h"}, {"jobs", "list", "-h"}, {"jobs", "get", "-h"}, {"jobs", "download", "-h"}} {
		code, stdout, stderr := runCLI(args...)
		if code != 0 || !strings.Contains(stdout+stderr, "VFX_API_KEY") {
			t.Errorf("%v: exit %d, no help naming VFX_API_KEY: %q %q", args, code, stdout, stderr)
		}
		help.WriteString(stdout + stderr)
	}
	if strings.Contains(help.String(), key) || strings.Contains(help.String(), token) {
		t.Errorf("help prints a secret:\n%s", help.String())
	}
	var buf bytes.Buffer
	cfg, err := parseSubmitFlags([]string{"--type", "image", "--source", "x.png", "--alpha-mode", "fill", "--prompt", "p"}, &buf, env)
	if err != nil {
		t.Fatal(err)
	}
	_, got, _, err := cfg.conn.settings(true, false)
	if err != nil {
		t.Fatal(err)
	}
	if got != key {
		t.Errorf("client key %q, want VFX_API_KEY's", got)
	}
}
