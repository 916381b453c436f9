package product

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/api"
	"github.com/vfxrender/vfx/job"
)

// TestMethodNotAllowed sends, over loopback HTTP, every method a route's
// path does not serve to every registered route, and checks the 405, the
// Allow header and the error shape of the route's family; unknown paths
// stay 404 and served methods are not answered 405.
func TestMethodNotAllowed(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	served := map[string][]string{} // path → methods
	product := map[string]bool{}
	for _, rt := range e.Srv.RouteTable() {
		served[rt.Path] = append(served[rt.Path], rt.Method)
		product[rt.Path] = product[rt.Path] || rt.Product
	}
	if len(served) < 20 || !product["/v1/product-jobs/{job_id}"] || product["/v1/vfx/generations"] {
		t.Fatalf("routes %v product %v", served, product)
	}
	concrete := func(p string) string {
		for _, w := range []string{"{job_id}", "{id}", "{key_id}", "{product}", "{model_id}"} {
			p = strings.ReplaceAll(p, w, "x1")
		}
		return p
	}
	checked := 0
	for path, methods := range served {
		want := slices.Clone(methods)
		if slices.Contains(want, "GET") {
			want = append(want, "HEAD")
		}
		slices.Sort(want)
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			if slices.Contains(want, m) {
				continue
			}
			r := e.Do(m, concrete(path), "", nil)
			if r.Status != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: status %d body %s", m, path, r.Status, r.Body)
				continue
			}
			if got := r.Header.Get("Allow"); got != strings.Join(want, ", ") {
				t.Errorf("%s %s: Allow %q, want %q", m, path, got, strings.Join(want, ", "))
			}
			if product[path] {
				var b struct {
					Detail *struct {
						ErrorCode     job.Code `json:"error_code"`
						Message       string   `json:"message"`
						UnknownFields []string `json:"unknown_fields"`
						MissingFields []string `json:"missing_fields"`
					} `json:"detail"`
					Error any `json:"error"`
				}
				if err := json.Unmarshal(r.Body, &b); err != nil || b.Detail == nil || b.Error != nil ||
					b.Detail.ErrorCode != api.CodeMethodNotAllowed || b.Detail.Message == "" || b.Detail.UnknownFields == nil || b.Detail.MissingFields == nil {
					t.Errorf("%s %s: product body %s (%v)", m, path, r.Body, err)
				}
			} else {
				var b map[string]any
				_ = json.Unmarshal(r.Body, &b)
				if r.Code() != api.CodeMethodNotAllowed || b["detail"] != nil || !strings.Contains(string(r.Body), m) {
					t.Errorf("%s %s: envelope body %s", m, path, r.Body)
				}
			}
			checked++
		}
	}
	if checked < 100 {
		t.Fatalf("only %d wrong-method requests checked", checked)
	}
	// A served method still reaches its handler (401 without a key, not 405).
	if r := e.Do("GET", "/v1/vfx/generations", "", nil); r.Status != 401 || r.Header.Get("Allow") != "" {
		t.Errorf("GET list without key: %d %s", r.Status, r.Body)
	}
	// HEAD on a GET route is served by the GET handler.
	if r := e.Do("HEAD", "/v1/openapi.json", "", nil); r.Status != 200 {
		t.Errorf("HEAD openapi: %d", r.Status)
	}
	// Unknown paths, and known paths with an extra segment, stay 404.
	for _, p := range []string{"/v1/nothing", "/v1/vfx/generations/a/b", "/v1/uploads/x", "/"} {
		for _, m := range []string{"GET", "DELETE"} {
			if r := e.Do(m, p, "", nil); r.Status != 404 || r.Code() != api.CodeNotFound || r.Header.Get("Allow") != "" {
				t.Errorf("%s %s: %d %s", m, p, r.Status, r.Body)
			}
		}
	}
}
