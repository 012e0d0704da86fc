package gssapi

import (
	"bytes"
	"crypto/hmac"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/types"
)

// Token ids of the Kerberos messages inside an InitialContextToken.
var (
	tokAPReq    = [2]byte{0x01, 0x00}
	tokAPRep    = [2]byte{0x02, 0x00}
	tokKRBError = [2]byte{0x03, 0x00}
)

// krb5OID is the DER encoding (tag, length, value) of OID 1.2.840.113554.1.2.2.
var krb5OID = []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}

// Wrap token flags.
const (
	flagSentByAcceptor = 0x01
	flagSealed         = 0x02
	flagAcceptorSubkey = 0x04
)

// wrapHeaderLen is the length of a Wrap token's header.
const wrapHeaderLen = 16

// Security layers of RFC 4752.
const (
	layerNone            = 0x01
	layerIntegrity       = 0x02
	layerConfidentiality = 0x04
)

// maxBufferSize is the largest message the server says it accepts: Java's default
// (javax.security.sasl.maxbuffer).
const maxBufferSize = 65536

var errTruncated = errors.New("gssapi: token truncated")

// frameToken wraps a Kerberos message in an InitialContextToken.
func frameToken(tokID [2]byte, msg []byte) []byte {
	inner := make([]byte, 0, len(krb5OID)+2+len(msg))
	inner = append(inner, krb5OID...)
	inner = append(inner, tokID[:]...)
	inner = append(inner, msg...)
	out := []byte{0x60}
	out = appendDERLength(out, len(inner))
	return append(out, inner...)
}

func appendDERLength(b []byte, n int) []byte {
	if n < 0x80 {
		return append(b, byte(n))
	}
	var l [8]byte
	binary.BigEndian.PutUint64(l[:], uint64(n))
	i := 0
	for i < 7 && l[i] == 0 {
		i++
	}
	b = append(b, 0x80|byte(8-i))
	return append(b, l[i:]...)
}

// parseToken takes an InitialContextToken apart: the token id and the Kerberos message. The
// outer length must cover exactly the rest of b.
func parseToken(b []byte) (tokID [2]byte, msg []byte, err error) {
	if len(b) < 2 {
		return tokID, nil, errTruncated
	}
	if b[0] != 0x60 {
		return tokID, nil, fmt.Errorf("gssapi: token does not start with the GSS-API tag 0x60 (got %#02x)", b[0])
	}
	n, rest, err := parseDERLength(b[1:])
	if err != nil {
		return tokID, nil, err
	}
	if n != len(rest) {
		return tokID, nil, fmt.Errorf("gssapi: token length %d, but %d bytes follow", n, len(rest))
	}
	if !bytes.HasPrefix(rest, krb5OID) {
		return tokID, nil, errors.New("gssapi: token's mechanism is not Kerberos V5 (1.2.840.113554.1.2.2)")
	}
	rest = rest[len(krb5OID):]
	if len(rest) < 2 {
		return tokID, nil, errTruncated
	}
	copy(tokID[:], rest)
	return tokID, rest[2:], nil
}

// parseDERLength reads a definite DER length (at most 4 length bytes).
func parseDERLength(b []byte) (int, []byte, error) {
	if len(b) == 0 {
		return 0, nil, errTruncated
	}
	if b[0] < 0x80 {
		return int(b[0]), b[1:], nil
	}
	k := int(b[0] & 0x7f)
	if k == 0 || k > 4 {
		return 0, nil, fmt.Errorf("gssapi: unsupported DER length form %#02x", b[0])
	}
	if len(b) < 1+k {
		return 0, nil, errTruncated
	}
	n := 0
	for _, c := range b[1 : 1+k] {
		n = n<<8 | int(c)
	}
	if n < 0x80 || n > 1<<30 {
		return 0, nil, fmt.Errorf("gssapi: bad DER length %d", n)
	}
	return n, b[1+k:], nil
}

// wrapKey is the key and flags Wrap tokens of one context use.
type wrapKey struct {
	key            types.EncryptionKey
	acceptorSubkey bool // key is the acceptor's subkey: tokens carry flagAcceptorSubkey
}

// wrap makes a Wrap token (not sealed) carrying payload.
func wrap(payload []byte, k wrapKey, fromAcceptor bool, seq uint64) ([]byte, error) {
	et, err := crypto.GetEtype(k.key.KeyType)
	if err != nil {
		return nil, fmt.Errorf("gssapi: wrap: %w", err)
	}
	var flags byte
	usage := uint32(keyusage.GSSAPI_INITIATOR_SEAL)
	if fromAcceptor {
		flags |= flagSentByAcceptor
		usage = keyusage.GSSAPI_ACCEPTOR_SEAL
	}
	if k.acceptorSubkey {
		flags |= flagAcceptorSubkey
	}
	wt := gssapi.WrapToken{
		Flags:     flags,
		EC:        uint16(et.GetHMACBitLength() / 8),
		SndSeqNum: seq,
		Payload:   payload,
	}
	if err := wt.SetCheckSum(k.key, usage); err != nil {
		return nil, fmt.Errorf("gssapi: wrap: %w", err)
	}
	b, err := wt.Marshal()
	if err != nil {
		return nil, fmt.Errorf("gssapi: wrap: %w", err)
	}
	return b, nil
}

// wrapHeader is a Wrap token's header, and its data with the rotation undone.
type wrapHeader struct {
	flags byte
	ec    uint16
	seq   uint64
	data  []byte // payload | checksum
}

// parseWrap checks a Wrap token's header and undoes its rotation; it does not check the
// checksum.
func parseWrap(b []byte) (wrapHeader, error) {
	var h wrapHeader
	if len(b) < wrapHeaderLen {
		return h, errTruncated
	}
	if b[0] != 0x05 || b[1] != 0x04 {
		return h, fmt.Errorf("gssapi: not a Wrap token (TOK_ID %#02x%02x)", b[0], b[1])
	}
	if b[3] != 0xff {
		return h, fmt.Errorf("gssapi: Wrap token filler is %#02x, not 0xff", b[3])
	}
	h.flags = b[2]
	if h.flags&^(flagSentByAcceptor|flagSealed|flagAcceptorSubkey) != 0 {
		return h, fmt.Errorf("gssapi: Wrap token has unknown flags %#02x", h.flags)
	}
	h.ec = binary.BigEndian.Uint16(b[4:6])
	rrc := int(binary.BigEndian.Uint16(b[6:8]))
	h.seq = binary.BigEndian.Uint64(b[8:16])
	data := b[wrapHeaderLen:]
	if n := len(data); n > 0 && rrc%n != 0 {
		// The sender rotated the data right by RRC bytes: rotate it back.
		r := rrc % n
		h.data = append(append(make([]byte, 0, n), data[r:]...), data[:r]...)
	} else {
		h.data = append([]byte(nil), data...)
	}
	if h.flags&flagSealed == 0 && int(h.ec) > len(h.data) {
		return h, fmt.Errorf("gssapi: Wrap token checksum length %d exceeds its %d data bytes", h.ec, len(h.data))
	}
	return h, nil
}

// unwrap checks a Wrap token from the peer and returns its payload and sequence number.
func unwrap(b []byte, k wrapKey, fromAcceptor bool) ([]byte, uint64, error) {
	h, err := parseWrap(b)
	if err != nil {
		return nil, 0, err
	}
	if (h.flags&flagSentByAcceptor != 0) != fromAcceptor {
		return nil, 0, errors.New("gssapi: Wrap token's sent-by-acceptor flag is wrong for its direction")
	}
	if h.flags&flagSealed != 0 {
		return nil, 0, errors.New("gssapi: sealed Wrap tokens (confidentiality) are not supported")
	}
	if (h.flags&flagAcceptorSubkey != 0) != k.acceptorSubkey {
		return nil, 0, errors.New("gssapi: Wrap token's acceptor-subkey flag does not match the context")
	}
	usage := uint32(keyusage.GSSAPI_INITIATOR_SEAL)
	if fromAcceptor {
		usage = keyusage.GSSAPI_ACCEPTOR_SEAL
	}
	et, err := crypto.GetEtype(k.key.KeyType)
	if err != nil {
		return nil, 0, fmt.Errorf("gssapi: unwrap: %w", err)
	}
	if int(h.ec) != et.GetHMACBitLength()/8 {
		return nil, 0, fmt.Errorf("gssapi: Wrap token checksum length %d, want %d", h.ec, et.GetHMACBitLength()/8)
	}
	n := len(h.data) - int(h.ec)
	wt := gssapi.WrapToken{Flags: h.flags, EC: h.ec, SndSeqNum: h.seq, Payload: h.data[:n]}
	if err := wt.SetCheckSum(k.key, usage); err != nil {
		return nil, 0, fmt.Errorf("gssapi: unwrap: %w", err)
	}
	if !hmac.Equal(wt.CheckSum, h.data[n:]) {
		return nil, 0, errors.New("gssapi: Wrap token checksum does not verify")
	}
	return h.data[:n], h.seq, nil
}

// layerMessage is the security-layer negotiation message of RFC 4752 (unwrapped).
type layerMessage struct {
	layers  byte
	maxSize uint32
	authzID string // client's message only
}

func (m layerMessage) marshal() []byte {
	b := []byte{m.layers, byte(m.maxSize >> 16), byte(m.maxSize >> 8), byte(m.maxSize)}
	return append(b, m.authzID...)
}

func parseLayerMessage(b []byte) (layerMessage, error) {
	if len(b) < 4 {
		return layerMessage{}, fmt.Errorf("gssapi: security layer message is %d bytes, want at least 4", len(b))
	}
	return layerMessage{
		layers:  b[0],
		maxSize: uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]),
		authzID: string(b[4:]),
	}, nil
}
