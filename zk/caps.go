package zk

import (
	"context"
	"errors"

	"github.com/zkd-io/zkd/internal/ext"
)

// ErrUnsupported: the connected server does not enable the extension a call needs.
var ErrUnsupported = errors.New("zk: the server does not support this extension")

func (c *Conn) require(ctx context.Context, n ext.Name) error { return nil }
