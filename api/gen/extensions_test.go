package gen

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/api/apitest"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/queue"
)

// TestFramesAndOutputFormat: the frames and output_format extensions of a
// generation request at their edges: a range ending on the source's last
// frame is accepted (the job's frames are the range's), one frame past it
// is 400 INVALID_FRAME_RANGE; malformed ranges, a range on an image and an
// unknown format are refused with their codes; the normalised request
// reaches the worker through the job record; a completed exr job lists
// its pass sequences; the OpenAPI document describes both fields.
func TestFramesAndOutputFormat(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	key := e.OrgKey()
	vid := apitest.VideoFixture(t, 64, 48, 4)
	src := e.Upload(key, "src.mp4", apitest.ReadFile(t, vid.Source))
	srcImg := e.Upload(key, "src.png", apitest.PNGBytes(t, 64, 48, false))
	cutout := e.Upload(key, "cutout.png", apitest.KeyframePNG(t, 64, 48, true, true))
	video := apitest.With(apitest.ValidGeneration(src), "generation_type", "video")

	for _, tc := range []struct {
		name, want string
		body       map[string]any
	}{
		{"one past the last frame", "frames 0-4: the source has 4 frames (0..3)", apitest.With(video, "frames", "0-4")},
		{"past the last frame", "frames 4-4: the source has 4 frames", apitest.With(video, "frames", "4-4")},
		{"reversed", `frames "3-1": want A-B`, apitest.With(video, "frames", "3-1")},
		{"negative", `frames "-1-2": want A-B`, apitest.With(video, "frames", "-1-2")},
		{"one number", `frames "2": want A-B`, apitest.With(video, "frames", "2")},
		{"empty", `frames "": want A-B`, apitest.With(video, "frames", "")},
		{"image", "a frame range needs generation_type video", apitest.With(apitest.ValidGeneration(srcImg), "frames", "0-0")},
		{"unknown format", `output_format "dpx": want mp4 or exr`, apitest.With(video, "output_format", "dpx")},
		{"format is lower case", `output_format "EXR"`, apitest.With(video, "output_format", "EXR")},
		{"keyframe outside the range", "alpha_keyframe_index 0 is outside frames 1-3", apitest.With(video, "frames", "1-3", "alpha_mode", "select", "alpha_uri", cutout)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Do("POST", "/v1/vfx/generations", key, tc.body)
			code := api.CodeInvalidFrameRange
			switch {
			case strings.Contains(tc.name, "format"):
				code = api.CodeInvalidOutputFormat
			case strings.Contains(tc.name, "keyframe"):
				code = api.CodeInvalidKeyframeIndex
			}
			var env api.Envelope
			_ = json.Unmarshal(r.Body, &env)
			if r.Status != 400 || r.Code() != code || !strings.Contains(env.Error.Message, tc.want) {
				t.Fatalf("want 400 %s naming %q, got %d %s", code, tc.want, r.Status, trunc.String(string(r.Body), 300))
			}
		})
	}
	if r := e.Do("POST", "/v1/vfx/generations", key, apitest.With(video, "frames", 3)); r.Status != 422 {
		t.Errorf("frames as a number: %d %s, want 422", r.Status, r.Body)
	}

	// Accepted: the range ending on the last frame, a one-frame range at
	// the end, a select keyframe at the range's first frame, exr.
	for _, tc := range []struct {
		body   map[string]any
		frames int
		want   job.JobRequest
	}{
		{apitest.With(video, "frames", "0-3"), 4, job.JobRequest{Frames: "0-3"}},
		{apitest.With(video, "frames", " 3 - 3 "), 1, job.JobRequest{Frames: "3-3"}},
		{apitest.With(video, "frames", "1-2", "alpha_mode", "select", "alpha_uri", cutout, "alpha_keyframe_index", 1), 2, job.JobRequest{Frames: "1-2", AlphaKeyframeIndex: 1}},
		{apitest.With(video, "output_format", "exr"), 4, job.JobRequest{OutputFormat: "exr"}},
		{apitest.With(video, "output_format", "mp4"), 4, job.JobRequest{OutputFormat: "mp4"}},
	} {
		r := e.Do("POST", "/v1/vfx/generations", key, tc.body)
		if r.Status != 201 {
			t.Fatalf("%v: %d %s", tc.body, r.Status, r.Body)
		}
		var j api.Job
		if err := json.Unmarshal(r.Body, &j); err != nil || j.Frames != tc.frames {
			t.Errorf("%v: frames %d (%v), want %d", tc.body, j.Frames, err, tc.frames)
		}
		rec, _, err := e.Q.Get(context.Background(), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		jr, err := job.DecodeJobRequest(rec.Request)
		if err != nil || jr.Frames != tc.want.Frames || jr.OutputFormat != tc.want.OutputFormat || jr.AlphaKeyframeIndex != tc.want.AlphaKeyframeIndex {
			t.Errorf("%v: the record's request is %+v (%v), want frames %q, output_format %q, keyframe %d", tc.body, jr, err,
				tc.want.Frames, tc.want.OutputFormat, tc.want.AlphaKeyframeIndex)
		}
	}

	// The fields are part of the idempotency hash: the same key with
	// another range is another body (409); mp4 hashes as omitted.
	idem := apitest.With(video, "frames", "0-3", "idempotency_key", "shot-7")
	if r := e.Do("POST", "/v1/vfx/generations", key, idem); r.Status != 201 {
		t.Fatalf("keyed: %d %s", r.Status, r.Body)
	}
	if r := e.Do("POST", "/v1/vfx/generations", key, apitest.With(idem, "frames", "0-2")); r.Status != 409 || r.Code() != api.CodeIdempotencyConflict {
		t.Errorf("same key, frames 0-2: %d %s, want 409", r.Status, r.Body)
	}
	if r := e.Do("POST", "/v1/vfx/generations", key, apitest.With(idem, "output_format", "exr")); r.Status != 409 {
		t.Errorf("same key, output_format exr: %d %s, want 409", r.Status, r.Body)
	}
	if r := e.Do("POST", "/v1/vfx/generations", key, apitest.With(idem, "output_format", "mp4")); r.Status != 200 {
		t.Errorf("same key, output_format mp4 (the default): %d %s, want 200 with the job", r.Status, r.Body)
	}

	// A completed exr job lists its sequences beside render, source and alpha.
	r := e.Do("POST", "/v1/vfx/generations", key, apitest.With(video, "output_format", "exr"))
	var j api.Job
	_ = json.Unmarshal(r.Body, &j)
	ctx := context.Background()
	for _, st := range []queue.Status{queue.StatusProcessing, queue.StatusCompleted} {
		if _, err := e.Q.Update(ctx, j.ID, func(rec *queue.Record) error {
			rec.Status = st
			if st == queue.StatusCompleted {
				rec.Outputs = map[string]string{}
				for _, n := range []string{"render", "source", "alpha"} {
					rec.Outputs[n] = "jobs/" + j.ID + "/" + n + ".mp4"
				}
				for _, p := range job.EXRPasses {
					rec.Outputs[job.OutputEXR(p)] = "jobs/" + j.ID + "/exr/" + p + ".zip"
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	got := e.Do("GET", "/v1/vfx/generations/"+j.ID, key, nil)
	var done api.Job
	if err := json.Unmarshal(got.Body, &done); err != nil {
		t.Fatal(err)
	}
	for _, p := range job.EXRPasses {
		if u := done.Output[job.OutputEXR(p)]; !strings.Contains(u, "/exr/"+p+".zip") {
			t.Errorf("output.%s = %q, want the signed URL of its ZIP", job.OutputEXR(p), u)
		}
	}

	doc := e.Do("GET", "/v1/openapi.json", "", nil)
	for _, s := range []string{`"output_format"`, `"frames"`, `"^exr_(composite|`, `"INVALID_FRAME_RANGE"`, `"INVALID_OUTPUT_FORMAT"`} {
		if !strings.Contains(string(doc.Body), s) {
			t.Errorf("the OpenAPI document lacks %s", s)
		}
	}
}

// TestArchiveUpload: a ZIP of PNG frames uploaded as a video source is
// accepted with its frame count; a TAR with a link, and a ZIP one frame
// over the limit, are refused at submission with their codes.
func TestArchiveUpload(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	key := e.OrgKey()
	frame := apitest.PNGBytes(t, 64, 48, false)
	zipOf := func(n int) []byte {
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		for i := range n {
			w, _ := zw.Create(fmt.Sprintf("f.%04d.png", i))
			w.Write(frame)
		}
		zw.Close()
		return b.Bytes()
	}
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "f.0001.png", Size: int64(len(frame)), Mode: 0o644, Typeflag: tar.TypeReg})
	tw.Write(frame)
	tw.WriteHeader(&tar.Header{Name: "f.0002.png", Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink})
	tw.Close()

	video := func(uri string) map[string]any {
		return apitest.With(apitest.ValidGeneration(uri), "generation_type", "video")
	}
	r := e.Do("POST", "/v1/vfx/generations", key, video(e.Upload(key, "frames.zip", zipOf(240))))
	var j api.Job
	if err := json.Unmarshal(r.Body, &j); r.Status != 201 || err != nil || j.Frames != 240 {
		t.Fatalf("240 frames: %d %s", r.Status, trunc.String(string(r.Body), 300))
	}
	for _, c := range []struct {
		name, file string
		body       []byte
		code       job.Code
		msg        string
	}{
		{"241 frames", "frames.zip", zipOf(241), api.CodeVideoTooManyFrames, "241 frames, over the limit of 240"},
		{"symlink", "frames.tar", tb.Bytes(), api.CodeInvalidArchive, "f.0002.png is a symbolic link"},
		{"zip named tar", "frames.tar", zipOf(2), api.CodeInvalidFileFormat, "declared application/x-tar, content is application/zip"},
	} {
		var env api.Envelope
		r := e.Do("POST", "/v1/vfx/generations", key, video(e.Upload(key, c.file, c.body)))
		_ = json.Unmarshal(r.Body, &env)
		if r.Status != 400 || env.Error.Code != c.code || !strings.Contains(env.Error.Message, c.msg) {
			t.Errorf("%s: %d %s; want 400 %s naming %q", c.name, r.Status, trunc.String(string(r.Body), 300), c.code, c.msg)
		}
	}
}
