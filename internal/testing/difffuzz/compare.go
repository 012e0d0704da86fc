package difffuzz

import (
	"fmt"
	"strings"
)

// Accepted is a step whose difference a row of the version table explains.
type Accepted struct {
	Step int
	Row  string
}

// Divergence is a step whose outcomes differ with no row to explain it.
type Divergence struct {
	Step     int
	Ref, Zkd Outcome
}

// Verdict is the comparison of one program's transcripts.
type Verdict struct {
	Accepted   []Accepted
	Divergence *Divergence
	// Compared is how many steps were compared: after an accepted difference that leaves
	// the servers' states apart, the rest of the program is not.
	Compared int
}

// Compare compares the transcripts of p on the reference server and on zkd step by step.
func Compare(p *Program, ref, zkd *Transcript) Verdict {
	var v Verdict
	n := min(len(ref.Outcomes), len(zkd.Outcomes), len(p.Steps))
	for i := 0; i < n; i++ {
		v.Compared = i + 1
		r, z := ref.Outcomes[i], zkd.Outcomes[i]
		if r.String() == z.String() {
			continue
		}
		row, stop := explain(p, i, r, z)
		if row == "" {
			v.Divergence = &Divergence{Step: i, Ref: r, Zkd: z}
			return v
		}
		v.Accepted = append(v.Accepted, Accepted{Step: i, Row: row})
		if stop {
			return v
		}
	}
	if len(ref.Outcomes) != len(zkd.Outcomes) && v.Divergence == nil {
		v.Divergence = &Divergence{Step: n}
	}
	return v
}

// Report renders a divergence for people.
func (d *Divergence) Report(p *Program) string {
	var b strings.Builder
	if d.Step < len(p.Steps) {
		st := p.Steps[d.Step]
		fmt.Fprintf(&b, "step %d: %s\n", d.Step+1, st.line())
	}
	fmt.Fprintf(&b, "--- zookeeper\n%s\n+++ zkd\n%s", indent(d.Ref.String()), indent(d.Zkd.String()))
	return b.String()
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }
