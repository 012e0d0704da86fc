package config

import (
	"slices"
	"testing"
)

func TestReadOnlyModeKey(t *testing.T) {
	const base = "dataDir=/d\nclientPort=2181\n"
	if c := mustParse(t, base); c.ReadOnlyMode {
		t.Fatal("read-only mode on by default")
	}
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"readonlymode.enabled=true", true},
		{"readonlymode.enabled=TRUE", true},
		{"zookeeper.readonlymode.enabled=true", true},
		{"readonlymode.enabled=false", false},
		// Boolean.getBoolean: anything but "true" is false, not an error.
		{"readonlymode.enabled=yes", false},
	} {
		c := mustParse(t, base+tc.line+"\n")
		if c.ReadOnlyMode != tc.want || len(c.Unknown) != 0 {
			t.Errorf("%s: ReadOnlyMode = %v, Unknown = %v; want %v", tc.line, c.ReadOnlyMode, c.Unknown, tc.want)
		}
	}
	if c := mustParse(t, base+"readonlymode=true\n"); c.ReadOnlyMode || !slices.Contains(c.Unknown, "readonlymode") {
		t.Errorf("readonlymode: ReadOnlyMode = %v, Unknown = %v", c.ReadOnlyMode, c.Unknown)
	}
}
