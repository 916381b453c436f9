package trunc

import (
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"héllo", 2, "h…"}, // é is 2 bytes: not split
		{"héllo", 3, "hé…"},
		{"日本語", 4, "日…"},
		{"日本語", 0, "…"},
		{"abc", -1, "…"},
	} {
		got := String(c.s, c.n)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("String(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
	// Every cut of a multi-byte string stays valid UTF-8.
	s := "aé日🙂b"
	for n := range len(s) + 1 {
		if got := String(s, n); !utf8.ValidString(got) || len(got) > n+len("…") {
			t.Errorf("String(%q, %d) = %q", s, n, got)
		}
	}
}
