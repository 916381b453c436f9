package api

import "net/http"

// Error codes of the product API (docs/api.md, Errors). They are
// answered in the detail shape, never in the generation API's envelope.
const (
	CodeOrgKeyRequired         = "ORG_KEY_REQUIRED"
	CodeProductNotEnabled      = "PRODUCT_NOT_ENABLED"
	CodeTeamForbidden          = "TEAM_FORBIDDEN"
	CodeModelConsentRequired   = "MODEL_CONSENT_REQUIRED"
	CodeUnsupportedBillingUnit = "UNSUPPORTED_BILLING_UNIT"
	CodeBudgetExceeded         = "BUDGET_EXCEEDED"
	CodeProductNotFound        = "PRODUCT_NOT_FOUND"
	CodeModelNotFound          = "MODEL_NOT_FOUND"
	// vfx_finish parents.
	CodeParentNotFound      = "PARENT_NOT_FOUND"
	CodeParentNotOwned      = "PARENT_NOT_OWNED"
	CodeParentNotProductJob = "PARENT_NOT_PRODUCT_JOB"
	CodeParentFastMode      = "PARENT_FAST_MODE"
	CodeParentIsFinish      = "PARENT_IS_FINISH"
	CodeParentNotSuccessful = "PARENT_NOT_SUCCESSFUL"
	// CodeAccountKeyRequired: an organisation key of the product API on a
	// generation route (envelope shape).
	CodeAccountKeyRequired = "ACCOUNT_KEY_REQUIRED"
	// CodeOrgNotFound, CodeTeamNotFound: operator API.
	CodeOrgNotFound  = "ORG_NOT_FOUND"
	CodeTeamNotFound = "TEAM_NOT_FOUND"
)

// productDetail is the detail shape of an error (see writeError).
type productDetail struct {
	Detail ErrorDetail `json:"detail"`
}

// ErrorDetail is the detail of the product API's error shape.
type ErrorDetail struct {
	ErrorCode     string   `json:"error_code"`
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
