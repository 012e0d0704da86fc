package config

import (
	"fmt"
	"strconv"
)

// The watch-resume extension's change history (docs/beyond.md): how many changes, and how
// many bytes of them, each server keeps for addWatchSince. A resume from before what is kept
// gets a typed error instead of a silent gap.
const (
	WatchHistoryMaxChangesKey = "zkd.watchHistory.maxChanges"
	WatchHistoryMaxBytesKey   = "zkd.watchHistory.maxBytes"

	DefaultWatchHistoryMaxChanges = 100000
	DefaultWatchHistoryMaxBytes   = 16 << 20
)

// setWatchHistory reads one of the two bounds, a positive count; the Config's zero is the
// default. Nothing is kept without the extension, so there is no "keep none" value.
func (c *Config) setWatchHistory(key, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return fmt.Errorf("%s: %q is not a count >= 1", key, v)
	}
	if key == WatchHistoryMaxChangesKey {
		c.WatchHistoryMaxChanges = n
	} else {
		c.WatchHistoryMaxBytes = n
	}
	return nil
}
