package zk

// withFirstXID makes the session's first request use xid n (and count up from there), so a
// test reaches xids past 2^31 without sending 2^31 requests.
func withFirstXID(n int64) Option { return func(c *config) { c.firstXid = n } }
