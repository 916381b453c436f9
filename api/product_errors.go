package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.uber.org/zap"
)

// Error codes of the product API (SPEC-NOTES.md, Product API). They are
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

// productErr is an error answered in the product API's detail shape:
// {"detail":{"error_code","message","unknown_fields":[…],"missing_fields":[…]}}.
type productErr struct {
	Status  int
	Code    string
	Message string
	Unknown []string
	Missing []string
	Header  http.Header
}

func (e *productErr) Error() string { return e.Code + ": " + e.Message }

// productDetail is the body of a productErr.
type productDetail struct {
	Detail productDetailBody `json:"detail"`
}

type productDetailBody struct {
	ErrorCode     string   `json:"error_code"`
	Message       string   `json:"message"`
	UnknownFields []string `json:"unknown_fields"`
	MissingFields []string `json:"missing_fields"`
}

func newProductErr(status int, code, format string, args ...any) *productErr {
	return &productErr{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// invalidInput is 422 INVALID_INPUT.
func invalidInput(format string, args ...any) *productErr {
	return newProductErr(http.StatusUnprocessableEntity, CodeInvalidInput, format, args...)
}

// asProductErr turns any handler error into the detail shape: envelope
// errors keep their status and code, FastAPI 422 arrays become
// INVALID_INPUT, anything else is a 500 INTERNAL_ERROR.
func asProductErr(err error) (*productErr, bool) {
	var pe *productErr
	var ae *apiError
	var de *detailError
	switch {
	case errors.As(err, &pe):
		return pe, true
	case errors.As(err, &ae):
		return &productErr{Status: ae.Status, Code: ae.Code, Message: ae.Message, Header: ae.Header}, true
	case errors.As(err, &de):
		msgs := make([]string, 0, len(de.Detail))
		for _, d := range de.Detail {
			msgs = append(msgs, fmt.Sprintf("%v: %s", d.Loc, d.Msg))
		}
		return invalidInput("%s", strings.Join(msgs, "; ")), true
	}
	return &productErr{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error"}, false
}

// handleProduct registers a product API route: every error is answered in
// the detail shape.
func (s *Server) handleProduct(method, path string, h handlerFunc) {
	s.routes = append(s.routes, route{Method: method, Path: path, Product: true})
	s.mux.HandleFunc(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
		r, release := s.withCharge(r)
		defer release()
		err := h(w, r)
		if err == nil {
			return
		}
		pe, known := asProductErr(err)
		if !known {
			s.log.Error("request failed", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
		}
		for k, vs := range pe.Header {
			w.Header()[k] = vs
		}
		body := productDetailBody{ErrorCode: pe.Code, Message: pe.Message, UnknownFields: pe.Unknown, MissingFields: pe.Missing}
		if body.UnknownFields == nil {
			body.UnknownFields = []string{}
		}
		if body.MissingFields == nil {
			body.MissingFields = []string{}
		}
		writeJSON(w, pe.Status, productDetail{Detail: body})
	})
}
