package compat

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// flwWait bounds how long a four-letter-word probe waits for the answer and the close. It is
// well under zkd's 10 s connection deadline, so a server that waits for more input instead
// of closing shows as "no close", not as a slow close.
const flwWait = 5 * time.Second

// flwProbe sends raw bytes on a fresh connection, without closing its write side (a client
// that simply stops sending), and describes what comes back.
func flwProbe(addr string, send []byte) string {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(flwWait))
	if _, err := c.Write(send); err != nil {
		return "write: " + err.Error()
	}
	b, err := io.ReadAll(c)
	switch {
	case err == nil || isReset(err):
	case isTimeout(err):
		return fmt.Sprintf("%q; no close within %v", b, flwWait)
	default:
		return fmt.Sprintf("%q; %v", b, err)
	}
	if len(b) == 0 {
		return "closed without an answer"
	}
	return fmt.Sprintf("%q; closed", b)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func stmk(mask []byte) []byte { return append([]byte("stmk"), mask...) }

func maskArg(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// TestCompatFourLetterTraceMask compares stmk and gtmk: stmk sets the server's trace mask to
// its 8-byte argument and answers it, gtmk reports it, and stmk whose argument is missing or
// short is dropped at once without an answer (NIOServerCnxn.checkFourLetterWord reads the
// argument without waiting; the short buffer's getLong throws and the worker closes the
// connection).
func TestCompatFourLetterTraceMask(t *testing.T) {
	refzk.Require(t)
	ref := refzk.StartStandalone(t, refOptions(""))
	z := zktest.Start(t, zkdConfig("", func(c *server.Config) { c.FourLetterWhitelist = []string{"*"} }))
	steps := []struct {
		label string
		send  []byte
		want  string
	}{
		{"gtmk on a fresh server", []byte("gtmk"), `"306"; closed`},
		{"stmk 0x1ff", stmk(maskArg(0x1ff)), `"511"; closed`},
		{"gtmk after stmk", []byte("gtmk"), `"511"; closed`},
		{"stmk without its argument", []byte("stmk"), "closed without an answer"},
		{"stmk with a 3-byte argument", stmk([]byte{0, 0, 1}), "closed without an answer"},
		{"gtmk after the failed stmks", []byte("gtmk"), `"511"; closed`},
		{"stmk -1", stmk(maskArg(-1)), `"-1"; closed`},
		{"gtmk after stmk -1", []byte("gtmk"), `"-1"; closed`},
		{"stmk 0", stmk(maskArg(0)), `"0"; closed`},
		{"gtmk after stmk 0", []byte("gtmk"), `"0"; closed`},
	}
	for _, st := range steps {
		zk, zd := flwProbe(ref.Addr(), st.send), flwProbe(z.Addr(), st.send)
		if zk != zd {
			t.Errorf("%s: zookeeper %s, zkd %s", st.label, zk, zd)
		}
		if zd != st.want {
			t.Errorf("%s: zkd %s, want %s", st.label, zd, st.want)
		}
	}
}
