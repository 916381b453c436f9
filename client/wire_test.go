package client

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/vfxrender/vfx/api"
)

// TestWireTypes: a job and a page of jobs as the API writes them decode
// into the client's types with every field the client has (the client
// keeps its own copies of the answers' shapes so as to link no server
// code; this catches a drift).
func TestWireTypes(t *testing.T) {
	p, gt, am, done, next := 40, "video", "select", "2026-11-27T08:00:05Z", "tok"
	src := api.Job{ID: "vfx_a", Status: "completed", Progress: &p, GenerationType: &gt, AlphaMode: &am, Prompt: "dusk",
		Frames: 24, Output: map[string]string{"render": "https://x/r.mp4"}, Seed: 7, Error: "E: m",
		CreatedAt: "2026-11-27T08:00:00Z", ModifiedAt: "2026-11-27T08:00:05Z", CompletedAt: &done}
	raw, err := json.Marshal(api.JobPage{Jobs: []api.Job{src}, NextPageToken: &next})
	if err != nil {
		t.Fatal(err)
	}
	var page JobPage
	if err := json.Unmarshal(raw, &page); err != nil {
		t.Fatal(err)
	}
	want := Job{ID: src.ID, Status: src.Status, Progress: &p, GenerationType: &gt, AlphaMode: &am, Prompt: src.Prompt,
		Frames: src.Frames, Output: src.Output, Seed: src.Seed, Error: src.Error, CreatedAt: src.CreatedAt,
		ModifiedAt: src.ModifiedAt, CompletedAt: &done}
	if len(page.Jobs) != 1 || !reflect.DeepEqual(page.Jobs[0], want) || page.NextPageToken == nil || *page.NextPageToken != next {
		t.Errorf("decoded %+v, want %+v", page, want)
	}
	// Every field of Job is one the API writes: its JSON names are a
	// subset of api.Job's.
	var apiFields, ours map[string]any
	_ = json.Unmarshal(mustJSON(t, src), &apiFields)
	_ = json.Unmarshal(mustJSON(t, want), &ours)
	for k := range ours {
		if _, ok := apiFields[k]; !ok {
			t.Errorf("client.Job field %q is not in the API's job", k)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
