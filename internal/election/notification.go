package election

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ServerState is a server's role as carried in notifications; the values are ZooKeeper's
// QuorumPeer.ServerState ordinals.
type ServerState int32

// The four states a notification can report.
const (
	Looking   ServerState = 0
	Following ServerState = 1
	Leading   ServerState = 2
	Observing ServerState = 3
)

func (s ServerState) String() string {
	switch s {
	case Looking:
		return "LOOKING"
	case Following:
		return "FOLLOWING"
	case Leading:
		return "LEADING"
	case Observing:
		return "OBSERVING"
	}
	return fmt.Sprintf("ServerState(%d)", int32(s))
}

// Valid reports whether s is one of the four states ZooKeeper knows.
func (s ServerState) Valid() bool { return s >= Looking && s <= Observing }

// CurrentVersion is the notification format version zkd sends (ZooKeeper 3.5+).
const CurrentVersion = 2

// Notification sizes: 28 bytes before peerEpoch existed, 40 before the version and config
// were added, 44 plus the config text since.
const (
	LegacyLen28 = 28
	LegacyLen40 = 40
	headerLen   = 44
)

// ErrMalformed is returned by Unmarshal for payloads ZooKeeper would skip as malformed.
var ErrMalformed = errors.New("election: malformed notification")

// Notification is one FLE message: the sender's state and the vote it currently holds.
type Notification struct {
	State         ServerState
	Leader        int64 // proposed leader sid
	Zxid          int64 // the proposed leader's last logged zxid
	ElectionEpoch int64 // the sender's logical clock (its round)
	PeerEpoch     int64 // the proposed leader's currentEpoch
	Version       int32 // format version: 0 for the legacy forms, else as sent
	Config        []byte
	From          int64 // sender sid; not on the wire, the transport knows it
}

// Marshal encodes n in the current (version 2) form: 44 bytes plus the config text. The
// Version field is ignored, since any version below 2 would make receivers skip the config.
func (n *Notification) Marshal() []byte {
	b := make([]byte, headerLen+len(n.Config))
	binary.BigEndian.PutUint32(b[0:], uint32(n.State))
	binary.BigEndian.PutUint64(b[4:], uint64(n.Leader))
	binary.BigEndian.PutUint64(b[12:], uint64(n.Zxid))
	binary.BigEndian.PutUint64(b[20:], uint64(n.ElectionEpoch))
	binary.BigEndian.PutUint64(b[28:], uint64(n.PeerEpoch))
	binary.BigEndian.PutUint32(b[36:], CurrentVersion)
	binary.BigEndian.PutUint32(b[40:], uint32(len(n.Config)))
	copy(b[44:], n.Config)
	return b
}

// Unmarshal decodes a notification received from sid from, reading it the way ZooKeeper's
// WorkerReceiver does: exactly 28 bytes is the oldest form (peerEpoch is taken from the zxid),
// exactly 40 has no version, anything else carries a version and, above version 1, a config.
// Trailing bytes are ignored. The state is not checked here: ZooKeeper answers a non-voter
// before it looks at the state (see Election.Receive).
func Unmarshal(from int64, b []byte) (Notification, error) {
	n := Notification{From: from}
	if len(b) < LegacyLen28 {
		return n, fmt.Errorf("%w: %d bytes from sid %d", ErrMalformed, len(b), from)
	}
	n.State = ServerState(int32(binary.BigEndian.Uint32(b[0:])))
	n.Leader = int64(binary.BigEndian.Uint64(b[4:]))
	n.Zxid = int64(binary.BigEndian.Uint64(b[12:]))
	n.ElectionEpoch = int64(binary.BigEndian.Uint64(b[20:]))
	if len(b) == LegacyLen28 {
		n.PeerEpoch = n.Zxid >> 32
		return n, nil
	}
	if len(b) < 36 {
		return n, fmt.Errorf("%w: %d bytes from sid %d", ErrMalformed, len(b), from)
	}
	n.PeerEpoch = int64(binary.BigEndian.Uint64(b[28:]))
	if len(b) == LegacyLen40 {
		return n, nil
	}
	if len(b) < LegacyLen40 {
		return n, fmt.Errorf("%w: %d bytes from sid %d", ErrMalformed, len(b), from)
	}
	n.Version = int32(binary.BigEndian.Uint32(b[36:]))
	if n.Version <= 1 {
		return n, nil
	}
	if len(b) < headerLen {
		return n, fmt.Errorf("%w: version %d but %d bytes from sid %d", ErrMalformed, n.Version, len(b), from)
	}
	l := int32(binary.BigEndian.Uint32(b[40:]))
	if l < 0 || int(l) > len(b)-headerLen {
		return n, fmt.Errorf("%w: config length %d in %d bytes from sid %d", ErrMalformed, l, len(b), from)
	}
	n.Config = append([]byte(nil), b[headerLen:headerLen+int(l)]...)
	return n, nil
}
