package api

import (
	"net/http"

	"github.com/vfxrender/vfx/job"
)

// Error codes of the product API (docs/api.md, Errors). They are
// answered in the detail shape, never in the generation API's envelope.
const (
	CodeOrgKeyRequired         job.Code = "ORG_KEY_REQUIRED"
	CodeProductNotEnabled      job.Code = "PRODUCT_NOT_ENABLED"
	CodeTeamForbidden          job.Code = "TEAM_FORBIDDEN"
	CodeModelConsentRequired   job.Code = "MODEL_CONSENT_REQUIRED"
	CodeUnsupportedBillingUnit job.Code = "UNSUPPORTED_BILLING_UNIT"
	CodeBudgetExceeded         job.Code = "BUDGET_EXCEEDED"
	CodeProductNotFound        job.Code = "PRODUCT_NOT_FOUND"
	CodeModelNotFound          job.Code = "MODEL_NOT_FOUND"
	// vfx_finish parents.
	CodeParentNotFound      job.Code = "PARENT_NOT_FOUND"
	CodeParentNotOwned      job.Code = "PARENT_NOT_OWNED"
	CodeParentNotProductJob job.Code = "PARENT_NOT_PRODUCT_JOB"
	CodeParentFastMode      job.Code = "PARENT_FAST_MODE"
	CodeParentIsFinish      job.Code = "PARENT_IS_FINISH"
	CodeParentNotSuccessful job.Code = "PARENT_NOT_SUCCESSFUL"
	// CodeAccountKeyRequired: an organisation key of the product API on a
	// generation route (envelope shape).
	CodeAccountKeyRequired job.Code = "ACCOUNT_KEY_REQUIRED"
	// CodeOrgNotFound, CodeTeamNotFound: operator API.
	CodeOrgNotFound  job.Code = "ORG_NOT_FOUND"
	CodeTeamNotFound job.Code = "TEAM_NOT_FOUND"
)

// productDetail is the detail shape of an error (see writeError).
type productDetail struct {
	Detail ErrorDetail `json:"detail"`
}

// ErrorDetail is the detail of the product API's error shape.
type ErrorDetail struct {
	ErrorCode     job.Code `json:"error_code"`
	Message       string   `json:"message"`
	UnknownFields []string `json:"unknown_fields"`
	MissingFields []string `json:"missing_fields"`
}

// invalidInput is the product API's 422 INVALID_INPUT: its inputs failed
// their schema or rules (as FastAPI answers). It is the one code whose
// status is not codeStatus's: elsewhere INVALID_INPUT is a 400.
func invalidInput(format string, args ...any) *apiError {
	e := newError(CodeInvalidInput, format, args...)
	e.Status = http.StatusUnprocessableEntity
	return e
}

// handleProduct registers a product API route: every error is answered in
// the detail shape.
func (s *Server) handleProduct(method, path string, h handlerFunc) {
	s.routes = append(s.routes, route{Method: method, Path: path, Product: true})
	s.mux.HandleFunc(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
		r, release := s.withCharge(r)
		defer release()
		if err := h(w, r); err != nil {
			s.writeError(w, r, err, detailShape)
		}
	})
}
