package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/account"
)

// paddedPNG is a small valid PNG grown to exactly size bytes by a private
// ancillary chunk, which decoders skip: a large input that renders fast.
func paddedPNG(t *testing.T, size int) []byte {
	t.Helper()
	img := pngBytes(t, 64, 48, false)
	iend := len(img) - 12
	pad := size - len(img) - 12
	if pad < 0 {
		t.Fatalf("size %d under the image's %d bytes", size, len(img))
	}
	chunk := make([]byte, 12+pad)
	binary.BigEndian.PutUint32(chunk, uint32(pad))
	copy(chunk[4:], "vfXp")
	binary.BigEndian.PutUint32(chunk[8+pad:], crc32.ChecksumIEEE(chunk[4:8+pad]))
	out := append(append(append([]byte{}, img[:iend]...), chunk...), img[iend:]...)
	if len(out) != size {
		t.Fatalf("padded png is %d bytes, want %d", len(out), size)
	}
	return out
}

// inputObjects lists the inline input objects in a local store directory.
func inputObjects(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(filepath.ToSlash(p), "/objects/") && strings.Contains(filepath.ToSlash(p), "/inputs/") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestInlineDataByReference: a 49 MB data: source is stored as an input
// object of its job, the queue record carries only its vfx:// reference,
// and the job renders, through both APIs; 51 MB is refused with
// SOURCE_TOO_LARGE and stores nothing.
func TestInlineDataByReference(t *testing.T) {
	if testing.Short() {
		t.Skip("renders real jobs from 49 MB inputs (-short)")
	}
	dir := t.TempDir()
	e := newEnv(t, envOpts{workers: true, storeDir: dir})
	key := e.orgKey()
	o := e.newOrg(10000, nil)
	ok := "data:image/png;base64," + base64.StdEncoding.EncodeToString(paddedPNG(t, 49_000_000))
	over := "data:image/png;base64," + base64.StdEncoding.EncodeToString(paddedPNG(t, 51_000_000))

	t.Run("generation", func(t *testing.T) {
		if r := e.do("POST", "/v1/vfx/generations", key, validReq(over)); r.status != 400 || r.code() != CodeSourceTooLarge {
			t.Fatalf("51 MB: %d %.300s", r.status, r.body)
		}
		r := e.do("POST", "/v1/vfx/generations", key, validReq(ok))
		if r.status != 201 {
			t.Fatalf("49 MB: %d %.300s", r.status, r.body)
		}
		id := r.json(t)["id"].(string)
		rec, _, err := e.q.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Request) > 4096 || !bytes.Contains(rec.Request, []byte(`"vfx://jobs/`+id+`/inputs/source.png"`)) {
			t.Fatalf("queue record of %d bytes: %.300s", len(rec.Request), rec.Request)
		}
		var job map[string]any
		eventually(t, 120*time.Second, "job "+id, func() bool {
			job = e.do("GET", "/v1/vfx/generations/"+id, key, nil).json(t)
			return job["status"] == "completed" || job["status"] == "failed"
		})
		if job["status"] != "completed" {
			t.Fatalf("job %v", job)
		}
	})
	t.Run("product", func(t *testing.T) {
		wantDetail(t, e.do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("over", over)), 400, CodeSourceTooLarge)
		r := e.do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("ok", ok))
		if r.status != 202 {
			t.Fatalf("49 MB: %d %.300s", r.status, r.body)
		}
		pj := productJob(t, r)
		rec, _, err := e.q.Get(context.Background(), pj.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Request) > 4096 || !bytes.Contains(rec.Request, []byte(`"vfx://product-jobs/`+pj.ID+`/inputs/source.png"`)) {
			t.Fatalf("queue record of %d bytes: %.300s", len(rec.Request), rec.Request)
		}
		if j := e.waitProduct(o.Key, pj.ID); j.Status != ProductSuccess {
			t.Fatalf("job %+v", j)
		}
	})
	if got := inputObjects(t, dir); len(got) != 2 {
		t.Fatalf("input objects %v, want the two accepted jobs' sources", got)
	}
}

// TestInlineFailureLeavesNothing: an inline input that is stored and then
// fails its content checks (over the pixel limit) is deleted again, and
// the refused submission leaves no entry in the job list.
func TestInlineFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, envOpts{noRun: true, storeDir: dir})
	key := e.orgKey()
	big := dataURI("image/png", pngBytes(t, 2000, 1500, true))
	r := e.do("POST", "/v1/vfx/generations", key, validReq(big))
	if r.status != 400 || r.code() != CodeSourceTooLarge {
		t.Fatalf("3 MP source: %d %s", r.status, r.body)
	}
	if got := inputObjects(t, dir); len(got) != 0 {
		t.Fatalf("left behind: %v", got)
	}
	if l := e.do("GET", "/v1/vfx/generations", key, nil).json(t); len(l["jobs"].([]any)) != 0 {
		t.Fatalf("list: %v", l)
	}
	// A client may not name an API-written input reference.
	r = e.do("POST", "/v1/vfx/generations", key, validReq("vfx://jobs/vfx_abc/inputs/source.png"))
	if r.status != 400 || r.code() != CodeInvalidURI {
		t.Fatalf("job input uri: %d %s", r.status, r.body)
	}
}

// TestIndexRemove: the entry of a submission whose record was never
// written (create removes it then) is gone from the index.
func TestIndexRemove(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true})
	ctx := context.Background()
	owner := "acct_x"
	now := time.Now()
	if err := e.srv.indexAdd(ctx, owner, now, "vfx_gone"); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.indexRemove(ctx, owner, now, "vfx_gone"); err != nil {
		t.Fatal(err)
	}
	cur, err := e.srv.indexScan(ctx, keyPart(owner), "", -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, more, err := cur.next(ctx); err != nil || more {
		t.Fatalf("index still lists the job: %v %v", more, err)
	}
}

// TestRefusedRecordLeavesNoIndexEntry: a job whose record NATS refuses
// (here a record over a 4 KB message cap) is answered 503 and leaves no
// entry in the account's job list.
func TestRefusedRecordLeavesNoIndexEntry(t *testing.T) {
	e := newEnv(t, envOpts{noRun: true, maxPayload: 4096, mut: func(c *Config) { c.SubmitRetryFor = 50 * time.Millisecond }})
	a, key := e.newAccount(account.KindOrganization, account.AccountInput{})
	long := "https://example.com/" + strings.Repeat("a", 6000) + ".png"
	r := e.do("POST", "/v1/vfx/generations", key, validReq(long))
	if r.status != 503 || r.code() != CodeUnavailable {
		t.Fatalf("oversized record: %d %s", r.status, r.body)
	}
	if l := e.do("GET", "/v1/vfx/generations", key, nil).json(t); len(l["jobs"].([]any)) != 0 {
		t.Fatalf("list: %v", l)
	}
	cur, err := e.srv.indexScan(context.Background(), keyPart(a.ID), "", -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, more, err := cur.next(context.Background()); err != nil || more {
		t.Fatalf("the index keeps an entry: %v %v", more, err)
	}
}

// TestInlineDataLimitEdge: the data: limit counts decoded bytes: a source
// of exactly 50,000,000 bytes is accepted, one of 50,000,001 (a text of
// the same length) refused with SOURCE_TOO_LARGE; nothing is rendered.
// Both APIs parse inputs with the same store.Resolver (the product API's
// refusal of 51 MB is in TestInlineDataByReference; the edge itself, padded
// and unpadded, in store's TestDataLimitEdge).
func TestInlineDataLimitEdge(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: posts 67 MB bodies")
	}
	dir := t.TempDir()
	e := newEnv(t, envOpts{noRun: true, storeDir: dir})
	key := e.orgKey()
	at := "data:image/png;base64," + base64.StdEncoding.EncodeToString(paddedPNG(t, 50_000_000))
	over := "data:image/png;base64," + base64.StdEncoding.EncodeToString(paddedPNG(t, 50_000_001))
	if len(at) != len(over) {
		t.Fatalf("the two URIs differ in length (%d, %d): the edge would not be the decoded count", len(at), len(over))
	}
	if r := e.do("POST", "/v1/vfx/generations", key, validReq(over)); r.status != 400 || r.code() != CodeSourceTooLarge {
		t.Fatalf("50,000,001 B: %d %.300s", r.status, r.body)
	}
	if r := e.do("POST", "/v1/vfx/generations", key, validReq(at)); r.status != 201 {
		t.Fatalf("50,000,000 B: %d %.300s", r.status, r.body)
	}
	if got := inputObjects(t, dir); len(got) != 1 {
		t.Fatalf("input objects %v, want the accepted job's source", got)
	}
}
