package sim

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/zkd-io/zkd/internal/zab"
)

// durableState is what a server's disk holds: what survives a crash.
type durableState struct {
	acceptedEpoch, currentEpoch int64
	log                         []zab.Committed
	// cur and lastSeen are the dynamic configuration files (written at once, as ZooKeeper
	// writes them).
	cur      simConfig
	lastSeen *simConfig
	// damaged is the damage mark (Options.Damage).
	damaged bool
}

// diskStep is a disk write the storage goroutine is running. Its effect on the server's
// memory happened when it started (the server counts on it); finish makes it durable.
type diskStep struct {
	what   string
	gen    int // the role that started it
	finish func()
}

func runningNames(steps []diskStep) []string {
	out := make([]string, len(steps))
	for i, st := range steps {
		out[i] = st.what
	}
	return out
}

// host carries out one server's Readys on the simulated disk, network and tree, for the
// server's zab.Applier. Its disk steps finish at once or, at random, at a later simulation
// step (finishDisk), always in the order they started.
type host struct {
	s  *Sim
	sv *server
}

// disk starts a disk step: mem updates the server's memory now, dur the disk when the step
// finishes. It reports whether the step finished at once.
func (h *host) disk(what string, mem, dur func()) bool {
	sv := h.sv
	mem()
	if len(sv.running) == 0 && h.s.rng.IntN(2) == 0 {
		dur()
		return true
	}
	sv.running = append(sv.running, diskStep{what: what, gen: sv.gen, finish: dur})
	h.s.trace("sid %d disk: %s running", sv.sid, what)
	return false
}

// finishDisk finishes the oldest running disk step and, if its role is still the server's,
// lets the Applier go on.
func (s *Sim) finishDisk(sv *server) {
	st := sv.running[0]
	sv.running[0] = diskStep{}
	sv.running = sv.running[1:]
	st.finish()
	s.trace("sid %d disk: %s done", sv.sid, st.what)
	s.disk.Later++
	if len(sv.running) == 0 {
		sv.checkDisk()
	}
	if st.gen != sv.gen {
		s.disk.Stale++
		return // its role ended: the Applier was Reset and must not hear of it
	}
	if !sv.apply.Busy() {
		panic("sim: a disk step of the current role finished while its Applier waits for none")
	}
	sv.apply.Done()
}

// checkDisk checks the simulated disk against the memory once no disk step runs: the disk
// holds the same epochs and a prefix of the log (the rest waits for an fsync). Otherwise
// the simulation itself is wrong.
func (sv *server) checkDisk() {
	d := sv.disk
	if d.acceptedEpoch != sv.acceptedEpoch || d.currentEpoch != sv.currentEpoch ||
		len(d.log) > len(sv.log) || !slices.EqualFunc(d.log, sv.log[:len(d.log)], func(a, b zab.Committed) bool { return a.Zxid == b.Zxid }) {
		panic(fmt.Sprintf("sim: server %d's disk (epochs %d/%d, log %v) is not its memory's (epochs %d/%d, log %v) with every disk step done",
			sv.sid, d.acceptedEpoch, d.currentEpoch, hexes(applyZxids(d.log)), sv.acceptedEpoch, sv.currentEpoch, hexes(applyZxids(sv.log))))
	}
}

func (h *host) PersistEpoch(accepted bool, epoch int64) bool {
	sv := h.sv
	if accepted {
		return h.disk("acceptedEpoch="+strconv.FormatInt(epoch, 10), func() { sv.acceptedEpoch = epoch }, func() { sv.disk.acceptedEpoch = epoch })
	}
	return h.disk("currentEpoch="+strconv.FormatInt(epoch, 10), func() { sv.currentEpoch = epoch }, func() { sv.disk.currentEpoch = epoch })
}

func (h *host) Truncate(zxid int64) bool {
	sv := h.sv
	return h.disk("truncate to "+zab.Hex(zxid), func() {
		sv.log = truncated(sv.log, zxid)
		sv.reload()
	}, func() {
		sv.disk.log = truncated(sv.disk.log, zxid)
	})
}

func truncated(log []zab.Committed, zxid int64) []zab.Committed {
	keep := 0
	for keep < len(log) && log[keep].Zxid <= zxid {
		keep++
	}
	return log[:keep:keep] // a later append must not write over the disk's copy
}

func (h *host) Snapshot() bool {
	sv := h.sv
	// The simulated snapshot is the tree itself; the log becomes its txns.
	var snap []zab.Committed
	for _, z := range sv.applied {
		snap = append(snap, zab.Committed{Zxid: z, Data: h.s.data(z)})
	}
	return h.disk("snapshot", func() {
		sv.log = slices.Clone(snap)
	}, func() {
		sv.disk.log = snap
	})
}

func (h *host) SyncAppend(txns []zab.Committed) bool {
	sv := h.sv
	var log []zab.Committed
	return h.disk("append+fsync "+strconv.Itoa(len(txns))+" txns", func() {
		sv.log = append(sv.log, txns...)
		log = slices.Clone(sv.log)
	}, func() {
		// An fsync makes the whole file durable, appends of earlier roles included.
		sv.disk.log = log
	})
}

func (h *host) Append(txns []zab.Committed) { h.sv.log = append(h.sv.log, txns...) }

func (h *host) Send(o zab.Out) {
	s, sv := h.s, h.sv
	if sv.role == leading {
		c := s.connOf(sv.sid, o.Conn)
		if c == nil {
			return
		}
		if o.SnapFollows {
			c.snapApplied = slices.Clone(sv.applied)
		}
		c.toLearner = append(c.toLearner, packet{p: o.Packet, snap: o.SnapFollows})
		return
	}
	if c := s.conns[sv.conn]; c != nil && c.learner == sv.sid {
		c.toLeader = append(c.toLeader, o.Packet)
	}
}

func (h *host) Close(id zab.ConnID) {
	if c := h.s.connOf(h.sv.sid, id); c != nil {
		h.s.breakConn(c)
	}
}

func (h *host) Apply(c zab.Committed) {
	s, sv := h.s, h.sv
	sv.applied = append(sv.applied, c.Zxid)
	n := len(sv.applied)
	if n > len(sv.log) || sv.log[n-1].Zxid != c.Zxid {
		panic(violation("server %d applied %s, which is not its log's next txn: tree %v, log %v",
			sv.sid, zab.Hex(c.Zxid), hexes(sv.applied), hexes(applyZxids(sv.log))))
	}
	if sv.role == leading {
		s.acked[c.Zxid] = true
		s.extendGlobal(sv.sid, sv.applied, false)
		return
	}
	if sv.serving && (n > len(s.global) || s.global[n-1] != c.Zxid) {
		s.checkPrefix(sv) // reports it
	}
}

func (h *host) Notify(r *zab.Ready) {
	s, sv := h.s, h.sv
	if r.Serving {
		if sv.role == leading {
			e := sv.leader.Epoch()
			if prev, ok := s.leaders[e]; ok && prev != sv.sid {
				panic(violation("two leaders established epoch %d: %d and %d", e, prev, sv.sid))
			}
			s.leaders[e] = sv.sid
			s.established++
			sv.serving = true
			sv.elect.UpdateElectionVote(e)
			s.trace("sid %d established epoch %d", sv.sid, e)
			// Everything it holds is now committed: it must extend what was committed
			// before, including every acknowledged write.
			s.extendGlobal(sv.sid, sv.applied, true)
			checkReplay(sv)
		} else {
			sv.serving = true
			sv.elect.UpdateElectionVote(sv.learner.NewEpoch())
			s.checkPrefix(sv)
			if sv.damaged && len(sv.running) == 0 {
				// Refilled: the sync's writes are durable, and the mark goes (at once here;
				// the server clears it on its storage goroutine after them).
				sv.damaged, sv.disk.damaged = false, false
				s.refilled++
				s.trace("sid %d refilled: voting again", sv.sid)
			}
		}
	}
	if r.Rolled != 0 {
		if sv.role == leading {
			// The leader of the epoch before moved to this one in place: no other server
			// may ever lead it.
			if prev, ok := s.leaders[r.Rolled]; ok && prev != sv.sid {
				panic(violation("leader %d rolled over into epoch %d, which %d leads", sv.sid, r.Rolled, prev))
			}
			s.leaders[r.Rolled] = sv.sid
			s.rollovers++
			s.trace("sid %d rolled over into epoch %d", sv.sid, r.Rolled)
		}
		sv.elect.UpdateElectionVote(r.Rolled)
	}
	for _, a := range r.LoadHistory {
		// The committed history on disk when it was elected, as the server's storage
		// goroutine reads its log.
		s.leaderReady(sv, sv.leader.HistoryLoaded(a.Conn, append([]zab.Committed(nil), sv.diskHistory...)))
	}
	if len(r.Configs) > 0 && s.opt.Reconfig && s.onConfigs(sv, r.Configs) && r.Err == nil {
		s.startLooking(sv, "changes proposed in reconfig")
		return
	}
	if r.Err != nil {
		s.startLooking(sv, r.Err.Error())
	}
}
