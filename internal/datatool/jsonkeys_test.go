package datatool

import (
	"bufio"
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

func TestLowerCamel(t *testing.T) {
	for in, want := range map[string]string{
		"Path": "path", "ACL": "acl", "ID": "id", "V0": "v0", "TTL": "ttl", "TimeOut": "timeOut",
		"ParentCVersion": "parentCVersion", "ACLVersion": "aclVersion", "Paths2Delete": "paths2Delete",
		"checksumOK": "checksumOK",
	} {
		if got := lowerCamel(in); got != want {
			t.Errorf("lowerCamel(%q) = %q, want %q", in, got, want)
		}
	}
}

var lowerCamelKey = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// checkKeys reports every key of a decoded JSON document that is not lowerCamel.
func checkKeys(t *testing.T, where string, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if !lowerCamelKey.MatchString(k) {
				t.Errorf("%s: key %q is not lowerCamel", where, k)
			}
			checkKeys(t, where+"."+k, x)
		}
	case []any:
		for _, x := range v {
			checkKeys(t, where+"[]", x)
		}
	}
}

// decodeLines parses every line of out as JSON, with encoding/json.
func decodeLines(t *testing.T, name string, out []byte) []map[string]any {
	t.Helper()
	var docs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var doc map[string]any
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			t.Fatalf("%s: line %q: %v", name, sc.Text(), err)
		}
		checkKeys(t, name, doc)
		docs = append(docs, doc)
	}
	return docs
}

// TestJSONKeysLowerCamel: every key of the log and snapshot dumps' --json output is
// lowerCamel, the records' fields included (they were Go's Path, ACL, ParentCVersion).
func TestJSONKeysLowerCamel(t *testing.T) {
	var multi, create bool
	for _, name := range []string{"log.1", "log.24", "log.3b", "log.49"} {
		var out bytes.Buffer
		if err := DumpLog(&out, filepath.Join("testdata", "zk38", name), Options{JSON: true}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, doc := range decodeLines(t, name, out.Bytes()) {
			txn, _ := doc["txn"].(map[string]any)
			switch doc["type"] {
			case "multi":
				subs, _ := txn["txns"].([]any)
				multi = multi || len(subs) > 0
			case "create":
				acl, _ := txn["acl"].([]any)
				if _, ok := txn["path"].(string); !ok || len(acl) == 0 || txn["parentCVersion"] == nil {
					t.Errorf("%s: create txn %v lacks path, acl or parentCVersion", name, txn)
				}
				create = true
			}
		}
	}
	if !multi || !create {
		t.Errorf("the logs had no multi (%v) or no create (%v) to check", multi, create)
	}
	for _, name := range []string{"snapshot.22.snappy", "snapshot.48"} {
		var out bytes.Buffer
		if err := DumpSnapshot(&out, filepath.Join("testdata", "zk38", name), Options{JSON: true, Data: true}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		docs := decodeLines(t, name, out.Bytes())
		node, _ := docs[0]["node"].(map[string]any)
		acl, _ := node["acl"].([]any)
		first, _ := acl[0].(map[string]any)
		id, _ := first["id"].(map[string]any)
		if node["path"] != "/" || first["perms"] != float64(jute.PermAll) || id["scheme"] != "world" || id["id"] != "anyone" {
			t.Errorf("%s: root node %v", name, node)
		}
	}
}
