package jute

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

var flagRegenJava = flag.Bool("jute.regen-java", false,
	"rewrite testdata/java-strings.txt by running testdata/JavaStrings.java on ZooKeeper's jute jar")

// javaStringsFile holds, for each byte string of StringCorpus, what ZooKeeper's own jute
// (readString, then writeString) makes of it; internal/difffuzz plays the same strings on a
// live server.
const javaStringsFile = "testdata/java-strings.txt"

// stringCorpus is the byte strings TestJavaStrings checks: every kind of well-formed and
// malformed UTF-8 the JDK's decoder tells apart, then random bytes from a fixed seed.
func stringCorpus() [][]byte {
	h := func(s string) []byte {
		b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
		if err != nil {
			panic(err)
		}
		return b
	}
	var out [][]byte
	add := func(hexes ...string) {
		for _, s := range hexes {
			out = append(out, h(s))
		}
	}
	add("", "61", "2f667a2f616263", hex.EncodeToString([]byte(" !\"#$%&'()*+,-./0123456789:;<=>?@AZ[\\]^_`az{|}~\x7f\x00\x01\x1f")))
	// Well-formed: 2, 3 and 4 bytes, at the edges of each range.
	add("c280", "c3a9", "c39f", "dfbf", "e0a080", "e282ac", "e1 80 80", "ed9fbf", "ee8080", "efbfbd", "efbfbf",
		"efbbbf", "f0908080", "f09f9880", "f3bfbfbf", "f48fbfbf", "2f667a2ff09f9880", "c3a9e282acf09f9880")
	// Surrogates in 3-byte form: CESU-8 pairs, lone halves, pairs out of order.
	add("eda0bdedb880", "eda080", "edafbf", "edb080", "edbfbf", "eda0bd41", "edb880eda0bd", "eda0bdeda0bd",
		"2f667a2feda0bdedb880", "eda080edb080edb080")
	// Overlong forms and values above U+10FFFF.
	add("c080", "c0af", "c1bf", "e08080", "e080af", "e09fbf", "f0808080", "f08fbfbf", "f0808fbf",
		"f8888080 80", "fc8480808080", "f4908080", "f5808080", "f6808080", "f7bfbfbf", "f4bfbfbf")
	// Truncated sequences: at the end, before ASCII, before another lead byte, before '/'.
	for _, p := range []string{"c3", "df", "e2", "e282", "e0", "e0a0", "e080", "ed", "eda0", "edb0", "f0", "f09f",
		"f09f98", "f090", "f08f", "f0 80", "f4", "f48f", "f48fbf", "f490", "f4 90 80", "f5", "f580", "f58080", "f7bfbf"} {
		add(p, p+"41", p+"c3a9", p+"e282ac", p+"f09f9880", p+"2f", "41"+p, p+p)
	}
	// Stray continuation bytes, the bytes that never start a sequence, each lead byte alone.
	add("80", "bf", "8080", "61 80 62", "bfbfbf41", "c3a980", "e282ac80", "f09f988080")
	for b := 0x80; b <= 0xff; b++ {
		add(fmt.Sprintf("%02x", b), fmt.Sprintf("%02x80", b), fmt.Sprintf("%02x8080", b), fmt.Sprintf("%02x808080", b))
	}
	// Random bytes and random runs of sequence pieces, from a fixed seed.
	r := rand.New(rand.NewPCG(17, 3))
	pieces := []string{"41", "2f", "c3", "a9", "e2", "82", "ac", "ed", "a0", "bd", "b8", "80", "bf", "f0", "9f", "98",
		"f4", "90", "8f", "c0", "e0", "f5", "ff", "c3a9", "e282ac", "f09f9880", "eda0bd", "edb880"}
	for i := 0; i < 150; i++ {
		b := make([]byte, 1+r.IntN(12))
		for j := range b {
			b[j] = byte(r.IntN(256))
			if r.IntN(3) > 0 {
				b[j] |= 0x80
			}
		}
		out = append(out, b)
		var s string
		for n := 1 + r.IntN(8); n > 0; n-- {
			s += pieces[r.IntN(len(pieces))]
		}
		add(s)
	}
	return out
}

// readJavaStrings reads the golden file: each corpus string and ZooKeeper's answer to it.
func readJavaStrings(t testing.TB) (in, want [][]byte) {
	f, err := os.Open(javaStringsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		a, b, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("%s: bad line %q", javaStringsFile, sc.Text())
		}
		x, err1 := hex.DecodeString(strings.TrimPrefix(a, "-"))
		y, err2 := hex.DecodeString(strings.TrimPrefix(b, "-"))
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: bad line %q", javaStringsFile, sc.Text())
		}
		in, want = append(in, x), append(want, y)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return in, want
}

func regenJavaStrings(t *testing.T) {
	var stdin bytes.Buffer
	for _, b := range stringCorpus() {
		if len(b) == 0 {
			stdin.WriteString("-\n")
			continue
		}
		fmt.Fprintf(&stdin, "%x\n", b)
	}
	cmd := exec.Command("java", "-cp", "/usr/share/java/zookeeper-jute.jar", "testdata/JavaStrings.java")
	cmd.Stdin = &stdin
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running JavaStrings.java: %v", err)
	}
	if err := os.WriteFile(javaStringsFile, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestJavaStrings checks that every corpus string decodes and re-encodes to exactly the
// bytes ZooKeeper's jute gives, which pins both the JDK's replacement rules and the CESU-8
// writer.
func TestJavaStrings(t *testing.T) {
	if *flagRegenJava {
		regenJavaStrings(t)
	}
	in, want := readJavaStrings(t)
	corpus := stringCorpus()
	if len(in) != len(corpus) || len(in) < 300 {
		t.Fatalf("%s has %d strings, the corpus %d: regenerate it with -jute.regen-java", javaStringsFile, len(in), len(corpus))
	}
	for i := range in {
		if !bytes.Equal(in[i], corpus[i]) {
			t.Fatalf("%s line %d is %x, the corpus has %x: regenerate it with -jute.regen-java", javaStringsFile, i+1, in[i], corpus[i])
		}
		var e Encoder
		e.Int(int32(len(in[i])))
		e.Buf = append(e.Buf, in[i]...)
		d := NewDecoder(e.Buf)
		s := d.String()
		if d.Err() != nil || d.Remaining() != 0 {
			t.Errorf("%x: decode error %v, %d bytes left", in[i], d.Err(), d.Remaining())
			continue
		}
		var e2 Encoder
		e2.String(s)
		if got := e2.Buf[4:]; !bytes.Equal(got, want[i]) {
			t.Errorf("%x reads as %q, written back as %x; ZooKeeper's jute gives %x", in[i], s, got, want[i])
		}
	}
}

func TestJavaStringReplacements(t *testing.T) {
	const r = "\uFFFD"
	cases := []struct{ in, want string }{
		{"/fz/abc", "/fz/abc"},
		{"\xf0\x9f\x98\x80", "😀"},                    // 4-byte UTF-8 stays one character
		{"\xed\xa0\xbd\xed\xb8\x80", r + r},          // CESU-8: each surrogate is one replacement
		{"\xc3\x28", r + "("},                        // a bad continuation is read again
		{"\xc0\x80", r + r},                          // overlong 2-byte: lead and continuation apart
		{"\xe0\x80\x80", r + r + r},                  // overlong 3-byte
		{"\xe2\x82", r},                              // truncated at the end: one replacement
		{"\xe2\x82A", r + "A"},                       // truncated in the middle
		{"\xf0\x9f\x98", r},                          // truncated 4-byte at the end
		{"\xf0\x9f\x98A", r + "A"},                   // truncated 4-byte before ASCII
		{"\xf0\x9fA", r + "A"},                       //
		{"\xf4\x90\x80\x80", r + r + r + r},          // above U+10FFFF
		{"\xf5\x80\x80\x80", r + r + r + r},          //
		{"\xff", r},                                  //
		{"a\x80b", "a" + r + "b"},                    // stray continuation
		{"\xe2\x82\xac\xf0\x9f\x98", "€" + r},        //
		{"\xf0\x9f\x98\x80\xed\xa0", "😀" + r},        //
		{"\xf0\x90\x80\xc3\xa9", r + "é"},            // truncated before a 2-byte character
		{"\xf0\x80\x80\x80", r + r + r + r},          // overlong 4-byte
		{"\xed\x9f\xbf\xee\x80\x80", "\ud7ff\ue000"}, // around the surrogates
	}
	for _, c := range cases {
		if got := JavaString([]byte(c.in)); got != c.want {
			t.Errorf("JavaString(%x) = %+q, want %+q", c.in, got, c.want)
		}
	}
}

func TestEncodeStringCESU8(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"/fz/abc", "/fz/abc"},
		{"é€", "é€"},
		{"/fz/😀", "/fz/\xed\xa0\xbd\xed\xb8\x80"},
		{"\U00010000\U0010ffff", "\xed\xa0\x80\xed\xb0\x80\xed\xaf\xbf\xed\xbf\xbf"},
		{"0123456789😀abcdefgh", "0123456789\xed\xa0\xbd\xed\xb8\x80abcdefgh"},
		// Bytes that are not UTF-8 go out as they are.
		{"\xed\xa0\xbd\xed\xb8\x80", "\xed\xa0\xbd\xed\xb8\x80"},
		{"\xf0\x9f\x98", "\xf0\x9f\x98"},
		{"\xff\xfe😀", "\xff\xfe\xed\xa0\xbd\xed\xb8\x80"},
	}
	for _, c := range cases {
		var e Encoder
		e.String(c.in)
		var want Encoder
		want.Int(int32(len(c.want)))
		want.Buf = append(want.Buf, c.want...)
		if !bytes.Equal(e.Buf, want.Buf) {
			t.Errorf("String(%+q) wrote %x, want %x", c.in, e.Buf, want.Buf)
		}
	}
}

// javaRoundTrip is what a string reads as once Java's writer has written it: each character
// above U+FFFF goes out as two surrogates, which read back as one replacement each.
func javaRoundTrip(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > 0xffff {
			b.WriteString("\uFFFD\uFFFD")
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// javaRoundTripRecord applies javaRoundTrip to every settable string in v, so a fuzz target
// can compare a record decoded twice with the first decoding.
func javaRoundTripRecord(v any) { javaRoundTripValue(reflect.ValueOf(v)) }

func javaRoundTripValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			javaRoundTripValue(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			javaRoundTripValue(v.Field(i))
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			javaRoundTripValue(v.Index(i))
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(javaRoundTrip(v.String()))
		}
	}
}

// sameAfterJavaRoundTrip reports whether re, the encoding of a record decoded from b, is what
// a round trip through Java's jute could give: b itself when b has no surrogate encodings
// (0xed leads them), else bytes as long, as each 3-byte surrogate reads as the 3-byte U+FFFD.
func sameAfterJavaRoundTrip(re, b []byte) bool {
	if !bytes.Contains(b, []byte{0xed}) {
		return bytes.Equal(re, b)
	}
	return len(re) == len(b)
}

func FuzzJavaString(f *testing.F) {
	for _, b := range stringCorpus() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Encoder
		e.Int(int32(len(b)))
		e.Buf = append(e.Buf, b...)
		d := NewDecoder(e.Buf)
		s := d.String()
		if d.Err() != nil || d.Remaining() != 0 {
			t.Fatalf("%x: error %v, %d left", b, d.Err(), d.Remaining())
		}
		if !utf8.ValidString(s) {
			t.Fatalf("%x reads as invalid UTF-8 %x", b, s)
		}
		if utf8.Valid(b) && s != string(b) {
			t.Fatalf("valid %x reads as %x", b, s)
		}
		if n := utf8.RuneCountInString(s); n > len(b) {
			t.Fatalf("%x: %d characters from %d bytes", b, n, len(b))
		}
		if got := mayHaveSupplementary(b); got != hasByteAtLeast(b, 0xf0) {
			t.Fatalf("mayHaveSupplementary(%x) = %v", b, got)
		}
		// Any bytes, not only decoded strings, are written as the plain reference does.
		var raw Encoder
		raw.String(string(b))
		if want := cesu8Reference(string(b)); !bytes.Equal(raw.Buf[4:], want) || int(int32(len(want))) != int(NewDecoder(raw.Buf).Int()) {
			t.Fatalf("String(%x) wrote %x, want %x", b, raw.Buf, want)
		}
		// Written and read back, s loses only its characters above U+FFFF; a second round
		// trip changes nothing.
		var e2 Encoder
		e2.String(s)
		s2 := NewDecoder(e2.Buf).String()
		if want := javaRoundTrip(s); s2 != want {
			t.Fatalf("%x: %+q written as %x reads back as %+q, want %+q", b, s, e2.Buf, s2, want)
		}
		if !strings.ContainsFunc(s, func(r rune) bool { return r > 0xffff }) && string(e2.Buf[4:]) != s {
			t.Fatalf("%x: %+q, with no character above U+FFFF, is written as %x", b, s, e2.Buf)
		}
		var e3 Encoder
		e3.String(s2)
		if s3 := NewDecoder(e3.Buf).String(); s3 != s2 {
			t.Fatalf("%x: second round trip %+q, first %+q", b, s3, s2)
		}
	})
}

// cesu8Reference is stringToByteBuffer over the UTF-16 of s's valid characters, other bytes
// kept as they are, one rune at a time.
func cesu8Reference(s string) []byte {
	var out []byte
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r <= 0xffff {
			out = append(out, s[i:i+n]...)
		} else {
			hi, lo := utf16.EncodeRune(r) // by hand: utf8.AppendRune writes a surrogate as U+FFFD
			out = append(out, byte(0xe0|hi>>12), byte(0x80|(hi>>6)&0x3f), byte(0x80|hi&0x3f),
				byte(0xe0|lo>>12), byte(0x80|(lo>>6)&0x3f), byte(0x80|lo&0x3f))
		}
		i += n
	}
	return out
}

func hasByteAtLeast(b []byte, min byte) bool {
	for _, c := range b {
		if c >= min {
			return true
		}
	}
	return false
}
