package server

import "sync/atomic"

type atomicInt64 = atomic.Int64
