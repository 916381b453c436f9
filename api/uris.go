package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vfxrender/vfx/internal/trunc"
	"github.com/vfxrender/vfx/store"
)

// MaxSeed is the largest seed (2^32-1).
const MaxSeed = math.MaxUint32

// HostResolver looks up the addresses of a host name; net.Resolver
// satisfies it.
type HostResolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

type netResolver struct{}

func (netResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, network, host)
}

// DecodeObject parses body as one JSON object into its raw fields (slices
// of body), or answers 422 like FastAPI; a repeated key is refused.
func DecodeObject(body []byte) (map[string]json.RawMessage, error) {
	ms, err := ParseObject(body)
	if err != nil {
		return nil, err
	}
	fields := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		fields[m.Key] = m.Raw
	}
	return fields, nil
}

func jsonSyntaxDetail(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return Unprocessable([]any{"body", int(se.Offset)}, "JSON decode error: "+se.Error(), "json_invalid")
	}
	return Unprocessable([]any{"body", 0}, "JSON decode error: "+err.Error(), "json_invalid")
}

// ParseJSONInt reads a JSON number that is an integer (1e3 and 3.0 count,
// 3.5 does not). Values beyond int64 saturate, so range checks still fail
// them with the field's 400 code.
func ParseJSONInt(raw json.RawMessage) (int64, error) {
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return 0, err
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, errors.New("not a number")
	}
	if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, err
	}
	if f != math.Trunc(f) {
		return 0, errors.New("not an integer")
	}
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64, nil
	case f <= math.MinInt64:
		return math.MinInt64, nil
	}
	return int64(f), nil
}

// CheckInputURI parses an input URI and, for https://, resolves its host
// and refuses non-public addresses (unless private networks are allowed).
func (s *Server) CheckInputURI(ctx context.Context, name, uri string) error {
	u, err := s.resolver.Parse(uri)
	if err != nil {
		if errors.Is(err, store.ErrTooLarge) {
			return BadRequest(CodeSourceTooLarge, "%s: inline data over the limit of %d decoded bytes (%s)", name,
				s.resolver.MaxDataBytesOrDefault(), strings.TrimPrefix(err.Error(), "store: "))
		}
		return BadRequest(CodeInvalidURI, "%s: %s", name, strings.TrimPrefix(err.Error(), "store: "))
	}
	if u.Kind == store.KindJobInput {
		// Only the API writes these references, never a client.
		return BadRequest(CodeInvalidURI, "%s: want vfx://uploads/{id}/{filename}, https:// or data:", name)
	}
	if u.Kind == store.KindHTTP && !s.Cfg.AllowPrivateNetworks {
		if err := s.checkHost(ctx, u.URL.Hostname()); err != nil {
			if errors.Is(err, store.ErrForbiddenAddress) {
				return BadRequest(CodeInvalidURI, "%s: %v", name, err)
			}
			return BadRequest(CodeSourceUnreachable, "%s: %v", name, err)
		}
	}
	return nil
}

// checkHost resolves host and fails when any address is forbidden by the
// SSRF guard (errors wrap store.ErrForbiddenAddress) or none is found.
func (s *Server) checkHost(ctx context.Context, host string) error {
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return s.guard.CheckIP(ip.Unmap())
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := s.Cfg.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("host %q does not resolve", trunc.String(host, 80))
	}
	if len(addrs) == 0 {
		return fmt.Errorf("host %q has no address", trunc.String(host, 80))
	}
	for _, a := range addrs {
		if err := s.guard.CheckIP(a.Unmap()); err != nil {
			return fmt.Errorf("host %q: %w", trunc.String(host, 80), err)
		}
	}
	return nil
}

// CheckCallbackURL applies the callback_url rules: an absolute https://
// URL (http:// when allowed) of at most 2048 bytes, without user info,
// whose host resolves only to public addresses unless private networks
// are allowed.
func (s *Server) CheckCallbackURL(ctx context.Context, raw string) error {
	if raw == "" || len(raw) > MaxCallbackURLLen {
		return BadRequest(CodeInvalidCallbackURL, "callback_url must be 1 to %d characters", MaxCallbackURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return BadRequest(CodeInvalidCallbackURL, "callback_url is not an absolute URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && s.Cfg.AllowHTTPCallbacks:
	default:
		return BadRequest(CodeInvalidCallbackURL, "callback_url must use https://")
	}
	if u.User != nil {
		return BadRequest(CodeInvalidCallbackURL, "callback_url must not carry user info")
	}
	if !s.Cfg.AllowPrivateNetworks {
		if err := s.checkHost(ctx, u.Hostname()); err != nil {
			return BadRequest(CodeInvalidCallbackURL, "callback_url: %v", err)
		}
	}
	return nil
}

// CheckPromptChars refuses control characters in a prompt: C0 controls
// other than tab, line feed and carriage return, DEL and the C1 controls
// (U+0080 to U+009F). (Invalid UTF-8 is caught on the JSON text, before
// decoding replaces it.)
func CheckPromptChars(p string) error {
	for i, r := range p {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return fmt.Errorf("prompt has control character U+%04X at byte %d (tab, line feed and carriage return are allowed)", r, i)
		}
	}
	return nil
}
