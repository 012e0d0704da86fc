package config

import (
	"reflect"
	"strings"
	"testing"
)

// The expected values were produced by java.util.Properties.load (OpenJDK 17) on the same bytes,
// followed by the String.trim that ZooKeeper applies to keys and values.
func TestParsePropertiesMatchesJava(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"separators and comments", "a=1\n  b = 2  \n#c=3\n!d=4\ne:5\nf 6\ng\t=\t7\nh\n",
			map[string]string{"a": "1", "b": "2", "e": "5", "f": "6", "g": "7", "h": ""}},
		{"continuations", "k1=foo\\\n    bar\nk2=x\\\\\nk3=y\\\\\\\n  z\n",
			map[string]string{"k1": "foobar", "k2": `x\`, "k3": `y\z`}},
		{"comment is not continued", "# comment \\\nk=v\n", map[string]string{"k": "v"}},
		{"empty line ends continuation", "k=a\\\n\nm=b\n", map[string]string{"k": "a", "m": "b"}},
		{"escapes", "k\\ ey=v\\tx\\u0041\\q\nk2=\\uD83D\\uDE00\n",
			map[string]string{"k ey": "v\txAq", "k2": "\U0001F600"}},
		{"bytes are ISO-8859-1", "k=\xc3\xa9\n", map[string]string{"k": "\u00c3\u00a9"}},
		{"line ends", "a=1\r\nb=2\rc=3", map[string]string{"a": "1", "b": "2", "c": "3"}},
		{"one separator only", "k==v\nk2=:v\nk3 : = v\n",
			map[string]string{"k": "=v", "k2": ":v", "k3": "= v"}},
		{"backslash at end of file", "k=v\\", map[string]string{"k": "v"}},
		{"escaped separators in keys", "k\\=x=y\nk2\\:z:w\n", map[string]string{"k=x": "y", "k2:z": "w"}},
		{"blank lines", "   \n\t\f\nk=v\n", map[string]string{"k": "v"}},
		{"continued line may start with #", "k=v\\\n# not a comment\n", map[string]string{"k": "v# not a comment"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props, err := parseProperties([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, p := range props {
				got[p.Key] = p.Value
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParsePropertiesLineNumbers(t *testing.T) {
	props, err := parseProperties([]byte("# c\n\na=1\\\n  2\nb=3\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []property{{"a", "12", 3}, {"b", "3", 5}}
	if !reflect.DeepEqual(props, want) {
		t.Errorf("got %+v, want %+v", props, want)
	}
}

func TestParsePropertiesMalformedUnicode(t *testing.T) {
	for _, in := range []string{"k=\\u00e\n", "k=\\u00zz\n", "\\u12=v"} {
		_, err := parseProperties([]byte(in))
		if err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("%q: got %v, want a malformed-escape error", in, err)
		}
	}
}
