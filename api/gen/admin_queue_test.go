package gen

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/vfxrender/vfx/queue"
)

// TestAdminQueue: the operator's view of the queue needs the operator
// token, and shows the depth, the worker running a job and its state.
func TestAdminQueue(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if r := e.Do("GET", "/admin/v1/queue", "", nil); r.Status != 401 {
		t.Fatalf("no token: %d %s", r.Status, r.Body)
	}
	if r := e.Do("GET", "/admin/v1/queue", "", nil, "Authorization", "Bearer admintoken-not"); r.Status != 401 {
		t.Fatalf("wrong token: %d %s", r.Status, r.Body)
	}
	for _, id := range []string{"vfx_q1", "vfx_q2"} {
		if _, _, err := e.Q.Submit(ctx, queue.Record{ID: id, Kind: queue.KindGeneration, Owner: "acct"}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := e.Q.Consumer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(ctx, "gpu-node-1"); err != nil {
		t.Fatal(err)
	}
	// The consumer's counts settle a moment after the pull (seen under
	// load: pending 0 with 2 messages); poll with a deadline.
	var st QueueStatus
	var r Resp
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r = e.AdminDo("GET", "/admin/v1/queue", nil)
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		st = QueueStatus{}
		if err := json.Unmarshal(r.Body, &st); err != nil {
			t.Fatal(err)
		}
		if (st.Pending == 1 && st.InFlight == 1) || time.Now().After(deadline) {
			break
		}
	}
	if st.Pending != 1 || st.InFlight != 1 || len(st.Running) != 1 || st.Running[0].JobID != d.JobID || st.RecentDead == nil {
		t.Errorf("queue: %s", r.Body)
	}
	if len(st.Workers) != 1 || st.Workers[0].Name != "gpu-node-1" || st.Workers[0].State != "running" ||
		len(st.Workers[0].Jobs) != 1 || st.Workers[0].LastSeen == nil {
		t.Errorf("workers: %+v", st.Workers)
	}
}
