package difffuzz

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/zkd-io/zkd/jute"
)

// Pair is the reference server and zkd, configured alike.
type Pair struct {
	Ref, Zkd Target
}

// Run plays p on both servers at once and compares the transcripts.
func (pr Pair) Run(ctx context.Context, p *Program) (Verdict, error) {
	var wg sync.WaitGroup
	var ref, zkd *Transcript
	var refErr, zkdErr error
	wg.Add(2)
	go func() { defer wg.Done(); ref, refErr = Run(ctx, pr.Ref, p) }()
	go func() { defer wg.Done(); zkd, zkdErr = Run(ctx, pr.Zkd, p) }()
	wg.Wait()
	if refErr != nil || zkdErr != nil {
		// A failure to clean up on one server only is itself a difference worth a look, but
		// not one a step can show: report it as an error with both sides.
		return Verdict{}, fmt.Errorf("zookeeper: %v; zkd: %v", refErr, zkdErr)
	}
	if err := pr.alignRoots(ctx); err != nil {
		return Verdict{}, err
	}
	return Compare(p, ref, zkd), nil
}

// alignRoots brings the child versions of the root and of /zookeeper/quota back in line
// after a program whose accepted differences made one server create and delete more nodes
// there than the other: later programs read their Stats. Both servers hold only their
// built-in children there by now, so each gap is even; a node created and deleted closes two
// of it.
func (pr Pair) alignRoots(ctx context.Context) error {
	var ctl [2]*session
	for i, tgt := range []Target{pr.Ref, pr.Zkd} {
		r := &runner{ctx: ctx, tgt: tgt}
		s, err := r.control()
		if err != nil {
			return err
		}
		defer s.close()
		ctl[i] = s
	}
	for _, parent := range []string{"/", quotaRoot} {
		var cv [2]int32
		for i, s := range ctl {
			h, b, err := s.call(1, jute.OpExists, jute.Marshal(&jute.PathWatchRequest{Path: parent}))
			if err != nil || h.Err != 0 {
				return fmt.Errorf("exists %s: %v %v", parent, err, h.Err)
			}
			var st jute.StatResponse
			if err := jute.Unmarshal(b, &st); err != nil {
				return err
			}
			cv[i] = st.Stat.Cversion
		}
		lo := 0
		if cv[1] < cv[0] {
			lo = 1
		}
		gap := cv[1-lo] - cv[lo]
		if gap%2 != 0 || gap > 100000 {
			return fmt.Errorf("%s: cversions %d and %d: cannot align", parent, cv[0], cv[1])
		}
		pad := strings.TrimSuffix(parent, "/") + "/fz-align"
		for ; gap > 0; gap -= 2 {
			h, _, err := ctl[lo].call(2, jute.OpCreate, jute.Marshal(&jute.CreateRequest{Path: pad, ACL: jute.OpenACLUnsafe}))
			if err == nil && h.Err == 0 {
				h, _, err = ctl[lo].call(3, jute.OpDelete, jute.Marshal(&jute.PathVersionRequest{Path: pad, Version: -1}))
			}
			if err != nil || h.Err != 0 {
				return fmt.Errorf("aligning %s: %v %v", parent, err, h.Err)
			}
		}
	}
	return nil
}

// Shrink returns a smaller program that still diverges (any divergence no row explains),
// removing steps while that holds, in at most budget runs of the pair. p must diverge at
// step d.
func (pr Pair) Shrink(ctx context.Context, p *Program, d int, budget int) (*Program, error) {
	best := p.Clone()
	best.Steps = best.Steps[:d+1]
	runs := 0
	diverges := func(c *Program) (bool, error) {
		runs++
		v, err := pr.Run(ctx, c)
		if err != nil {
			return false, err
		}
		if v.Divergence == nil {
			return false, nil
		}
		// Drop what follows the divergence too.
		c.Steps = c.Steps[:v.Divergence.Step+1]
		return true, nil
	}
	// Delta debugging over steps: remove chunks, halving their size down to one step.
	for chunk := max(len(best.Steps)/2, 1); chunk >= 1 && runs < budget; chunk /= 2 {
		for start := 0; start < len(best.Steps) && runs < budget; {
			c := best.Clone()
			end := min(start+chunk, len(c.Steps))
			c.Steps = append(c.Steps[:start], c.Steps[end:]...)
			if len(c.Steps) == 0 {
				start = end
				continue
			}
			ok, err := diverges(c)
			if err != nil {
				return best, err
			}
			if ok {
				best = c
				continue // the same start now holds the next chunk
			}
			start = end
		}
		if chunk == 1 {
			break
		}
	}
	// Fewer sessions where the program lets go of them.
	for i := len(best.Sessions) - 1; i >= 0 && runs < budget; i-- {
		name := best.Sessions[i]
		used := false
		for _, st := range best.Steps {
			used = used || st.Sess == name
		}
		if used {
			continue
		}
		c := best.Clone()
		c.Sessions = append(c.Sessions[:i], c.Sessions[i+1:]...)
		if ok, err := diverges(c); err == nil && ok {
			best = c
		}
	}
	return best, nil
}
