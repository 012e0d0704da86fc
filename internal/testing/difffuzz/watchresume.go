package difffuzz

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zkd-io/zkd/jute"
)

// A resumed watch misses no event: resumeStep opens two sessions of their own, wsN and
// wrN, which no other step touches, and gives both the same persistent watch, wsN with
// ZooKeeper's addWatch and wrN with addWatchSince (no replay). Then, among the program's
// other steps, wrN's connection is dropped and later replaced, and wrN resumes its watch
// from the last zxid it had seen (ResumeSince). wsN stayed connected throughout: the
// events wrN received, live, replayed and live again, must be wsN's, in the same order.

// resumeStep appends the pattern, with the program's own steps inside it.
func (g *gen) resumeStep() {
	g.watchers++
	stay, res := fmt.Sprintf("ws%d", g.watchers), fmt.Sprintf("wr%d", g.watchers)
	path := Root
	if g.pct(40) {
		path = g.readPath()
	}
	mode := int32(g.r.IntN(2))
	g.add(Step{Sess: stay, Kind: Open})
	g.add(Step{Sess: res, Kind: Open})
	g.request(stay, jute.OpAddWatch, &jute.AddWatchRequest{Path: path, Mode: mode})
	g.request(res, jute.OpAddWatchSince, &jute.AddWatchSinceRequest{Path: path, Mode: mode, SinceZxid: -1})
	for range g.r.IntN(3) {
		g.step() // live events for both
	}
	g.add(Step{Sess: res, Kind: Drop})
	for range 1 + g.r.IntN(6) {
		g.step() // changes made while wrN is away
	}
	g.add(Step{Sess: res, Kind: Reconnect})
	g.request(res, jute.OpAddWatchSince, &jute.AddWatchSinceRequest{Path: path, Mode: mode, SinceZxid: ResumeSince})
}

// resumeInvariant checks the pattern whose resume is step i: when the watches were set,
// the session came back and the resume was accepted, the events of wrN from its
// registration on equal wsN's. A pattern cut short, or whose steps a later generator step
// damaged, is not checked.
func resumeInvariant(p *Program, tr *Transcript, i int) []string {
	resume, ok := watchSince(p, i)
	if !ok || resume.SinceZxid != ResumeSince || !replied(tr, i, jute.OK) {
		return nil
	}
	res := p.Steps[i].Sess
	// The registration: wrN's addWatchSince with no replay, right after wsN's addWatch.
	j := -1
	for k := i - 1; k >= 1; k-- {
		if st := &p.Steps[k]; st.Sess == res && st.Kind == Open {
			break // a session of the same name opened after the registration
		}
		reg, ok := watchSince(p, k)
		if ok && p.Steps[k].Sess == res && reg.SinceZxid == -1 && reg.Path == resume.Path && reg.Mode == resume.Mode {
			j = k
			break
		}
	}
	if j < 0 {
		return nil
	}
	st := &p.Steps[j-1]
	rec, ok := st.Decode()
	add, isAdd := rec.(*jute.AddWatchRequest)
	if !ok || st.Kind != Request || st.Op != jute.OpAddWatch || !isAdd || add.Path != resume.Path || add.Mode != resume.Mode ||
		!replied(tr, j-1, jute.OK) || !replied(tr, j, jute.OK) {
		return nil
	}
	for k := j + 1; k < i; k++ {
		if p.Steps[k].Sess == res && p.Steps[k].Kind == Reconnect &&
			(k >= len(tr.Outcomes) || !strings.Contains(strings.Join(tr.Outcomes[k].Lines, "\n"), res+": reconnected")) {
			return nil // the session did not come back: nothing to resume
		}
	}
	stay := st.Sess
	want, got := sessionEvents(tr, stay, j), sessionEvents(tr, res, j)
	if slices.Equal(want, got) {
		return nil
	}
	return []string{fmt.Sprintf("step %d (%s): the resumed watch of %s received %q; %s, connected throughout, received %q",
		i+1, p.Steps[i].line(), res, got, stay, want)}
}

// watchSince decodes step i as an addWatchSince request.
func watchSince(p *Program, i int) (*jute.AddWatchSinceRequest, bool) {
	if i < 0 || i >= len(p.Steps) || p.Steps[i].Op != jute.OpAddWatchSince {
		return nil, false
	}
	rec, ok := p.Steps[i].Decode()
	req, isReq := rec.(*jute.AddWatchSinceRequest)
	return req, ok && isReq
}

// replied reports whether step i was answered with err.
func replied(tr *Transcript, i int, err jute.Code) bool {
	return i < len(tr.Outcomes) && tr.Outcomes[i].Replied && tr.Outcomes[i].Err == err
}

// sessionEvents are the events session name received from step from on, without its name.
func sessionEvents(tr *Transcript, name string, from int) []string {
	var evs []string
	for _, o := range tr.Outcomes[min(from, len(tr.Outcomes)):] {
		for _, l := range o.Lines {
			if ev, ok := strings.CutPrefix(l, name+" event: "); ok {
				evs = append(evs, ev)
			}
		}
	}
	return evs
}
