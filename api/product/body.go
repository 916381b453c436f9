// Parsing of product job and estimate request bodies.

package product

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"github.com/vfxrender/vfx/api"
	"strings"
	"unicode/utf8"

	"github.com/vfxrender/vfx/internal/trunc"
)

// productBody is a parsed product job request (or estimate request).
type productBody struct {
	ModelID        string
	IdempotencyKey string
	Inputs         json.RawMessage
	MaxCredits     *int64
	CallbackURL    string
	hash           string
}

// parseProductBody parses and checks the top-level fields of a product
// request. allowed lists the fields of the route; required those it needs.
func parseProductBody(body []byte, product string, allowed, required []string) (productBody, error) {
	var pb productBody
	fields, err := api.DecodeObject(body)
	if err != nil {
		return pb, err
	}
	var unknown, missing []string
	for name := range fields {
		if !contains(allowed, name) {
			unknown = append(unknown, name)
		}
	}
	for _, name := range required {
		if v, ok := fields[name]; !ok || string(v) == "null" {
			missing = append(missing, name)
		}
	}
	if len(unknown) > 0 || len(missing) > 0 {
		sortStrings(unknown)
		e := api.InvalidInput("request body: unknown fields [%s], missing fields [%s]", strings.Join(unknown, ", "), strings.Join(missing, ", "))
		e.Unknown, e.Missing = unknown, missing
		return pb, e
	}
	str := func(name string) (string, bool, error) {
		raw, ok := fields[name]
		if !ok || string(raw) == "null" {
			return "", false, nil
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", false, api.InvalidInput("%s must be a string", name)
		}
		return v, true, nil
	}
	if bu, ok, err := str("billing_unit"); err != nil {
		return pb, err
	} else if ok {
		switch bu {
		case "credits":
		case "usd":
			return pb, api.NewError(api.CodeUnsupportedBillingUnit, "billing_unit usd is not supported by product endpoints; omit it or use credits")
		default:
			return pb, api.InvalidInput("billing_unit %q: want credits", trunc.String(bu, 40))
		}
	}
	if pb.ModelID, _, err = str("model_id"); err != nil {
		return pb, err
	}
	if n := utf8.RuneCountInString(pb.ModelID); n < 1 || n > 256 {
		return pb, api.InvalidInput("model_id must be 1 to 256 characters")
	}
	if contains(allowed, "idempotency_key") {
		if pb.IdempotencyKey, _, err = str("idempotency_key"); err != nil {
			return pb, err
		}
		if n := utf8.RuneCountInString(pb.IdempotencyKey); n < 1 || n > api.MaxIdempotencyKeyLen {
			return pb, api.InvalidInput("idempotency_key must be 1 to %d characters", api.MaxIdempotencyKeyLen)
		}
	}
	if cb, ok, err := str("callback_url"); err != nil {
		return pb, err
	} else if ok {
		pb.CallbackURL = cb
	}
	if raw, ok := fields["max_credits"]; ok && string(raw) != "null" {
		n, err := api.ParseJSONInt(raw)
		if err != nil || n < 0 {
			return pb, api.InvalidInput("max_credits must be an integer of at least 0, or null")
		}
		pb.MaxCredits = &n
	}
	pb.Inputs = fields["inputs"]
	if len(pb.Inputs) == 0 || string(pb.Inputs) == "null" {
		pb.Inputs = json.RawMessage(`{}`)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(pb.Inputs), []byte("{")) {
		return pb, api.InvalidInput("inputs must be an object")
	}
	// The hash covers the request as the job sees it: canonical JSON of
	// every field but the idempotency key, with billing_unit defaulted
	// (the bytes json.Marshal gives, written field by field so that an
	// inline data: URI is hashed in place).
	h := sha256.New()
	h.Write([]byte(`{"product":`))
	api.WriteString(h, product)
	h.Write([]byte(`,"model_id":`))
	api.WriteString(h, pb.ModelID)
	h.Write([]byte(`,"inputs":`))
	if err := api.WriteCanonical(h, bytes.TrimSpace(pb.Inputs)); err != nil {
		return pb, api.InvalidInput("inputs: %v", err)
	}
	h.Write([]byte(`,"max_credits":`))
	if pb.MaxCredits != nil {
		api.WriteInt(h, *pb.MaxCredits)
	} else {
		h.Write([]byte("null"))
	}
	h.Write([]byte(`,"callback_url":`))
	api.WriteString(h, pb.CallbackURL)
	h.Write([]byte{'}'})
	sum := h.Sum(nil)
	pb.hash = hex.EncodeToString(sum[:])
	return pb, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

var (
	jobFields      = []string{"model_id", "idempotency_key", "inputs", "billing_unit", "max_credits", "callback_url"}
	jobRequired    = []string{"model_id", "idempotency_key"}
	estimateFields = []string{"model_id", "inputs", "billing_unit", "max_credits"}
)
