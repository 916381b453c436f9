package api

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/vfxrender/vfx/job"
)

// TestCodeStatus: every code the OpenAPI document lists has its status in
// codeStatus, and the status the document gives is the table's (the
// product API's 422 INVALID_INPUT is invalidInput's, the one exception).
func TestCodeStatus(t *testing.T) {
	check := func(doc string, codes map[job.Code]string, except map[job.Code]int) {
		for code, desc := range codes {
			want, err := strconv.Atoi(desc[:3])
			if err != nil {
				t.Errorf("%s %s: description %q does not start with its status", doc, code, desc)
				continue
			}
			if _, ok := codeStatus[code]; !ok {
				t.Errorf("%s: %s is not in codeStatus", doc, code)
				continue
			}
			got := statusOf(code)
			if st, ok := except[code]; ok {
				got = st
			}
			if got != want {
				t.Errorf("%s: %s answers %d, the document says %d", doc, code, got, want)
			}
		}
	}
	check("x-error-codes", ErrorCodes, nil)
	check("x-product-error-codes", ProductErrorCodes, map[job.Code]int{CodeInvalidInput: InvalidInput("x").Status})
	if st := InvalidInput("x").Status; st != http.StatusUnprocessableEntity {
		t.Errorf("invalidInput: %d, want 422", st)
	}
	if st := statusOf("NO_SUCH_CODE"); st != http.StatusInternalServerError {
		t.Errorf("unknown code: %d, want 500", st)
	}
}
