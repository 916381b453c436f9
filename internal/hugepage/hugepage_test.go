package hugepage

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// vma is one mapping of /proc/self/smaps.
type vma struct {
	lo, hi  uintptr
	flags   []string
	hugeKiB int
}

// mappingOf returns the mapping of /proc/self/smaps that holds addr.
func mappingOf(t *testing.T, addr uintptr) vma {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps (%v): the advice cannot be observed here", err)
	}
	defer f.Close()
	var cur vma
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if f := strings.Fields(l); len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			if found {
				return cur
			}
			r := strings.SplitN(f[0], "-", 2)
			lo, _ := strconv.ParseUint(r[0], 16, 64)
			hi, _ := strconv.ParseUint(r[1], 16, 64)
			cur = vma{lo: uintptr(lo), hi: uintptr(hi)}
			found = addr >= cur.lo && addr < cur.hi
			continue
		}
		if !found {
			continue
		}
		if v, ok := strings.CutPrefix(l, "AnonHugePages:"); ok {
			cur.hugeKiB, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
		if v, ok := strings.CutPrefix(l, "VmFlags:"); ok {
			cur.flags = strings.Fields(v)
		}
	}
	if !found {
		t.Fatalf("no mapping holds %#x", addr)
	}
	return cur
}

func (v vma) advised() bool {
	for _, f := range v.flags {
		if f == "hg" {
			return true
		}
	}
	return false
}

func thpMode() string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.Index(s, "["); i >= 0 {
		if j := strings.Index(s[i:], "]"); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return ""
}

func TestAdvise(t *testing.T) {
	// Just under MinBytes: left alone (its mapping is not marked).
	small := make([]byte, MinBytes-1)
	Advise(small)
	mid := uintptr(unsafe.Pointer(&small[len(small)/2]))
	if v := mappingOf(t, mid); v.advised() {
		t.Fatalf("a %d-byte buffer was advised (flags %v)", len(small), v.flags)
	}

	// At MinBytes, as float32: the aligned huge page inside it is marked,
	// and the memory before the buffer is not.
	buf := make([]float32, MinBytes/4)
	Advise(buf)
	start := uintptr(unsafe.Pointer(&buf[0]))
	lo := (start + Size - 1) &^ (Size - 1)
	v := mappingOf(t, lo)
	if !v.advised() {
		t.Fatalf("the aligned part of a %d-byte buffer is not advised (flags %v)", MinBytes, v.flags)
	}
	if v.lo < start || v.hi > start+MinBytes {
		t.Errorf("advised mapping %#x-%#x reaches outside the buffer %#x-%#x", v.lo, v.hi, start, start+MinBytes)
	}

	// Touched, it is backed by huge pages where the kernel grants them.
	big := make([]float32, 16<<20/4)
	Advise(big)
	for i := range big {
		big[i] = float32(i)
	}
	b0 := uintptr(unsafe.Pointer(&big[0]))
	v = mappingOf(t, (b0+Size-1)&^(Size-1))
	switch mode := thpMode(); mode {
	case "always", "madvise":
		if v.hugeKiB == 0 {
			t.Logf("THP %q: no huge page granted to the advised 16 MiB buffer (memory fragmented?); advice %v", mode, v.advised())
		}
		t.Logf("THP %q: %d KiB of the advised buffer's mapping in huge pages", mode, v.hugeKiB)
	default:
		t.Logf("THP mode %q: huge pages not granted here; only the advice is checked", mode)
	}
	for i := range big {
		if big[i] != float32(i) {
			t.Fatalf("big[%d] = %v after the advice", i, big[i])
		}
	}
}
