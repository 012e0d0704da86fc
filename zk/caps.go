package zk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/jute"
)

// ErrUnsupported: the connected server does not enable the extension a call needs. Calls to
// an extension return an *UnsupportedError wrapping it, before anything of the call is sent.
var ErrUnsupported = errors.New("zk: the server does not support this extension")

// UnsupportedError names the extension the connected server lacks.
type UnsupportedError struct {
	Extension ext.Name
	Server    string // the address of the server asked
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("zk: server %s does not enable the %s extension", e.Server, e.Extension)
}

// Unwrap makes errors.Is(err, ErrUnsupported) hold.
func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }

// Capabilities is what a server says of itself in zkd's capability node
// (ext.CapabilitiesNode). The zero value is Apache ZooKeeper's answer, or zkd's with every
// extension off: no extensions.
type Capabilities struct {
	// Version is the document's version (1); 0 when the server has no capability node.
	Version int `json:"version"`
	// Server is the server's name and build ("zkd 1.2.0"), "" when it has no node.
	Server string `json:"server"`
	// Extensions are the extensions the server enables, in ext.All's order. Names this
	// client does not know are kept: a newer server may list more.
	Extensions []ext.Name `json:"extensions"`
}

// Has reports whether the server enables extension n.
func (c Capabilities) Has(n ext.Name) bool { return slices.Contains(c.Extensions, n) }

// capsCache holds the capabilities of the connection they were read on: a reconnect, to
// another server or the same one restarted with other settings, reads them again.
type capsCache struct {
	mu   sync.Mutex
	w    *wire
	caps Capabilities
}

// Capabilities returns the connected server's capabilities: the capability node's document,
// read once per connection (outside the chroot) and then answered from memory. A server
// without the node (Apache ZooKeeper, or zkd with no extension on) has none.
func (c *Conn) Capabilities(ctx context.Context) (Capabilities, error) {
	c.mu.Lock()
	w := c.w
	c.mu.Unlock()
	c.caps.mu.Lock()
	if w != nil && c.caps.w == w {
		caps := c.caps.caps
		c.caps.mu.Unlock()
		return caps, nil
	}
	c.caps.mu.Unlock()

	s := readSpec(jute.OpGetData, ext.CapabilitiesNode, kindData, false)
	s.raw = true
	resp, err := do[jute.GetDataResponse](ctx, c, s)
	var caps Capabilities
	switch {
	case errors.Is(err, ErrNoNode):
	case err != nil:
		return Capabilities{}, fmt.Errorf("zk: capabilities: %w", err)
	default:
		caps = parseCapabilities(resp.Data)
	}
	c.mu.Lock()
	after := c.w
	c.mu.Unlock()
	// Cached only when the reply came on the connection that was up before asking: a
	// reconnect in between may have answered from another server.
	if after != nil && after == w {
		c.caps.mu.Lock()
		c.caps.w, c.caps.caps = w, caps
		c.caps.mu.Unlock()
	}
	return caps, nil
}

// require fails with an *UnsupportedError when the connected server does not enable
// extension n. Every call to an extension calls it first, so a server without the extension
// is sent nothing of the call (at most the one read of the capability node per connection).
func (c *Conn) require(ctx context.Context, n ext.Name) error {
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return err
	}
	if !caps.Has(n) {
		return &UnsupportedError{Extension: n, Server: c.Server()}
	}
	return nil
}

// parseCapabilities reads the capability node's data. A node that is not the document (a
// user's own znode on a ZooKeeper server) says nothing of the server: no extensions.
func parseCapabilities(data []byte) Capabilities {
	var caps Capabilities
	if json.Unmarshal(data, &caps) != nil || caps.Version < 1 {
		return Capabilities{}
	}
	return caps
}
