package server

import (
	"bufio"
)

// fourLetterWord reports whether a first length prefix is a four-letter command.
func fourLetterWord(n int32) (string, bool) {
	b := []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	switch s := string(b); s {
	case "ruok", "srvr", "stat":
		return s, true
	}
	return "", false
}

func (c *conn) fourLetter(cmd string, br *bufio.Reader) {
	defer c.close()
	if cmd == "ruok" {
		c.nc.Write([]byte("imok"))
	}
}
