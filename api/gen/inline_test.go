package gen

import (
	"context"
	"encoding/base64"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/account"
)

// TestInlineFailureLeavesNothing: an inline input that is stored and then
// fails its content checks (over the pixel limit) is deleted again, and
// the refused submission leaves no entry in the job list.
func TestInlineFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, envOpts{NoRun: true, StoreDir: dir})
	key := e.OrgKey()
	big := apitest.DataURI("image/png", apitest.PNGBytes(t, 2000, 1500, true))
	r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(big))
	if r.Status != 400 || r.Code() != api.CodeSourceTooLarge {
		t.Fatalf("3 MP source: %d %s", r.Status, r.Body)
	}
	if got := apitest.InputObjects(t, dir); len(got) != 0 {
		t.Fatalf("left behind: %v", got)
	}
	if l := e.Do("GET", "/v1/vfx/generations", key, nil).JSON(t); len(l["jobs"].([]any)) != 0 {
		t.Fatalf("list: %v", l)
	}
	// A client may not name an API-written input reference.
	r = e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration("vfx://jobs/vfx_abc/inputs/source.png"))
	if r.Status != 400 || r.Code() != api.CodeInvalidURI {
		t.Fatalf("job input uri: %d %s", r.Status, r.Body)
	}
}

// TestIndexRemove: the entry of a submission whose record was never
// written (create removes it then) is gone from the index.
func TestIndexRemove(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	ctx := context.Background()
	owner := "acct_x"
	now := time.Now()
	if err := e.gen.indexAdd(ctx, owner, now, "vfx_gone"); err != nil {
		t.Fatal(err)
	}
	if err := e.gen.indexRemove(ctx, owner, now, "vfx_gone"); err != nil {
		t.Fatal(err)
	}
	cur, err := e.gen.indexScan(ctx, api.KeyPart(owner), "", -1)
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
	e := newEnv(t, envOpts{NoRun: true, MaxPayload: 4096, Mut: func(c *api.Config) { c.SubmitRetryFor = 50 * time.Millisecond }})
	a, key := e.NewAccount(account.KindOrganization, account.AccountInput{})
	long := "https://example.com/" + strings.Repeat("a", 6000) + ".png"
	r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(long))
	if r.Status != 503 || r.Code() != api.CodeUnavailable {
		t.Fatalf("oversized record: %d %s", r.Status, r.Body)
	}
	if l := e.Do("GET", "/v1/vfx/generations", key, nil).JSON(t); len(l["jobs"].([]any)) != 0 {
		t.Fatalf("list: %v", l)
	}
	cur, err := e.gen.indexScan(context.Background(), api.KeyPart(a.ID), "", -1)
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
	e := newEnv(t, envOpts{NoRun: true, StoreDir: dir})
	key := e.OrgKey()
	at := "data:image/png;base64," + base64.StdEncoding.EncodeToString(apitest.PaddedPNG(t, 50_000_000))
	over := "data:image/png;base64," + base64.StdEncoding.EncodeToString(apitest.PaddedPNG(t, 50_000_001))
	if len(at) != len(over) {
		t.Fatalf("the two URIs differ in length (%d, %d): the edge would not be the decoded count", len(at), len(over))
	}
	if r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(over)); r.Status != 400 || r.Code() != api.CodeSourceTooLarge {
		t.Fatalf("50,000,001 B: %d %.300s", r.Status, r.Body)
	}
	if r := e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(at)); r.Status != 201 {
		t.Fatalf("50,000,000 B: %d %.300s", r.Status, r.Body)
	}
	if got := apitest.InputObjects(t, dir); len(got) != 1 {
		t.Fatalf("input objects %v, want the accepted job's source", got)
	}
}
