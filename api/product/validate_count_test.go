package product

import (
	"github.com/vfxrender/vfx/api/apitest"
	"sync/atomic"
	"testing"

	"github.com/vfxrender/vfx/account"
	"github.com/vfxrender/vfx/job"
)

// TestValidateOncePerSubmission counts the job contract's field rules
// (job.Validate, through the server's hook) per submission of both APIs:
// once for a job accepted, once for one its rules refuse, and never for a
// body refused before the request is built (a wrong JSON type).
func TestValidateOncePerSubmission(t *testing.T) {
	var calls atomic.Int64
	e := newEnv(t, envOpts{NoRun: true, Validate: func(r job.JobRequest) (job.Valid, error) {
		calls.Add(1)
		return job.Validate(r)
	}})
	count := func(what string, want int64, submit func() Resp, status int) {
		t.Helper()
		before := calls.Load()
		r := submit()
		if r.Status != status {
			t.Fatalf("%s: %d %s, want %d", what, r.Status, r.Body, status)
		}
		if got := calls.Load() - before; got != want {
			t.Errorf("%s: job.Validate ran %d times, want %d", what, got, want)
		}
	}
	_, key := e.NewAccount(account.KindOrganization, account.AccountInput{})
	src := e.Upload(key, "src.png", apitest.PNGBytes(t, 64, 48, false))
	count("generation", 1, func() Resp { return e.Do("POST", "/v1/vfx/generations", key, apitest.ValidGeneration(src)) }, 201)
	bad := apitest.ValidGeneration(src)
	bad["seed"] = "seven"
	count("generation with a wrong JSON type", 0, func() Resp { return e.Do("POST", "/v1/vfx/generations", key, bad) }, 422)

	o := e.newOrg(1000, nil)
	count("product", 1, func() Resp {
		return e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("once", dataPNG(t, 64, 64)))
	}, 202)
	// An empty prompt with no reference passes the model's schema and is
	// refused by the contract's rules: still one call.
	noStyle := vfxJob("nostyle", dataPNG(t, 64, 64))
	noStyle["inputs"].(map[string]any)["prompt"] = ""
	count("product refused by the field rules", 1, func() Resp { return e.Do("POST", "/v1/products/vfx/jobs", o.Key, noStyle) }, 422)
}
