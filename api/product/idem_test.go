package product

import (
	"context"
	"encoding/json"
	"github.com/vfxrender/vfx/api/apitest"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/store"
)

// TestIdemTakeoverRecoversProduct: the same on the product API: the dead
// submission's credits are refunded and its inline input deleted.
func TestIdemTakeoverRecoversProduct(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, envOpts{NoRun: true, StoreDir: dir, Mut: func(c *api.Config) { c.IdemClaimLease = 300 * time.Millisecond }})
	ctx := context.Background()
	o := e.newOrg(1000, nil)
	before := e.credits(o.ID)
	body := vfxJob("crash-2", apitest.DataURI("image/png", apitest.PNGBytes(t, 64, 48, false)))
	raw, _ := json.Marshal(body)
	pb, err := parseProductBody(raw, "vfx", jobFields, jobRequired)
	if err != nil {
		t.Fatal(err)
	}
	dead, created := newProductJobID(), time.Now().UTC()
	if err := e.Srv.BeginPending(ctx, api.PendingSub{JobID: dead, Kind: api.PendingProduct, Owner: o.ID, CreatedAt: created}); err != nil {
		t.Fatal(err)
	}
	in := store.JobInputKey("product-jobs", dead, "source.png")
	if err := e.Srv.PendingInput(ctx, dead, in); err != nil {
		t.Fatal(err)
	}
	if _, err := e.St.Put(ctx, in, strings.NewReader("png"), 3, "image/png"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Acc.ReserveCredits(ctx, dead, o.ID, "", 40); err != nil {
		t.Fatal(err)
	}
	v, _ := json.Marshal(api.IdemEntry{JobID: dead, BodyHash: pb.hash, Holder: "crashed/req", ClaimedAt: created})
	if _, err := e.prod.pidem.Put(ctx, api.IdemKey(o.ID+"-", "crash-2"), v); err != nil {
		t.Fatal(err)
	}
	r := e.Do("POST", "/v1/products/vfx/jobs", o.Key, body)
	if r.Status != 202 {
		t.Fatalf("resend: %d %s", r.Status, r.Body)
	}
	pj := productJob(t, r)
	if en, err := e.Acc.Ledger(ctx, dead); err != nil || en.State != account.LedgerRefunded {
		t.Fatalf("dead reservation: %+v %v", en, err)
	}
	en, err := e.Acc.Ledger(ctx, pj.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c := e.credits(o.ID); c.Reserved != before.Reserved+en.Reserved {
		t.Fatalf("reserved %+v, want %d over %+v", c, en.Reserved, before)
	}
	if got := apitest.InputObjects(t, dir); len(got) != 1 || !strings.Contains(got[0], pj.ID) {
		t.Fatalf("input objects %v, want only the new job's", got)
	}
	if n := e.PendingCount(api.BucketPending); n != 0 {
		t.Fatalf("%d pending records left", n)
	}
	if r2 := e.Do("POST", "/v1/products/vfx/jobs", o.Key, body); r2.Status != 202 || productJob(t, r2).ID != pj.ID {
		t.Fatalf("second resend: %d %s", r2.Status, r2.Body)
	}
}
