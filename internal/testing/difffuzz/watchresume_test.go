package difffuzz

import (
	"context"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

// resumeProgram is resumeStep's pattern by hand: a create and a delete under the watched
// node while wr1 is away, one more change after it resumes.
func resumeProgram() *Program {
	p := &Program{Sessions: []string{"a"}}
	req := func(sess string, op jute.OpCode, rec jute.Record) {
		p.Steps = append(p.Steps, Step{Sess: sess, Kind: Request, Op: op, Body: jute.Marshal(rec)})
	}
	kind := func(sess string, k Kind) { p.Steps = append(p.Steps, Step{Sess: sess, Kind: k}) }
	req("a", jute.OpCreate, &jute.CreateRequest{Path: Root, ACL: jute.OpenACLUnsafe})
	kind("ws1", Open)
	kind("wr1", Open)
	req("ws1", jute.OpAddWatch, &jute.AddWatchRequest{Path: Root, Mode: jute.AddWatchPersistentRecursive})
	req("wr1", jute.OpAddWatchSince, &jute.AddWatchSinceRequest{Path: Root, Mode: jute.AddWatchPersistentRecursive, SinceZxid: -1})
	req("a", jute.OpCreate, &jute.CreateRequest{Path: Root + "/live", ACL: jute.OpenACLUnsafe})
	kind("wr1", Drop)
	req("a", jute.OpCreate, &jute.CreateRequest{Path: Root + "/x", ACL: jute.OpenACLUnsafe})
	req("a", jute.OpDelete, &jute.PathVersionRequest{Path: Root + "/x", Version: -1})
	req("a", jute.OpSetData, &jute.SetDataRequest{Path: Root + "/live", Data: []byte("d"), Version: -1})
	kind("wr1", Reconnect)
	req("wr1", jute.OpAddWatchSince, &jute.AddWatchSinceRequest{Path: Root, Mode: jute.AddWatchPersistentRecursive, SinceZxid: ResumeSince})
	req("a", jute.OpDelete, &jute.PathVersionRequest{Path: Root + "/live", Version: -1})
	return p
}

// TestResumeInvariantCatches: on zkd the resumed watch gets the three changes made while
// its session was away (replayed) and the ones before and after (live), as the watch that
// stayed connected did; when one replayed event is lost (the runner's LoseResumedEvent
// fault) the invariant says so.
func TestResumeInvariantCatches(t *testing.T) {
	ctx := context.Background()
	tgt := startKeeperZkd(t)
	p := resumeProgram()
	tr, err := Run(ctx, tgt, p)
	if err != nil {
		t.Fatal(err)
	}
	if bad := KeeperInvariants(p, tr); len(bad) != 0 {
		t.Fatalf("zkd breaks the resume invariant:\n%s", strings.Join(bad, "\n"))
	}
	resumed := len(p.Steps) - 2
	replayed := sessionEvents(&Transcript{Outcomes: tr.Outcomes[resumed : resumed+1]}, "wr1", 0)
	if len(replayed) != 3 || len(sessionEvents(tr, "ws1", 0)) != 5 {
		t.Fatalf("the resume replayed %q; the program is not testing what it means to:\n%s", replayed, render(p, tr))
	}

	tgt.LoseResumedEvent = true
	tr, err = Run(ctx, tgt, p)
	if err != nil {
		t.Fatal(err)
	}
	if bad := KeeperInvariants(p, tr); len(bad) != 1 {
		t.Fatalf("a lost replayed event: %d failures, want 1:\n%s", len(bad), render(p, tr))
	} else {
		t.Log(bad[0])
	}
}

// render is a transcript for a failure message.
func render(p *Program, tr *Transcript) string {
	var b strings.Builder
	for i, o := range tr.Outcomes {
		b.WriteString(p.Steps[i].line() + "\n    " + strings.Join(o.Lines, "\n    ") + "\n")
	}
	return b.String()
}
