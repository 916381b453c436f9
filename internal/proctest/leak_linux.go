package proctest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Descendant is a live process below the test process.
type Descendant struct {
	PID, PPID int
	Comm      string // the executable's name, as /proc/<pid>/stat gives it
	State     string // R, S, Z (a zombie: exited, not waited for), …
}

func (d Descendant) String() string {
	return fmt.Sprintf("pid %d (%s, state %s, parent %d)", d.PID, d.Comm, d.State, d.PPID)
}

// Descendants lists the processes whose parent chain leads to pid, read
// from /proc (children, grandchildren, zombies included).
func Descendants(pid int) ([]Descendant, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	all := map[int]Descendant{}
	for _, e := range ents {
		id, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		s := string(b)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		f := strings.Fields(s[closing+1:])
		if len(f) < 2 {
			continue
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		all[id] = Descendant{PID: id, PPID: ppid, Comm: s[open+1 : closing], State: f[0]}
	}
	children := map[int][]int{}
	for id, d := range all {
		children[d.PPID] = append(children[d.PPID], id)
	}
	var out []Descendant
	queue := []int{pid}
	for len(queue) > 0 && len(out) <= len(all) { // bounded: each process once
		id := queue[0]
		queue = queue[1:]
		for _, c := range children[id] {
			out = append(out, all[c])
			queue = append(queue, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}

// BecomeSubreaper makes the test process the child subreaper of what it
// starts (prctl PR_SET_CHILD_SUBREAPER): a grandchild whose parent exits is
// re-parented to the test process instead of to init, so that
// CheckNoDescendants sees it. It is a setting of the whole test binary;
// call it from tests that own their binary (the drill does).
func BecomeSubreaper(t testing.TB) {
	t.Helper()
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
	}
}

// KillDescendants lists the processes below pid, SIGKILLs those still
// running and reaps the ones that are the caller's own children (zombies
// included, for at most about 2 s), so that nothing outlives the test. It
// returns what it found.
func KillDescendants(pid int) ([]Descendant, error) {
	left, err := Descendants(pid)
	if err != nil || len(left) == 0 {
		return left, err
	}
	for _, d := range left {
		if d.State != "Z" {
			_ = syscall.Kill(d.PID, syscall.SIGKILL)
		}
	}
	if pid != os.Getpid() {
		return left, nil
	}
	for _, d := range left {
		if d.PPID != pid {
			continue // its own parent (or, once re-parented, this loop's next call) reaps it
		}
		for range 200 {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(d.PID, &ws, syscall.WNOHANG, nil)
			if got == d.PID || err != nil { // reaped, or not ours to reap (ECHILD)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return left, nil
}

// CheckNoDescendants fails the test when a process below the test process
// is still there (running, or a zombie nobody waited for) and kills it, so
// that nothing outlives the test. Register it with t.Cleanup before
// starting any process: cleanups run last-in first-out, so it runs after
// every Start's cleanup has stopped its process. With BecomeSubreaper, a
// grandchild orphaned by its parent is seen too.
func CheckNoDescendants(t testing.TB) {
	t.Helper()
	left, err := KillDescendants(os.Getpid())
	if err != nil {
		t.Errorf("list processes: %v", err)
	}
	for _, d := range left {
		t.Errorf("leaked process: %v", d)
	}
}
