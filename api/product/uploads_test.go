package product

import (
	"github.com/vfxrender/vfx/api/apitest"
	"strings"
	"testing"

	"github.com/vfxrender/vfx/api"
)

// TestUploadOwnership: an upload belongs to the account, or to the
// organisation and team, that created it; anyone else naming it gets the
// answer of an upload that does not exist, word for word.
func TestUploadOwnership(t *testing.T) {
	e := newEnv(t, envOpts{NoRun: true})
	keyA, keyB := e.OrgKey(), e.OrgKey()
	img := apitest.PNGBytes(t, 64, 48, false)
	srcA := e.Upload(keyA, "still.png", img)
	missing := strings.Replace(srcA, "upload_", "upload_X", 1)

	// Generation API: B gets what a missing upload gets; A gets its job.
	rOther := e.Do("POST", "/v1/vfx/generations", keyB, apitest.ValidGeneration(srcA))
	rMissing := e.Do("POST", "/v1/vfx/generations", keyB, apitest.ValidGeneration(missing))
	if rOther.Status != 400 || rOther.Code() != api.CodeSourceUnreachable {
		t.Fatalf("someone else's upload: %d %s", rOther.Status, rOther.Body)
	}
	if rMissing.Status != rOther.Status || strings.ReplaceAll(string(rMissing.Body), missing, srcA) != string(rOther.Body) {
		t.Fatalf("answers differ:\n%s\n%s", rOther.Body, rMissing.Body)
	}
	if r := e.Do("POST", "/v1/vfx/generations", keyA, apitest.ValidGeneration(srcA)); r.Status != 201 {
		t.Fatalf("owner: %d %s", r.Status, r.Body)
	}

	// Product API: the team context must match too.
	o := e.newOrg(1000, nil)
	teamSrc := e.Upload(o.TeamKey, "still.png", img)
	orgSrc := e.Upload(o.Key, "still.png", img)
	wantDetail(t, e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("a", teamSrc)), 400, api.CodeSourceUnreachable)
	wantDetail(t, e.Do("POST", "/v1/products/vfx/jobs", o.TeamKey, vfxJob("b", orgSrc)), 400, api.CodeSourceUnreachable)
	wantDetail(t, e.Do("POST", "/v1/products/vfx/jobs", o.TeamKey, vfxJob("c", srcA)), 400, api.CodeSourceUnreachable)
	if r := e.Do("POST", "/v1/products/vfx/jobs", o.TeamKey, vfxJob("d", teamSrc)); r.Status != 202 {
		t.Fatalf("team upload, team key: %d %s", r.Status, r.Body)
	}
	// The organisation-wide key acting for the team (header) is the team.
	if r := e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("e", teamSrc), api.HeaderTeamID, o.TeamID); r.Status != 202 {
		t.Fatalf("team upload, org key with team header: %d %s", r.Status, r.Body)
	}
	if r := e.Do("POST", "/v1/products/vfx/jobs", o.Key, vfxJob("f", orgSrc)); r.Status != 202 {
		t.Fatalf("org upload, org key: %d %s", r.Status, r.Body)
	}
	// And a generation account cannot use an organisation's upload.
	if r := e.Do("POST", "/v1/vfx/generations", keyA, apitest.ValidGeneration(orgSrc)); r.Status != 400 || r.Code() != api.CodeSourceUnreachable {
		t.Fatalf("org upload from an account: %d %s", r.Status, r.Body)
	}
}
