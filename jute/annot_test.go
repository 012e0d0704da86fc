package jute

// Checks the "field = value" annotations of the golden captures against decoded records, so the
// golden tests prove more than "decode and encode are symmetric".

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// fieldAliases maps annotation field names to Go field names where they differ beyond case.
var fieldAliases = map[string][]string{
	"children":    {"Children", "Strings"},
	"ephemerals":  {"Strings"},
	"prefixpath":  {"Path"},
	"totalnumber": {"N"},
	"err":         {"Err", "N"},
	"hdr":         {"Ops", "Results"},
	"op":          {"Ops"},
	"res":         {"Results"},
}

var indexRE = regexp.MustCompile(`^(.*)\[(\d+)\]$`)

// resolveField walks name (like "acl[0].id.scheme") from v. It returns false when the path
// does not lead to a value (an unknown name, an index out of range, a nil interface).
func resolveField(v reflect.Value, name string) (reflect.Value, bool) {
	for _, seg := range strings.Split(name, ".") {
		if i := strings.IndexByte(seg, ' '); i >= 0 { // "timeOut (ms)"
			seg = seg[:i]
		}
		idx := -1
		if m := indexRE.FindStringSubmatch(seg); m != nil {
			seg = m[1]
			idx, _ = strconv.Atoi(m[2])
		}
		for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		f, ok := structField(v, seg)
		if !ok {
			return reflect.Value{}, false
		}
		v = f
		if idx >= 0 {
			if v.Kind() != reflect.Slice || idx >= v.Len() {
				return reflect.Value{}, false
			}
			v = v.Index(idx)
		}
	}
	return v, true
}

func structField(v reflect.Value, seg string) (reflect.Value, bool) {
	names := append([]string{seg}, fieldAliases[strings.ToLower(seg)]...)
	for _, n := range names {
		for i := 0; i < v.NumField(); i++ {
			if strings.EqualFold(v.Type().Field(i).Name, n) {
				return v.Field(i), true
			}
		}
	}
	// A multi op or result shows the body's fields directly under op[i] / res[i].
	if b := v.FieldByName("Body"); b.IsValid() && b.Kind() == reflect.Interface && !b.IsNil() {
		e := b.Elem()
		for e.Kind() == reflect.Pointer && !e.IsNil() {
			e = e.Elem()
		}
		if e.Kind() == reflect.Struct {
			return structField(e, seg)
		}
	}
	return reflect.Value{}, false
}

// checkAnnotation compares the annotated value text with v. It returns an error on mismatch
// and ok=false when the value text or v's kind is not one it knows how to compare.
func checkAnnotation(v reflect.Value, text string) (ok bool, err error) {
	text = strings.TrimSpace(text)
	switch v.Kind() {
	case reflect.Int32, reflect.Int64, reflect.Int:
		tok, _, _ := strings.Cut(text, " ")
		var want int64
		if strings.HasPrefix(tok, "0x") {
			u, perr := strconv.ParseUint(tok[2:], 16, 64)
			if perr != nil {
				return false, nil
			}
			want = int64(u)
		} else {
			n, perr := strconv.ParseInt(tok, 10, 64)
			if perr != nil {
				return false, nil
			}
			want = n
		}
		if v.Int() != want {
			return true, fmt.Errorf("decoded %d, annotated %q", v.Int(), text)
		}
		return true, nil
	case reflect.Uint8:
		n, perr := strconv.ParseUint(strings.Fields(text)[0], 0, 8)
		if perr != nil {
			return false, nil
		}
		if v.Uint() != n {
			return true, fmt.Errorf("decoded %d, annotated %q", v.Uint(), text)
		}
		return true, nil
	case reflect.Bool:
		tok, _, _ := strings.Cut(text, " ")
		if tok != "true" && tok != "false" {
			return false, nil
		}
		if v.Bool() != (tok == "true") {
			return true, fmt.Errorf("decoded %v, annotated %q", v.Bool(), text)
		}
		return true, nil
	case reflect.String:
		want, ok := quoted(text)
		if !ok {
			return false, nil
		}
		if v.String() != want {
			return true, fmt.Errorf("decoded %q, annotated %q", v.String(), text)
		}
		return true, nil
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Uint8 {
			return false, nil
		}
		want, ok := quoted(text)
		if !ok {
			b, herr := hex.DecodeString(text)
			if herr != nil {
				return false, nil
			}
			want = string(b)
		}
		if !bytes.Equal(v.Bytes(), []byte(want)) {
			return true, fmt.Errorf("decoded %q, annotated %q", v.Bytes(), text)
		}
		return true, nil
	}
	return false, nil
}

func quoted(text string) (string, bool) {
	if len(text) >= 2 && text[0] == '\'' && text[len(text)-1] == '\'' {
		return text[1 : len(text)-1], true
	}
	return "", false
}

// annotationRoots maps the first component of an annotated field name to the decoded value it
// refers to; the "" root is used for names without a prefix (ConnectRequest/Response).
type annotationRoots map[string]any

// checkAnnotations compares every resolvable annotation in lines with the decoded values. It
// returns how many annotations were compared and the names it could not resolve.
func checkAnnotations(lines map[string]string, roots annotationRoots) (checked int, unresolved []string, errs []error) {
	for name, value := range lines {
		if strings.HasSuffix(name, ".len") || strings.HasSuffix(name, ".count") ||
			strings.HasPrefix(name, "length prefix") || strings.HasPrefix(name, "checksum") ||
			strings.HasPrefix(name, "EOR marker") || strings.HasSuffix(name, "txn bytes length") {
			continue
		}
		root, rest, found := strings.Cut(name, ".")
		r, ok := roots[root]
		if !found || !ok {
			r, rest = roots[""], name
		}
		if r == nil {
			unresolved = append(unresolved, name)
			continue
		}
		v, ok := resolveField(reflect.ValueOf(r), rest)
		if !ok {
			unresolved = append(unresolved, name)
			continue
		}
		ok, err := checkAnnotation(v, value)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if !ok {
			unresolved = append(unresolved, name)
			continue
		}
		checked++
	}
	return checked, unresolved, errs
}
