package api

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/vfxrender/vfx/queue"
)

// TestCodeStatus: every code the OpenAPI document lists has its status in
// codeStatus, and the status the document gives is the table's (the
// product API's 422 INVALID_INPUT is invalidInput's, the one exception).
func TestCodeStatus(t *testing.T) {
	check := func(doc string, codes map[string]string, except map[string]int) {
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
	check("x-error-codes", errorCodes, nil)
	check("x-product-error-codes", productErrorCodes, map[string]int{CodeInvalidInput: invalidInput("x").Status})
	if st := invalidInput("x").Status; st != http.StatusUnprocessableEntity {
		t.Errorf("invalidInput: %d, want 422", st)
	}
	if st := statusOf("NO_SUCH_CODE"); st != http.StatusInternalServerError {
		t.Errorf("unknown code: %d, want 500", st)
	}
}

// TestRecordCode: a failed record's code is its ErrorCode; a record written
// before that field gives it as the prefix of Error.
func TestRecordCode(t *testing.T) {
	for _, c := range []struct {
		rec  queue.Record
		want string
	}{
		{queue.Record{ErrorCode: "SOURCE_TOO_LARGE", Error: "SOURCE_TOO_LARGE: source: 3000000 pixels"}, "SOURCE_TOO_LARGE"},
		{queue.Record{ErrorCode: "MODEL_UNAVAILABLE", Error: "alpha_mode auto needs the network"}, "MODEL_UNAVAILABLE"},
		{queue.Record{Error: "INVALID_FILE_FORMAT: source: not an image"}, "INVALID_FILE_FORMAT"},
		{queue.Record{Error: "CANCELLED: cancelled by the client"}, "CANCELLED"},
		{queue.Record{Error: "worker: gave up after 5 delivery attempts (last error: SOURCE_UNREACHABLE: x)"}, ""},
		{queue.Record{}, ""},
	} {
		if got := recordCode(c.rec); got != c.want {
			t.Errorf("%+v: %q, want %q", c.rec, got, c.want)
		}
	}
}
