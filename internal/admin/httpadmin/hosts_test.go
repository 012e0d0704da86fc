package httpadmin

import "testing"

// TestAdminHostCheckBinding: the check is on for a loopback binding (by address or by
// name) or a listed name; a server bound elsewhere without names has none, and with names
// it also takes IP literals (a page at an address cannot be a rebinding page).
func TestAdminHostCheckBinding(t *testing.T) {
	for _, tc := range []struct {
		bind   string
		names  []string
		host   string
		on, ok bool
	}{
		{"127.0.0.1:8080", nil, "evil.example:8080", true, false},
		{"127.0.0.1:8080", nil, "localhost:8080", true, true},
		{"127.0.0.1:8080", nil, "192.168.1.5:8080", true, false},
		{"[::1]:8080", nil, "[::1]:8080", true, true},
		{"[::1]:8080", nil, "evil.example", true, false},
		{"localhost:8080", nil, "evil.example", true, false},
		{"0.0.0.0:8080", nil, "evil.example:8080", false, true},
		{"10.0.0.5:8080", nil, "anything", false, true},
		{"0.0.0.0:8080", []string{"zk1.example.com"}, "zk1.example.com:8080", true, true},
		{"0.0.0.0:8080", []string{"zk1.example.com"}, "evil.example:8080", true, false},
		{"0.0.0.0:8080", []string{"zk1.example.com"}, "10.0.0.5:8080", true, true},
		{"0.0.0.0:8080", []string{"zk1.example.com"}, "localhost", true, true},
		{"", nil, "evil.example", false, true},
		{"127.0.0.1:8080", []string{"zk1.example.com"}, "10.0.0.5:8080", true, false},
	} {
		c := newHostCheck(tc.bind, tc.names)
		on, ok := c.on, !c.on || c.allows(tc.host)
		if on != tc.on || ok != tc.ok {
			t.Errorf("bound to %s, names %v, Host %s: check on %v, allowed %v; want %v, %v", tc.bind, tc.names, tc.host, on, ok, tc.on, tc.ok)
		}
	}
}
