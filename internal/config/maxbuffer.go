package config

import (
	"fmt"
	"strconv"
)

// The large-replies extension's bound on what a connection may negotiate with setMaxBuffer
// (docs/beyond.md): a grant never exceeds it, so one client cannot make the server buffer
// replies of any size it likes.
const (
	MaxBufferLimitKey     = "zkd.maxBufferLimit"
	DefaultMaxBufferLimit = 64 << 20
)

// setMaxBufferLimit reads the bound, a positive byte count; the Config's zero is the default.
func (c *Config) setMaxBufferLimit(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return fmt.Errorf("%s: %q is not a byte count >= 1", MaxBufferLimitKey, v)
	}
	c.MaxBufferLimit = n
	return nil
}
