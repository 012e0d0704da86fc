package datatool

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"unicode"
)

// camelJSON returns v for encoding/json with every struct field named in lowerCamel case, the
// convention of the rest of the --json output and of the jute field names ZooKeeper's own
// records use (path, acl, parentCVersion, timeOut): the jute package's Go structs carry no
// json tags, and their Go names (Path, ACL) must not leak into the output. Everything else
// encodes as encoding/json would encode it ([]byte as base64, nil slices as null, values with
// their own JSON or text form as that).
func camelJSON(v any) any {
	if v == nil {
		return nil
	}
	return camelValue(reflect.ValueOf(v))
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

func camelValue(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	if t := v.Type(); t.Implements(jsonMarshaler) || t.Implements(textMarshaler) {
		return v.Interface()
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return camelValue(v.Elem())
	case reflect.Struct:
		m := make(map[string]any, v.NumField())
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			m[lowerCamel(f.Name)] = camelValue(v.Field(i))
		}
		return m
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return base64.StdEncoding.EncodeToString(v.Bytes())
		}
		fallthrough
	case reflect.Array:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = camelValue(v.Index(i))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		m := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			m[it.Key().String()] = camelValue(it.Value())
		}
		return m
	}
	return v.Interface()
}

// lowerCamel turns a Go field name into lowerCamel case, initialisms included: Path → path,
// ACL → acl, ID → id, V0 → v0, ParentCVersion → parentCVersion, ACLVersion → aclVersion.
func lowerCamel(name string) string {
	r := []rune(name)
	n := 0 // the leading run of capitals (digits ride along)
	for n < len(r) && (unicode.IsUpper(r[n]) || unicode.IsDigit(r[n])) {
		n++
	}
	switch {
	case n == len(r): // all capitals: an initialism
		return strings.ToLower(name)
	case n > 1: // an initialism before a word: its last capital starts the word
		n--
	}
	return strings.ToLower(string(r[:n])) + string(r[n:])
}
