package server

import (
	"sort"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/watch"
)

// AdminBatch is adminBatch, for tests outside the package.
const AdminBatch = adminBatch

// AdminSteps reports how many core steps the batched four-letter words have taken in this
// process and the most items one of them copied.
func AdminSteps() (steps, maxItems int64) {
	return adminSteps.steps.Load(), adminSteps.maxItems.Load()
}

// LegacyFourLetter answers wchs, wchc, wchp or dump the way zkd did before the answers were
// built off the core: everything in one core step, from the watch manager's own grouping
// methods. Tests compare it with the real answer, byte for byte, on a quiet server.
func (s *Server) LegacyFourLetter(cmd string) string {
	var text string
	s.query(func() {
		switch cmd {
		case "wchs":
			sum := s.watches.Summary(watch.DataTable)
			text = admin.Wchs(sum.Watchers, sum.Paths, sum.Watches)
		case "wchc":
			by := map[int64][]string{}
			for w, paths := range s.watches.ByWatcher(watch.DataTable) {
				if c := s.watchConns[w]; c != nil && c.sess != nil {
					by[c.sess.id] = append(by[c.sess.id], paths...)
				}
			}
			text = admin.Wchc(by)
		case "wchp":
			by := map[string][]int64{}
			for p, ws := range s.watches.ByPath(watch.DataTable) {
				for _, w := range ws {
					if c := s.watchConns[w]; c != nil && c.sess != nil {
						by[p] = append(by[p], c.sess.id)
					}
				}
			}
			text = admin.Wchp(by)
		case "dump":
			var d admin.DumpInfo
			for _, b := range s.tracker.Buckets() {
				d.SessionSets = append(d.SessionSets, admin.SessionSet{Expire: time.UnixMilli(b.Deadline), Sessions: b.IDs})
			}
			owners := s.tree.EphemeralSessions()
			ids := make([]int64, 0, len(owners))
			for id := range owners {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			for _, id := range ids {
				d.Ephemerals = append(d.Ephemerals, admin.SessionEphemerals{SessionID: id, Paths: s.tree.Ephemerals(id)})
			}
			text = admin.Dump(d)
		}
	})
	return text
}
