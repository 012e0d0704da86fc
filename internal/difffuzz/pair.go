package difffuzz

import (
	"context"
	"fmt"
	"sync"
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
	return Compare(p, ref, zkd), nil
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
