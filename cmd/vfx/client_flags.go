// The connection flags of the commands that call the API, and the JSON
// answers they print.

package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/vfxrender/vfx/client"
)

// connFlags are the connection flags shared by the HTTP commands.
type connFlags struct {
	server, key, adminToken *string
	// envKey and envAdmin are VFX_API_KEY and VFX_ADMIN_TOKEN: used when
	// the flag is not given, and never a flag default (-h prints
	// defaults).
	envKey, envAdmin string
}

// addConnFlags defines --server and, as asked, --key and --admin-token on
// fs, defaulting to VFX_API_URL, VFX_API_KEY and VFX_ADMIN_TOKEN (the
// secrets are read at use, so that -h never prints them).
func addConnFlags(fs *flag.FlagSet, getenv func(string) string, withKey, withAdmin bool) connFlags {
	def := func(name, fallback string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return fallback
	}
	cf := connFlags{server: fs.String("server", def("VFX_API_URL", client.DefaultURL), "API base URL [VFX_API_URL]")}
	empty := ""
	cf.key, cf.adminToken = &empty, &empty
	if withKey {
		cf.key = fs.String("key", "", "API key, sent as x-api-key (default: VFX_API_KEY; prefer it: flags show in ps) [VFX_API_KEY]")
		cf.envKey = def("VFX_API_KEY", "")
	}
	if withAdmin {
		cf.adminToken = fs.String("admin-token", "", "operator token of /admin/v1 (default: VFX_ADMIN_TOKEN; prefer it) [VFX_ADMIN_TOKEN]")
		cf.envAdmin = def("VFX_ADMIN_TOKEN", "")
	}
	return cf
}

// settings checks the connection flags and returns the server URL, the
// API key and the operator token (flag, else environment).
func (cf connFlags) settings(needKey, needAdmin bool) (server, key, admin string, err error) {
	s := strings.TrimSpace(*cf.server)
	if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
		return "", "", "", usageError{fmt.Sprintf("--server %q: want an http:// or https:// URL", s)}
	}
	key, admin = strings.TrimSpace(*cf.key), strings.TrimSpace(*cf.adminToken)
	if key == "" {
		key = cf.envKey
	}
	if admin == "" {
		admin = cf.envAdmin
	}
	if needKey && key == "" {
		return "", "", "", usageError{"an API key is required: --key or VFX_API_KEY"}
	}
	if needAdmin && admin == "" {
		return "", "", "", usageError{"an operator token is required: --admin-token or VFX_ADMIN_TOKEN"}
	}
	return s, key, admin, nil
}

// client checks the connection flags and returns a client.
func (cf connFlags) client(needKey, needAdmin bool) (*client.Client, error) {
	s, key, admin, err := cf.settings(needKey, needAdmin)
	if err != nil {
		return nil, err
	}
	c := client.New(s, key, admin)
	c.UserAgent = "vfx-cli/" + version
	return c, nil
}

// printJSON writes a JSON answer indented, with a final newline.
func printJSON(w io.Writer, raw []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(raw), "", "  "); err != nil {
		return fmt.Errorf("answer is not JSON: %s", client.OneLine(string(raw)))
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}
