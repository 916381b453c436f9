// Package trunc shortens text for messages, logs and headers without
// splitting a UTF-8 character.
package trunc

import "unicode/utf8"

// String returns s when it has at most n bytes; else its longest prefix of
// at most n bytes that ends on a character boundary, followed by "…".
func String(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
