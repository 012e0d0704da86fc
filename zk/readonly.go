package zk

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// While connected to a read-only server, the client looks for a read-write one as
// ZooKeeper's ClientCnxn.pingRwServer does: it asks another server of the list "isro", first
// after minPingRW, then at doubling intervals up to maxPingRW, and moves to the first that
// answers "rw". The session made on the read-only server is local to it, so the move opens a
// new session (until a read-write server was seen, see Conn.seenRW).
const (
	minPingRW = 100 * time.Millisecond
	maxPingRW = 60 * time.Second
	// pingRWTimeout bounds one probe, as the Java client's socket timeout of 1 s.
	pingRWTimeout = time.Second
)

var errRWServerFound = errors.New("read-write server found")

// huntReadWrite probes the other servers while w, a read-only server's connection, lives.
func (c *Conn) huntReadWrite(w *wire) {
	wait := minPingRW
	next := 0
	for {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-w.stop:
			t.Stop()
			return
		case <-c.ctx.Done():
			t.Stop()
			return
		}
		wait = min(2*wait, maxPingRW)
		c.mu.Lock()
		servers := c.hosts.servers
		live := c.w == w
		c.mu.Unlock()
		if !live {
			return
		}
		var addr string
		for range servers {
			a := servers[next%len(servers)]
			next++
			if a != w.addr {
				addr = a
				break
			}
		}
		if addr == "" {
			continue // no other server to try
		}
		ans, err := c.isro(addr)
		if err != nil {
			c.log.Debug("zk: probing for a read-write server failed", "server", addr, "err", err)
			continue
		}
		if ans != "rw" {
			continue
		}
		c.mu.Lock()
		found := c.w == w
		if found {
			c.rwServer = addr
		}
		c.mu.Unlock()
		if found {
			c.log.Info("zk: majority server found, moving to it", "server", addr, "from", w.addr)
			w.kill(fmt.Errorf("%w at %s", errRWServerFound, addr))
		}
		return
	}
}

// isro asks addr the isro four-letter word: "rw", "ro", or "null" when it serves nobody.
func (c *Conn) isro(addr string) (string, error) {
	ctx, cancel := context.WithTimeout(c.ctx, pingRWTimeout)
	defer cancel()
	nc, err := c.cfg.dial(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := nc.Write([]byte("isro")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	if line == "" && err != nil {
		return "", err
	}
	return strings.TrimSpace(line), nil
}
