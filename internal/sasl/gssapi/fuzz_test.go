package gssapi

import (
	"testing"
	"time"
)

// FuzzServerFirstStep: any initial token is refused or accepted without a panic, and never
// completes the exchange on its own.
func FuzzServerFirstStep(f *testing.F) {
	kt := memKeytab(f, testService, "service-password", 1)
	now := time.Now()
	f.Add(forgeAPReq(f, kt, 1, now.Add(-time.Minute), now.Add(24*time.Hour), false).token)
	f.Add(forgeAPReq(f, kt, 1, now.Add(-time.Minute), now.Add(24*time.Hour), true).token)
	f.Add([]byte{0x60, 0x00})
	f.Add([]byte{0x60, 0x84, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := NewServer(ServerConfig{Keytab: kt})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = s.Step(b)
		if s.Complete() {
			t.Fatal("one token completed the exchange")
		}
	})
}

// FuzzParseToken: the framing decoder never panics, and what it accepts re-frames to the
// same bytes.
func FuzzParseToken(f *testing.F) {
	f.Add(frameToken(tokAPReq, []byte("x")))
	f.Add(frameToken(tokAPRep, make([]byte, 300)))
	f.Add([]byte{0x60, 0x81, 0x05})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, msg, err := parseToken(b)
		if err != nil {
			return
		}
		if got := frameToken(id, msg); string(got) != string(b) {
			t.Fatalf("re-framed %x, was %x", got, b)
		}
	})
}

// FuzzUnwrap: Wrap tokens from the client are checked without a panic; anything accepted
// carries a checksum made with the context's key.
func FuzzUnwrap(f *testing.F) {
	kt := memKeytab(f, testService, "service-password", 1)
	now := time.Now()
	fg := forgeAPReq(f, kt, 1, now.Add(-time.Minute), now.Add(24*time.Hour), false)
	key := wrapKey{key: fg.auth.SubKey}
	f.Add(fg.finalToken(f, layerNone, ""))
	f.Add(fg.finalToken(f, layerNone, "user@EXAMPLE.COM"))
	f.Add([]byte{0x05, 0x04, 0x02, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		payload, seq, err := unwrap(b, key, false)
		if err != nil {
			return
		}
		again, err := wrap(payload, key, false, seq)
		if err != nil {
			t.Fatal(err)
		}
		if p2, _, err := unwrap(again, key, false); err != nil || string(p2) != string(payload) {
			t.Fatalf("re-wrapped payload does not unwrap: %v", err)
		}
		_, _ = parseLayerMessage(payload)
	})
}

// FuzzClientSteps: the client's decoders of the server's AP-REP and offer never panic.
func FuzzClientSteps(f *testing.F) {
	kt := memKeytab(f, testService, "service-password", 1)
	now := time.Now()
	fg := forgeAPReq(f, kt, 1, now.Add(-time.Minute), now.Add(24*time.Hour), true)
	rep, err := makeAPRep(fg.auth, fg.session, 7)
	if err != nil {
		f.Fatal(err)
	}
	offer, err := wrap(layerMessage{layers: layerNone, maxSize: maxBufferSize}.marshal(), wrapKey{key: fg.auth.SubKey}, true, 7)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(frameToken(tokAPRep, rep), offer)
	f.Fuzz(func(t *testing.T, repTok, offerTok []byte) {
		c := &Client{stage: clientSentReq, auth: fg.auth, session: fg.session, key: wrapKey{key: fg.auth.SubKey}}
		if _, err := c.checkRep(repTok); err != nil {
			return
		}
		_, _ = c.answerOffer(offerTok)
	})
}
