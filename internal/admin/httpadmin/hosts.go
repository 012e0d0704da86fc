package httpadmin

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/zkd-io/zkd/internal/admin"
)

// hostCheck guards the AdminServer against DNS rebinding: a web page the operator's
// browser opens can have its own name resolve to 127.0.0.1 and then talk to a
// loopback-bound AdminServer as a same-origin page (the browser sends Host and Origin with
// the attacker's name, so comparing them proves nothing). A browser always sends the name
// it resolved, so a request naming anything but a loopback name or address, or a name the
// operator listed (zkd.admin.allowedHosts), did not come from a page of this server.
type hostCheck struct {
	on bool
	// anyIP accepts any IP literal: a page whose URL names an address has that address
	// as its origin, so it cannot be a rebinding page. Only for a server bound to a
	// non-loopback address (a loopback-bound one is reached at loopback addresses only).
	anyIP   bool
	allowed []string // lower case, no port
}

// newHostCheck builds the check for an AdminServer bound to bind (host:port; "" when
// the handler is served without a listener of its own). It is on when bind is a loopback
// address or name, or when names are listed.
func newHostCheck(bind string, names []string) hostCheck {
	c := hostCheck{}
	for _, n := range names {
		if n = normHost(n); n != "" {
			c.allowed = append(c.allowed, n)
		}
	}
	host, _, err := net.SplitHostPort(bind)
	loopback := err == nil && isLoopbackHost(normHost(host))
	c.on = loopback || len(c.allowed) > 0
	c.anyIP = !loopback
	return c
}

// normHost is a Host header's or a listed name's host, lower case, without port, brackets
// or a trailing dot.
func normHost(h string) string {
	h = strings.TrimSpace(h)
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// allows reports whether a request naming host (a Host header, or an Origin's host) may
// be served.
func (c hostCheck) allows(host string) bool {
	h := normHost(host)
	switch {
	case h == "":
		return false
	case isLoopbackHost(h), slices.Contains(c.allowed, h):
		return true
	}
	_, err := netip.ParseAddr(h)
	return c.anyIP && err == nil
}

// refuse answers 403 and returns true when r names a host the check does not allow, in its
// Host header or its Origin (a cross-origin request from a page elsewhere is refused too,
// whatever it asks).
func (c hostCheck) refuse(w http.ResponseWriter, r *http.Request) bool {
	if !c.on {
		return false
	}
	bad := ""
	if !c.allows(r.Host) {
		bad = "Host " + r.Host
	} else if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !c.allows(u.Host) {
			bad = "Origin " + o
		}
	}
	if bad == "" {
		return false
	}
	writeJSON(w, http.StatusForbidden, admin.Object{{Key: "error", Value: "request refused: " + bad +
		" is not a loopback name or address, nor a name zkd.admin.allowedHosts lists (DNS rebinding guard)"}})
	return true
}
