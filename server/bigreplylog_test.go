package server_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// lockedBuf is a log sink that handlers on several goroutines may write to.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestBigReplyLogged: a read whose reply is over jute.maxbuffer is answered in full, as
// ZooKeeper answers it (a stock client with a larger limit reads it), and the server logs a
// warning naming the session, the operation, the path, the size and the limit.
func TestBigReplyLogged(t *testing.T) {
	const limit = 4096
	var logs lockedBuf
	srv := startStock(t, zktest.WithConfig(func(c *server.Config) {
		c.JuteMaxBuffer = limit
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	}))
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	if _, err := c.Create("/many", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("c", 200)
	const n = 2 * limit / 200
	for i := range n {
		if _, err := c.Create(fmt.Sprintf("/many/%s%03d", long, i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	kids, _, err := c.Children("/many")
	if err != nil || len(kids) != n {
		t.Fatalf("Children = %d names, %v; want %d", len(kids), err, n)
	}
	out := logs.String()
	var line string
	for l := range strings.SplitSeq(out, "\n") {
		if strings.Contains(l, "reply larger than jute.maxbuffer") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no warning about the big reply; log:\n%s", out)
	}
	for _, want := range []string{"session=0x", "op=getChildren", "path=/many", "jute.maxbuffer=4096", "size="} {
		if !strings.Contains(line, want) {
			t.Errorf("warning %q lacks %q", line, want)
		}
	}
}
