package store

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// Address classes refused by the SSRF guard (ClassifyAddr's results).
const (
	AddrPublic      = ""
	AddrUnspecified = "unspecified"
	AddrLoopback    = "loopback"
	AddrPrivate     = "private"
	AddrLinkLocal   = "link-local"
	AddrMetadata    = "metadata"
	AddrMulticast   = "multicast"
	AddrCGNAT       = "cgnat"
	AddrReserved    = "reserved"
	AddrInvalid     = "invalid"
)

// Fixed prefixes and addresses of ClassifyAddr. Functions, not variables,
// to keep the package free of mutable globals.
func prefixCGNAT() netip.Prefix    { return netip.MustParsePrefix("100.64.0.0/10") }
func prefixThisNet() netip.Prefix  { return netip.MustParsePrefix("0.0.0.0/8") }
func prefixReserved() netip.Prefix { return netip.MustParsePrefix("240.0.0.0/4") }
func prefixNAT64() netip.Prefix    { return netip.MustParsePrefix("64:ff9b::/96") }
func prefixNAT64L() netip.Prefix   { return netip.MustParsePrefix("64:ff9b:1::/48") }
func prefix6to4() netip.Prefix     { return netip.MustParsePrefix("2002::/16") }
func addrMetaV4() netip.Addr       { return netip.AddrFrom4([4]byte{169, 254, 169, 254}) }
func addrMetaV6() netip.Addr       { return netip.MustParseAddr("fd00:ec2::254") }

// ClassifyAddr returns AddrPublic ("") for an address a server may fetch
// from, or the class that makes it forbidden: unspecified (0.0.0.0/8, ::),
// loopback (127/8, ::1), private (RFC 1918, fc00::/7), link-local
// (169.254/16, fe80::/10), metadata (169.254.169.254, fd00:ec2::254),
// multicast, CGNAT (100.64/10), reserved (240/4 including broadcast), or
// invalid. IPv4-mapped, NAT64 (64:ff9b::/96) and 6to4 (2002::/16) IPv6
// addresses are judged by the IPv4 address they carry.
func ClassifyAddr(ip netip.Addr) string {
	if !ip.IsValid() {
		return AddrInvalid
	}
	ip = ip.WithZone("").Unmap()
	if ip.Is6() {
		b := ip.As16()
		switch {
		case prefixNAT64().Contains(ip):
			return ClassifyAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		case prefixNAT64L().Contains(ip):
			// Local-use NAT64 is by definition not globally routable.
			return AddrPrivate
		case prefix6to4().Contains(ip):
			return ClassifyAddr(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
	}
	switch {
	case ip == addrMetaV4() || ip == addrMetaV6():
		return AddrMetadata
	case ip.IsUnspecified() || (ip.Is4() && prefixThisNet().Contains(ip)):
		return AddrUnspecified
	case ip.IsLoopback():
		return AddrLoopback
	case ip.IsPrivate():
		return AddrPrivate
	case ip.IsLinkLocalUnicast():
		return AddrLinkLocal
	case ip.IsMulticast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast():
		return AddrMulticast
	case ip.Is4() && prefixCGNAT().Contains(ip):
		return AddrCGNAT
	case ip.Is4() && prefixReserved().Contains(ip):
		return AddrReserved
	case ip.Is6() && !ip.IsGlobalUnicast():
		return AddrReserved
	}
	return AddrPublic
}

// AddressGuard refuses connections to non-public addresses (see
// ClassifyAddr) unless allow-listed. It checks the address actually
// connected to, at dial time, which also defeats DNS rebinding; use
// DialContext in an http.Transport (with Proxy nil). The zero value
// allows nothing but public addresses.
type AddressGuard struct {
	// AllowHosts lists exemptions: IP addresses ("127.0.0.1", "::1"),
	// CIDR prefixes ("10.1.0.0/16") or host names ("minio.internal",
	// matched case-insensitively against the dialled name, before
	// resolution).
	AllowHosts []string
}

// allowList is a parsed AllowHosts.
type allowList struct {
	prefixes []netip.Prefix
	hosts    []string
}

func (g *AddressGuard) parse() (allowList, error) {
	var a allowList
	for _, h := range g.AllowHosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if strings.Contains(h, "/") {
			p, err := netip.ParsePrefix(h)
			if err != nil {
				return allowList{}, fmt.Errorf("store: allow-list entry %q: %w", h, err)
			}
			a.prefixes = append(a.prefixes, p.Masked())
			continue
		}
		if ip, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
			ip = ip.WithZone("").Unmap()
			a.prefixes = append(a.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
			continue
		}
		a.hosts = append(a.hosts, strings.TrimSuffix(strings.ToLower(h), "."))
	}
	return a, nil
}

func (a allowList) allowsIP(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	for _, p := range a.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

func (a allowList) allowsHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, h := range a.hosts {
		if h == host {
			return true
		}
	}
	return false
}

// CheckIP returns nil when ip may be connected to, else an error wrapping
// ErrForbiddenAddress that names the class.
func (g *AddressGuard) CheckIP(ip netip.Addr) error {
	a, err := g.parse()
	if err != nil {
		return err
	}
	return a.checkIP(ip)
}

func (a allowList) checkIP(ip netip.Addr) error {
	class := ClassifyAddr(ip)
	if class == AddrPublic || a.allowsIP(ip) {
		return nil
	}
	return fmt.Errorf("store: address %s is %s: %w", ip.WithZone(""), class, ErrForbiddenAddress)
}

// checkLiteral refuses a URL host that is a literal forbidden IP before
// any connection is tried; names are left to the dial-time check.
func (a allowList) checkLiteral(host string) error {
	ip, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil || a.allowsHost(host) {
		return nil
	}
	return a.checkIP(ip)
}

// DialContext returns a dial function for http.Transport.DialContext that
// dials with d (a copy; its Control is replaced) and refuses, before
// connecting, every resolved address that is forbidden and not allowed.
// A dialled host name in AllowHosts skips the check. Errors wrap
// ErrForbiddenAddress; an invalid AllowHosts entry fails every dial.
func (g *AddressGuard) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	a, perr := g.parse()
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if perr != nil {
			return nil, perr
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("store: dial %s: %w", addr, err)
		}
		dd := *d
		if a.allowsHost(host) {
			dd.Control = nil
		} else {
			dd.Control = func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return fmt.Errorf("store: dial %s: %w", address, ErrForbiddenAddress)
				}
				return a.checkIP(ap.Addr())
			}
		}
		dd.ControlContext = nil
		return dd.DialContext(ctx, network, addr)
	}
}
