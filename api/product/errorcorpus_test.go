package product

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/vfxrender/vfx/api/apitest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/job"
	"github.com/vfxrender/vfx/queue"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/error_corpus.golden from the answers of this build")

// corpusFile holds the error answers (status and body, byte for byte) of
// the requests TestErrorCorpus sends, and the error text of failed jobs as
// the two job APIs show it. It was recorded before the error codes moved
// from the "CODE: " prefix of a record's error to its error_code field
// (issue 34); a change of any answer fails the test. Rewrite it (go test
// ./api/ -run TestErrorCorpus -update-corpus) only for a deliberate change
// of an answer.
const corpusFile = "testdata/error_corpus.golden"

// TestErrorCorpus drives the real API on loopback through its error paths
// (both shapes: the generation, upload, account and operator APIs'
// envelope and the product API's detail) and through failed jobs of both
// APIs (a worker's coded failure, an internal one, an abandoned
// submission, a cancelled product job and a record written before the
// error_code field), and compares every answer with the recorded corpus.
func TestErrorCorpus(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, key := e.NewAccount(account.KindOrganization, account.AccountInput{Email: "corpus@example.com"})
	o := e.newOrg(1000, nil)
	src := dataPNG(t, 64, 64)
	var out bytes.Buffer
	// ids hides what differs from run to run (ids, times) behind stable names.
	ids := regexp.MustCompile(`\b(vfx|dap|acct|key|org|team|upload)_[A-Za-z0-9]{8,}\b|"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z"`)
	record := func(name string, r Resp) {
		t.Helper()
		body := ids.ReplaceAllStringFunc(string(r.Body), func(s string) string {
			if strings.HasPrefix(s, `"`) {
				return `"<time>"`
			}
			return s[:strings.Index(s, "_")] + "_<id>"
		})
		fmt.Fprintf(&out, "== %s\n%d\n%s\n", name, r.Status, strings.TrimRight(body, "\n"))
	}
	gen := func(kv ...any) Resp {
		return e.Do("POST", "/v1/vfx/generations", key, apitest.With(apitest.ValidGeneration(src), kv...))
	}

	// Generation API (envelope; 422 detail arrays for malformed bodies).
	record("no key", e.Do("GET", "/v1/vfx/generations/vfx_x", "", nil))
	record("bad key", e.Do("GET", "/v1/vfx/generations/vfx_x", "vfx_notakey", nil))
	record("job not found", e.Do("GET", "/v1/vfx/generations/vfx_nosuchjob", key, nil))
	record("malformed JSON", e.Do("POST", "/v1/vfx/generations", key, "{not json"))
	record("wrong type", gen("prompt", 5))
	record("generation type", gen("generation_type", "gif"))
	record("alpha mode", gen("alpha_mode", "x"))
	record("missing source", gen("source_uri", nil))
	record("missing alpha", gen("alpha_mode", "custom"))
	record("missing style input", gen("prompt", nil))
	record("prompt too long", gen("prompt", strings.Repeat("p", 5000)))
	record("seed", gen("seed", -1))
	record("keyframe index", gen("alpha_keyframe_index", -1))
	record("max resolution", gen("max_resolution", 3))
	record("uri scheme", gen("source_uri", "ftp://example.com/a.png"))
	record("upload uri unknown", gen("source_uri", "vfx://uploads/upload_nosuchupload/a.png"))
	record("file format", gen("source_uri", "data:image/png;base64,bm90IGEgcG5n"))
	record("alpha must be image", gen("alpha_mode", "custom", "alpha_uri", "data:video/mp4;base64,AAAA"))
	record("callback url", gen("callback_url", "ftp://example.com/hook"))
	record("idempotency key", gen("idempotency_key", strings.Repeat("k", 300)))
	record("video source an image", gen("generation_type", "video"))
	record("method not allowed", e.Do("DELETE", "/v1/vfx/generations", key, nil))
	record("no route", e.Do("GET", "/v1/nothing-here", key, nil))
	record("upload filename", e.Do("POST", "/v1/uploads", key, map[string]any{"filename": "a.exe"}))
	record("upload no filename", e.Do("POST", "/v1/uploads", key, map[string]any{}))

	// Operator API (envelope).
	record("admin no token", e.Do("POST", "/admin/v1/accounts", "", map[string]any{"email": "x@example.com"}))
	record("admin bad email", e.AdminDo("POST", "/admin/v1/accounts", map[string]any{"email": "not an address"}))
	record("admin account exists", e.AdminDo("POST", "/admin/v1/accounts", map[string]any{"email": "corpus@example.com"}))
	record("admin account not found", e.AdminDo("PATCH", "/admin/v1/accounts/acct_nosuch", map[string]any{"spending_limit": 1}))
	record("admin negative limit", e.AdminDo("PATCH", "/admin/v1/accounts/acct_nosuch", map[string]any{"spending_limit": -1}))
	record("admin key not found", e.AdminDo("DELETE", "/admin/v1/keys/key_nosuch", nil))
	record("admin org not found", e.AdminDo("GET", "/admin/v1/orgs/org_nosuch", nil))
	record("admin org bad credits", e.AdminDo("POST", "/admin/v1/orgs/"+o.ID+"/credits", map[string]any{"amount": -5}))

	// Product API (detail).
	pj := func(k string, body any) Resp { return e.Do("POST", "/v1/products/vfx/jobs", k, body) }
	record("product no key", pj("", vfxJob("c1", src)))
	record("product account key", pj(key, vfxJob("c1", src)))
	record("product malformed JSON", pj(o.Key, "{not json"))
	bad := vfxJob("c1", src)
	bad["priority"] = 1
	record("product unknown field", pj(o.Key, bad))
	record("product missing fields", pj(o.Key, map[string]any{"inputs": map[string]any{}}))
	bad = vfxJob("c1", src)
	bad["billing_unit"] = "usd"
	record("product billing unit", pj(o.Key, bad))
	bad = vfxJob("c1", src)
	bad["callback_url"] = "ftp://example.com/x"
	record("product callback", pj(o.Key, bad))
	bad = vfxJob("c1", src)
	bad["inputs"] = map[string]any{"source": "data:image/png;base64,bm90IGEgcG5n", "alpha_mode": "fill", "prompt": "x"}
	record("product file format", pj(o.Key, bad))
	bad = vfxJob("c1", src)
	bad["model_id"] = "vfx-9"
	record("product model not found", pj(o.Key, bad))
	record("product not found", e.Do("POST", "/v1/products/nothing/jobs", o.Key, vfxJob("c1", src)))
	record("product job not found", e.Do("GET", "/v1/product-jobs/dap_nosuchjob", o.Key, nil))
	record("product cancel not found", e.Do("POST", "/v1/product-jobs/dap_nosuchjob/cancel", o.Key, nil))
	fj := map[string]any{"model_id": "vfx-2.0", "idempotency_key": "f", "inputs": map[string]any{"parent_job_id": "dap_nosuchparent", "target_resolution": 2160}}
	record("finish parent not found", e.Do("POST", "/v1/products/vfx_finish/jobs", o.Key, fj))

	// Failed jobs, as a worker fails them (Delivery.Fail), and as the API
	// does.
	cons, err := e.Q.Consumer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// take returns the delivery of job id, acknowledging those of jobs
	// ended before (a cancelled one).
	take := func(id string) *queue.Delivery {
		t.Helper()
		for {
			d, err := cons.Next(ctx)
			if err != nil {
				t.Fatalf("next: %v", err)
			}
			if d.JobID == id {
				return d
			}
			if err := d.Done(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	failNext := func(id string, reason error) {
		t.Helper()
		if err := take(id).Fail(ctx, queue.Permanent(reason)); err != nil {
			t.Fatal(err)
		}
	}
	jobError := func(id string) Resp {
		r := e.Do("GET", "/v1/vfx/generations/"+id, key, nil)
		var j struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		}
		if err := json.Unmarshal(r.Body, &j); err != nil {
			t.Fatalf("%s: %s", id, r.Body)
		}
		b, _ := json.Marshal(j)
		return Resp{Status: r.Status, Body: b}
	}
	productError := func(id string) Resp {
		r := e.Do("GET", "/v1/product-jobs/"+id, o.Key, nil)
		var j struct {
			Status string           `json:"status"`
			Error  *productJobError `json:"error"`
		}
		if err := json.Unmarshal(r.Body, &j); err != nil {
			t.Fatalf("%s: %s", id, r.Body)
		}
		b, _ := json.Marshal(j)
		return Resp{Status: r.Status, Body: b}
	}
	submitGen := func(ik string) string {
		t.Helper()
		r := gen("idempotency_key", ik)
		if r.Status != 201 {
			t.Fatalf("submit: %d %s", r.Status, r.Body)
		}
		return r.JSON(t)["id"].(string)
	}
	submitProduct := func(ik string) string {
		t.Helper()
		r := pj(o.Key, vfxJob(ik, src))
		if r.Status != 202 {
			t.Fatalf("submit product: %d %s", r.Status, r.Body)
		}
		return productJob(t, r).ID
	}
	coded := job.Errorf(job.CodeSourceTooLarge, "source: 5000 x 5000 is 25000000 pixels, over the limit of 16777216")
	id := submitGen("fail-coded")
	failNext(id, coded)
	record("generation failed, coded", jobError(id))
	id = submitGen("fail-model")
	failNext(id, job.Errorf(job.CodeModelUnavailable, "alpha_mode auto needs the segmentation network, and this worker has none"))
	record("generation failed, model unavailable", jobError(id))
	id = submitGen("fail-internal")
	failNext(id, errors.New("worker: gave up after 5 delivery attempts (last error: store: timeout)"))
	record("generation failed, internal", jobError(id))
	id = submitGen("fail-abandoned")
	if err := take(id).Done(ctx); err != nil {
		t.Fatalf("take the abandoned job's message: %v", err)
	}
	e.Srv.Abandon(ctx, id, errors.New("test"))
	record("generation abandoned", jobError(id))
	// A record written before the error_code field: the code only as the
	// prefix of its error.
	id = submitGen("fail-old")
	if err := take(id).Done(ctx); err != nil {
		t.Fatalf("take the old job's message: %v", err)
	}
	oldRecord(t, e, id, "INVALID_FILE_FORMAT: source: not an image")
	record("generation failed, old record", jobError(id))

	id = submitProduct("p-fail-coded")
	failNext(id, coded)
	record("product failed, coded", productError(id))
	id = submitProduct("p-fail-internal")
	failNext(id, errors.New("worker: render: out of memory"))
	record("product failed, internal", productError(id))
	id = submitProduct("p-cancel")
	record("product cancelled", e.Do("POST", "/v1/product-jobs/"+id+"/cancel", o.Key, nil))
	record("product cancelled, read", productError(id))
	id = submitProduct("p-fail-old")
	if err := take(id).Done(ctx); err != nil {
		t.Fatalf("take the old product job's message: %v", err)
	}
	oldRecord(t, e, id, "SOURCE_UNREACHABLE: source: 404 Not Found")
	record("product failed, old record", productError(id))

	if *updateCorpus {
		if err := os.WriteFile(corpusFile, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(filepath.Clean(corpusFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		got, wantS := strings.Split(out.String(), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(got), len(wantS)); i++ {
			g, w := "", ""
			if i < len(got) {
				g = got[i]
			}
			if i < len(wantS) {
				w = wantS[i]
			}
			if g != w {
				t.Errorf("line %d of %s:\n got  %s\n want %s", i+1, corpusFile, g, w)
			}
		}
	}
}

// oldRecord makes job id a failed record as the code before the
// error_code field wrote it: its JSON as stored, with the code only as the
// prefix of "error" and no "error_code".
func oldRecord(t *testing.T, e *env, id, text string) {
	t.Helper()
	ctx := context.Background()
	kv, err := e.JS.KeyValue(ctx, queue.BucketJobs)
	if err != nil {
		t.Fatal(err)
	}
	en, err := kv.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(en.Value(), &m); err != nil {
		t.Fatal(err)
	}
	m["status"], m["error"] = "failed", text
	m["completed_at"] = m["modified_at"]
	delete(m, "error_code")
	b, _ := json.Marshal(m)
	if _, err := kv.Update(ctx, id, b, en.Revision()); err != nil {
		t.Fatal(err)
	}
}
