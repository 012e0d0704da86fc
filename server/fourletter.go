package server

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"
	"unicode/utf16"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/admin/dispatch"
	"github.com/zkd-io/zkd/internal/ext"
)

// Version is what srvr and mntr report (admin.Version).
var Version = admin.Version

// fourLetterWord reports which four-letter word n is: ZooKeeper's, or with the
// capabilities extension on, ClickHouse Keeper's apiv and ftfl (with it off they stay a
// frame length, as ZooKeeper reads them).
func (s *Server) fourLetterWord(n int32) (string, bool) {
	if cmd, ok := admin.Lookup(n); ok {
		return cmd, true
	}
	if s.cfg.Extensions.Has(ext.Capabilities) {
		return admin.LookupCaps(n)
	}
	return "", false
}

// stmkArgWait is how long stmk's 8-byte argument may trail the command. ZooKeeper takes
// only what is already in the socket when it reads the command and drops the connection
// without an answer if that is short; the small grace only spares a client whose argument
// went out in a second segment, while "stmk" alone is still dropped at once, not after
// the 10 s read deadline.
const stmkArgWait = 250 * time.Millisecond

// fourLetter answers a four-letter word and closes the connection.
func (c *conn) fourLetter(cmd string, br *connReader) {
	s := c.srv
	defer c.close()
	// ZooKeeper counts the command as a packet before it checks the whitelist or reads the
	// stmk argument.
	c.recv.Add(1)
	s.packetsReceived.Add(1)
	s.counters.add(cntBytesReceived, 4)
	var text string
	_, caps := admin.LookupCaps(admin.Code(cmd))
	switch {
	case caps && !admin.AllowedCaps(cmd, s.cfg.FourLetterWhitelist):
		text = admin.NotInWhitelist(cmd)
	case caps:
		text = admin.CapsFourLetter(cmd, s.cfg.Extensions)
	case !admin.Allowed(cmd, s.cfg.FourLetterWhitelist, s.cfg.ReadOnlyMode):
		// Like ZooKeeper, without reading stmk's argument.
		text = admin.NotInWhitelist(cmd)
	case cmd == "stmk":
		mask, err := readTraceMask(c.nc, br)
		if err != nil {
			s.log.Debug("stmk without its argument", "remote", c.remote, "err", err)
			return
		}
		adminBackend{s: s}.SetTraceMask(mask)
		text = admin.Stmk(mask)
	default:
		text = dispatch.FourLetter(adminBackend{s: s, self: c}, cmd)
	}
	// The deadline is for the client to take the answer; waiting for a builder slot and
	// building do not count against it.
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	// Each chunk ZooKeeper writes is a packet sent: one for a short answer, two or more
	// for a long one (mntr, dump, wchc...). They go out in one write, as the answer did
	// before they were counted: a stop that closes the connection between two writes
	// would leave the client a torn answer.
	chunks := fourLetterChunks(text)
	bufs := make(net.Buffers, len(chunks))
	for i, chunk := range chunks {
		bufs[i] = []byte(chunk)
	}
	if _, err := bufs.WriteTo(c.nc); err != nil {
		return
	}
	c.sent.Add(int64(len(chunks)))
	s.packetsSent.Add(int64(len(chunks)))
}

// fourLetterChunk is the chunk size, in Java chars, of ZooKeeper's answers to four-letter
// words: NIOServerCnxn writes the answer through a PrintWriter on a BufferedWriter (8192
// chars) on its SendBufferWriter, which sends (and counts as a packet, packetSent) what the
// BufferedWriter hands it once that passes 2048 chars, and the rest on the final flush. An
// answer of n chars is therefore ceil(n/8192) packets.
const fourLetterChunk = 8192

// fourLetterChunks splits a four-letter word's answer into the writes ZooKeeper makes of
// it, counting UTF-16 units as Java's chars (a character is not split).
func fourLetterChunks(text string) []string {
	var chunks []string
	start, units := 0, 0
	for i, r := range text {
		u := utf16.RuneLen(r)
		if u < 1 {
			u = 1
		}
		if units+u > fourLetterChunk {
			chunks = append(chunks, text[start:i])
			start, units = i, 0
		}
		units += u
	}
	if start < len(text) {
		chunks = append(chunks, text[start:])
	}
	return chunks
}

// readTraceMask reads stmk's argument, a big-endian int64, from what the connection
// already holds or delivers within stmkArgWait.
func readTraceMask(nc net.Conn, br *connReader) (int64, error) {
	var arg [admin.SetTraceMaskArgLen]byte
	if br.Buffered() < len(arg) {
		nc.SetReadDeadline(time.Now().Add(stmkArgWait))
	}
	if _, err := io.ReadFull(br, arg[:]); err != nil {
		return 0, fmt.Errorf("stmk argument: %w", err)
	}
	return int64(binary.BigEndian.Uint64(arg[:])), nil
}
