package ext

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		has  Name
		not  Name
	}{
		{in: "", want: "", not: Capabilities},
		{in: "none", want: "", not: KeeperOps},
		{in: "all", want: "all", has: SessionGrace},
		{in: " Keeper-Ops , capabilities", want: "capabilities,keeper-ops", has: KeeperOps, not: PagedList},
		{in: "paged-list,paged-list", want: "paged-list", has: PagedList, not: Wide},
	} {
		s, err := Parse(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if got := s.String(); got != tc.want {
			t.Errorf("Parse(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if tc.has != "" && !s.Has(tc.has) {
			t.Errorf("Parse(%q) lacks %s", tc.in, tc.has)
		}
		if tc.not != "" && s.Has(tc.not) {
			t.Errorf("Parse(%q) has %s", tc.in, tc.not)
		}
	}
	if _, err := Parse("capabilities,warp-drive"); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown name: err = %v, want ErrUnknown", err)
	}
	if !(Set{}).Empty() || Of(Wide).Empty() {
		t.Error("Empty wrong")
	}
}
