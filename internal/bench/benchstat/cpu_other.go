//go:build !unix

package benchstat

import "time"

// SelfCPU is not measured off Unix.
func SelfCPU() time.Duration { return 0 }
