package codec

import (
	"os"
	"testing"
)

// TestMapLargeAllocations: on glibc (Debian, our images) the setting is
// taken; a second call is taken too (it is idempotent).
func TestMapLargeAllocations(t *testing.T) {
	if _, err := os.Stat("/lib/x86_64-linux-gnu/libc.so.6"); err != nil {
		if _, err := os.Stat("/lib/aarch64-linux-gnu/libc.so.6"); err != nil {
			t.Skip("not a glibc system: mallopt's threshold is glibc's")
		}
	}
	for i := 0; i < 2; i++ {
		if err := MapLargeAllocations(); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
}
