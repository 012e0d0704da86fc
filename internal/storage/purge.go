package storage

import (
	"errors"
	"fmt"
)

// ErrPurgeRetain reports a retain count below ZooKeeper's minimum of 3.
var ErrPurgeRetain = errors.New("storage: purge must retain at least 3 snapshots")

// Purge is ZooKeeper's autopurge (PurgeTxnLog.purge). It keeps the newest retain snapshots
// that pass the quick validity check, and the log files needed to replay from the oldest
// of them: the newest log starting at or before its zxid and every later log. Snapshots and
// logs older than that are removed. snapDir and logDir are version-2 directories (often the
// same). With no valid snapshot nothing is removed.
//
// Removals are not fsynced: a removed file that reappears after a crash is harmless.
func Purge(fsys FS, snapDir, logDir string, retain int) error {
	if retain < 3 {
		return fmt.Errorf("%w (got %d)", ErrPurgeRetain, retain)
	}
	snaps, err := FindSnapshots(fsys, snapDir)
	if err != nil {
		return err
	}
	var kept []SnapshotFile
	for _, sf := range snaps {
		if len(kept) == retain {
			break
		}
		ok, err := ValidSnapshot(fsys, snapDir, sf)
		if err != nil {
			return fmt.Errorf("storage: purge: %w", err)
		}
		if ok {
			kept = append(kept, sf)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	least := kept[len(kept)-1].Zxid

	logs, err := listLogs(fsys, logDir)
	if err != nil {
		return err
	}
	// The newest log starting at or before least holds the txns right after it.
	needed := -1
	for i, lf := range logs {
		if lf.zxid <= least {
			needed = i
		}
	}
	var errs []error
	for i, lf := range logs {
		if i < needed {
			if err := fsys.Remove(join(logDir, lf.name)); err != nil && !isNotExist(err) {
				errs = append(errs, err)
			}
		}
	}
	for _, sf := range snaps {
		if sf.Zxid < least {
			if err := fsys.Remove(join(snapDir, sf.Name)); err != nil && !isNotExist(err) {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("storage: purge: %w", errors.Join(errs...))
	}
	return nil
}
