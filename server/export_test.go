package server

// SetZxidCounterStart makes a new leader's zxid counter start at n instead of 0, to reach
// the counter's rollover in a test.
func SetZxidCounterStart(c *Config, n int64) { c.zxidCounterStart = n }
