package election

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"
)

// be builds big-endian bytes from ints (4 bytes) and int64s (8 bytes).
func be(fields ...any) []byte {
	var b []byte
	for _, f := range fields {
		switch v := f.(type) {
		case int32:
			b = binary.BigEndian.AppendUint32(b, uint32(v))
		case int64:
			b = binary.BigEndian.AppendUint64(b, uint64(v))
		case string:
			b = append(b, v...)
		default:
			panic("be: unsupported field")
		}
	}
	return b
}

func TestMarshalLayout(t *testing.T) {
	n := Notification{State: Following, Leader: 3, Zxid: 0x100000005, ElectionEpoch: 7, PeerEpoch: 1, Version: 0,
		Config: []byte("server.1=127.0.0.1:2888:3888:participant\nversion=0")}
	got := n.Marshal()
	want := be(int32(1), int64(3), int64(0x100000005), int64(7), int64(1), int32(2), int32(len(n.Config)), string(n.Config))
	if !bytes.Equal(got, want) {
		t.Fatalf("Marshal =\n%s\nwant\n%s", hex.Dump(got), hex.Dump(want))
	}
	if len(got) != 44+len(n.Config) {
		t.Errorf("len = %d, want 44+%d", len(got), len(n.Config))
	}
	empty := (&Notification{State: Looking, Leader: 1}).Marshal()
	if len(empty) != 44 || binary.BigEndian.Uint32(empty[40:]) != 0 {
		t.Errorf("empty config: % x", empty)
	}
}

func TestUnmarshalForms(t *testing.T) {
	cfg := "server.1=a:1:2:participant\nversion=100000000"
	tests := []struct {
		name string
		b    []byte
		want Notification
	}{
		{"28-byte legacy, peerEpoch from zxid", be(int32(0), int64(2), int64(0x300000009), int64(4)),
			Notification{State: Looking, Leader: 2, Zxid: 0x300000009, ElectionEpoch: 4, PeerEpoch: 3, From: 9}},
		{"28-byte legacy, negative zxid shifts arithmetically", be(int32(1), int64(2), int64(-1), int64(4)),
			Notification{State: Following, Leader: 2, Zxid: -1, ElectionEpoch: 4, PeerEpoch: -1, From: 9}},
		{"40-byte, version not read", be(int32(2), int64(5), int64(6), int64(7), int64(8), int32(1)),
			Notification{State: Leading, Leader: 5, Zxid: 6, ElectionEpoch: 7, PeerEpoch: 8, From: 9}},
		{"version 1 without config", be(int32(0), int64(5), int64(6), int64(7), int64(8), int32(1), int32(0)),
			Notification{State: Looking, Leader: 5, Zxid: 6, ElectionEpoch: 7, PeerEpoch: 8, Version: 1, From: 9}},
		{"version 1 ignores what follows", be(int32(0), int64(5), int64(6), int64(7), int64(8), int32(1), int32(-5)),
			Notification{State: Looking, Leader: 5, Zxid: 6, ElectionEpoch: 7, PeerEpoch: 8, Version: 1, From: 9}},
		{"version 2 with config", be(int32(3), int64(5), int64(6), int64(7), int64(8), int32(2), int32(len(cfg)), cfg),
			Notification{State: Observing, Leader: 5, Zxid: 6, ElectionEpoch: 7, PeerEpoch: 8, Version: 2, Config: []byte(cfg), From: 9}},
		{"version 2, trailing bytes ignored", be(int32(0), int64(5), int64(6), int64(7), int64(8), int32(2), int32(2), "abcd"),
			Notification{State: Looking, Leader: 5, Zxid: 6, ElectionEpoch: 7, PeerEpoch: 8, Version: 2, Config: []byte("ab"), From: 9}},
		{"unknown state is kept for Receive to ignore", be(int32(7), int64(5), int64(6), int64(7), int64(8), int32(0)),
			Notification{State: 7, Leader: 5, Zxid: 6, ElectionEpoch: 7, PeerEpoch: 8, From: 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Unmarshal(9, tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if !notificationEqual(got, tt.want) {
				t.Errorf("Unmarshal = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestUnmarshalMalformed(t *testing.T) {
	hdr := be(int32(0), int64(5), int64(6), int64(7), int64(8))
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"27 bytes", make([]byte, 27)},
		{"29 bytes", make([]byte, 29)},
		{"35 bytes", make([]byte, 35)},
		{"39 bytes", make([]byte, 39)},
		{"36 bytes (peerEpoch, no version)", hdr},
		{"version 2 without config length", append(append([]byte(nil), hdr...), be(int32(2), "xy")...)},
		{"negative config length", append(append([]byte(nil), hdr...), be(int32(2), int32(-1))...)},
		{"config longer than message", append(append([]byte(nil), hdr...), be(int32(2), int32(5), "abcd")...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Unmarshal(1, tt.b); !errors.Is(err, ErrMalformed) {
				t.Errorf("Unmarshal(% x) error = %v, want ErrMalformed", tt.b, err)
			}
		})
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	n := Notification{State: Leading, Leader: -9, Zxid: 1 << 40, ElectionEpoch: 3, PeerEpoch: 256, Version: CurrentVersion, Config: []byte("x"), From: 4}
	got, err := Unmarshal(4, n.Marshal())
	if err != nil || !notificationEqual(got, n) {
		t.Fatalf("round trip = %+v, %v; want %+v", got, err, n)
	}
}

func notificationEqual(a, b Notification) bool {
	return a.State == b.State && a.Leader == b.Leader && a.Zxid == b.Zxid && a.ElectionEpoch == b.ElectionEpoch &&
		a.PeerEpoch == b.PeerEpoch && a.Version == b.Version && bytes.Equal(a.Config, b.Config) && a.From == b.From
}

func FuzzUnmarshal(f *testing.F) {
	f.Add(be(int32(0), int64(2), int64(0x300000009), int64(4)))
	f.Add(be(int32(2), int64(5), int64(6), int64(7), int64(8), int32(1)))
	f.Add(be(int32(3), int64(5), int64(6), int64(7), int64(8), int32(2), int32(3), "abc"))
	f.Add(be(int32(0), int64(5), int64(6), int64(7), int64(8), int32(2), int32(-1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := Unmarshal(1, b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if len(b) < 28 {
			t.Fatalf("accepted %d bytes", len(b))
		}
		// Re-encoding must reproduce the fields that were on the wire.
		m := n.Marshal()
		if !bytes.Equal(m[:28], b[:28]) {
			t.Fatalf("header changed:\n% x\n% x", m[:28], b[:28])
		}
		if len(b) != 28 && !bytes.Equal(m[28:36], b[28:36]) {
			t.Fatalf("peerEpoch changed")
		}
		if n.Version > 1 && !bytes.Equal(m[40:], b[40:44+len(n.Config)]) {
			t.Fatalf("config changed")
		}
		if n.Version <= 1 && len(n.Config) != 0 {
			t.Fatalf("config read for version %d", n.Version)
		}
	})
}
