package compat

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/testing/needs"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/internal/tlsconf"
	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// Client TLS harness: a zkd and an Apache ZooKeeper 3.8 configured from the same zoo.cfg
// lines and certificates, and runners for ZooKeeper's own clients over TLS (kazoo, zkCli.sh).

// x509Provider is the zoo.cfg line that turns a TLS client's certificate into an x509 id.
const x509Provider = "authProvider.x509=" + config.X509ProviderClass

// sslLines are the ssl.* zoo.cfg lines for a server with pki's server certificate and CA, its
// stores of the given type ("PKCS12", "JKS" or "PEM"). The PEM key is not encrypted:
// ZooKeeper 3.8 on Java 17 cannot decrypt a PBES2 key ("PBES2 SecretKeyFactory not
// available", and only when the first client connects), and with a password set it wants an
// encrypted one.
func sslLines(pki *tlstest.PKI, storeType string) []string {
	key, trust := pki.Server.PKCS12, pki.TrustPKCS12
	switch storeType {
	case "JKS":
		key, trust = pki.Server.JKS, pki.TrustJKS
	case "PEM":
		return []string{"ssl.keyStore.location=" + pki.Server.PEM, "ssl.trustStore.location=" + pki.TrustPEM}
	}
	return []string{
		"ssl.keyStore.location=" + key, "ssl.keyStore.password=" + tlstest.Password,
		"ssl.trustStore.location=" + trust, "ssl.trustStore.password=" + tlstest.Password,
	}
}

// tlsTarget is one server of a TLS pair.
type tlsTarget struct {
	name   string // "zookeeper" or "zkd"
	addr   string // clientPort (plaintext; TLS too with client.portUnification)
	secure string // secureClientPort, "" when none
	logs   func() string
}

// logBuffer collects zkd's log for the test's checks.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startTLSPair starts ZooKeeper 3.8 (NettyServerCnxnFactory) and zkd from the same zoo.cfg
// lines (ssl.*, authProvider.N, client.portUnification), with a secure client port when
// secure is set. The zoo.cfg lines must parse: a line zkd refuses fails the test. zkd's settings go through zoo.cfg parsing (internal/config) and tlsconf as
// cmd/zkd does.
func startTLSPair(t *testing.T, secure bool, lines ...string) []tlsTarget {
	t.Helper()
	refzk.Require(t)
	ref := refzk.StartStandalone(t, refzk.Options{TickTime: tickTime, Netty: true, SecureClientPort: secure, Config: lines})
	refLogs := func() string {
		b, err := os.ReadFile(ref.LogPath())
		if err != nil {
			return err.Error()
		}
		return string(b)
	}

	text := "dataDir=" + t.TempDir() + "\nclientPort=2181\n"
	if secure {
		text += "secureClientPort=2182\n" // the listener takes a free port instead, below
	}
	cfg, err := config.Parse(strings.NewReader(text + strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatalf("zoo.cfg for zkd: %v", err)
	}
	sec := cfg.Security
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := tlsconf.Parse(sec.SSL, "ssl.")
	if err != nil {
		t.Fatal(err)
	}
	tc, err := st.ServerConfig(logger)
	if err != nil {
		t.Fatal(err)
	}
	z := zktest.Start(t, zkdConfig("", func(c *server.Config) {
		c.Logger = logger
		c.TLS = tc
		if secure {
			c.SecureListenAddr = "127.0.0.1:0"
		}
		c.ClientPortUnification = sec.ClientPortUnification
		c.TLSDetectTimeout = st.HandshakeDetectionTimeout
		// As cmd/zkd: x509 from authProvider.N, or by default with a secure client port.
		c.AuthProviders.X509 = sec.X509Registered()
	}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- zkd log ---\n%s", logs.String())
			t.Logf("--- zookeeper log (tail) ---\n%s", tail(refLogs(), 8000))
		}
	})
	return []tlsTarget{
		{name: "zookeeper", addr: ref.Addr(), secure: ref.SecureAddr(), logs: refLogs},
		{name: "zkd", addr: z.Addr(), secure: z.SecureAddr(), logs: logs.String},
	}
}

// kazooTLSScript runs steps with one kazoo client and prints one line per observation.
// Arguments: hosts, "tls" or "plain", CA file, certificate file, key file ("" for none), the
// seconds to wait for a session, then the steps. A client that cannot connect prints "refused" (the reason goes to stderr).
const kazooTLSScript = `
import logging, sys
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.security import ACL, Id, Permissions
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
hosts, mode, ca, cert, key, wait = sys.argv[1:7]
kw = {}
if mode == "tls":
    kw = dict(use_ssl=True, verify_certs=True, ca=ca, certfile=cert or None, keyfile=key or None)
zk = KazooClient(hosts=hosts, timeout=10, connection_retry={"max_tries": 2, "delay": 0.2, "max_delay": 1}, **kw)
try:
    zk.start(timeout=float(wait))
except Exception as e:
    print("kazoo did not connect: %s: %s" % (type(e).__name__, e), file=sys.stderr)
    print("refused", flush=True)
    zk.stop()
    zk.close()
    sys.exit(0)
print("connected", flush=True)
def run(name, f):
    try:
        print(name, f(), flush=True)
    except KazooException as e:
        print(name, type(e).__name__, flush=True)
for step in sys.argv[7:]:
    op, _, arg = step.partition("=")
    if op == "crud":
        run("create", lambda: zk.create("/kz-tls", b"over-tls"))
        run("get", lambda: zk.get("/kz-tls")[0])
        run("set", lambda: zk.set("/kz-tls", b"v2").version)
        run("children", lambda: sorted(zk.get_children("/")))
        run("delete", lambda: zk.delete("/kz-tls"))
        run("exists", lambda: zk.exists("/kz-tls"))
    elif op == "acl-create":
        run("acl-create", lambda: zk.create("/kz-x509", b"mine", acl=[ACL(Permissions.ALL, Id("x509", arg))]))
    elif op == "acl-get":
        run("acl-get", lambda: zk.get("/kz-x509")[0])
    elif op == "acl-delete":
        run("acl-delete", lambda: zk.delete("/kz-x509"))
    elif op == "auth-acl":
        # The auth scheme expands to the connection's authenticated ids: its x509 id.
        run("auth-create", lambda: zk.create("/kz-auth", b"x", acl=[ACL(Permissions.ALL, Id("auth", ""))]))
        run("auth-acl", lambda: zk.get_acls("/kz-auth")[0])
        run("auth-delete", lambda: zk.delete("/kz-auth"))
zk.stop()
zk.close()
print("done", flush=True)
`

// kazooTLS is one kazoo client's settings: plaintext unless tls.
type kazooTLS struct {
	tls bool
	ca  string
	id  *tlstest.Identity // client certificate; nil for none
}

// runKazooTLS runs kazooTLSScript against hosts and returns its output lines. A client
// expected to be refused waits 8 s for a session (kazoo retries until then), others 60 s.
func runKazooTLS(t *testing.T, hosts string, k kazooTLS, refused bool, steps ...string) []string {
	t.Helper()
	python := needs.Kazoo(t)
	script := filepath.Join(t.TempDir(), "kazoo_tls.py")
	if err := os.WriteFile(script, []byte(kazooTLSScript), 0o644); err != nil {
		t.Fatal(err)
	}
	mode, cert, key := "plain", "", ""
	if k.tls {
		mode = "tls"
	}
	if k.id != nil {
		cert, key = k.id.CertPEM, k.id.PEM
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	wait := "60"
	if refused {
		wait = "8"
	}
	cmd := exec.CommandContext(ctx, python, append([]string{script, hosts, mode, k.ca, cert, key, wait}, steps...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	if err != nil || (last != "done" && last != "refused") {
		t.Fatalf("kazoo against %s: %v\nstdout:\n%s\nstderr:\n%s", hosts, err, stdout.String(), stderr.String())
	}
	if last == "refused" {
		t.Logf("kazoo against %s: %s", hosts, strings.TrimSpace(stderr.String()))
	}
	return lines
}

// zkCliTLS is a Java client's TLS settings (the zookeeper.ssl.* system properties).
type zkCliTLS struct {
	keyStore, trustStore string // "" for none
}

// runZkCliTLS runs Debian's zkCli.sh over TLS (ClientCnxnSocketNetty, zookeeper.client.secure)
// against addr, feeding it cmds, and returns its stdout, its stderr (where some commands
// print, e.g. create's "Created /path", beside the client's log) and whether it exited 0. Debian's
// zkCli.sh puts only zookeeper.jar on the class path, whose manifest lacks part of Netty
// (refzk.NettyJars), so CLIENT_JVMFLAGS carries a -cp that replaces it (java takes the last).
func runZkCliTLS(t *testing.T, addr string, s zkCliTLS, cmds ...string) (stdout, stderr string, ok bool) {
	t.Helper()
	zkCli := needs.ZkCli(t)
	dir := t.TempDir()
	log4j := filepath.Join(dir, "log4j.properties")
	// The client's log goes to stderr at WARN, so stdout holds only the commands' output.
	if err := os.WriteFile(log4j, []byte("log4j.rootLogger=WARN, E\nlog4j.appender.E=org.apache.log4j.ConsoleAppender\n"+
		"log4j.appender.E.Target=System.err\nlog4j.appender.E.layout=org.apache.log4j.PatternLayout\n"+
		"log4j.appender.E.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{
		"-cp", refzk.ClientClassPath(t),
		"-Xmx128m", "-XX:+UseSerialGC", "-XX:-UsePerfData",
		"-Dlog4j.configuration=file:" + log4j,
		"-Dzookeeper.client.secure=true",
		"-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
	}
	if s.keyStore != "" {
		flags = append(flags, "-Dzookeeper.ssl.keyStore.location="+s.keyStore, "-Dzookeeper.ssl.keyStore.password="+tlstest.Password)
	}
	if s.trustStore != "" {
		flags = append(flags, "-Dzookeeper.ssl.trustStore.location="+s.trustStore, "-Dzookeeper.ssl.trustStore.password="+tlstest.Password)
	}
	for _, f := range flags {
		if strings.ContainsAny(f, " \t\n") {
			t.Fatalf("zkCli.sh splits CLIENT_JVMFLAGS on white space: %q", f)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, zkCli, "-server", addr, "-timeout", "10000", "-waitforconnection")
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS="+strings.Join(flags, " "))
	cmd.Stdin = strings.NewReader(strings.Join(append(slices.Clone(cmds), "quit"), "\n") + "\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("zkCli.sh against %s did not finish: %v\nstdout:\n%s\nstderr:\n%s", addr, err, out.String(), errOut.String())
	}
	if err != nil {
		t.Logf("zkCli.sh against %s: %v\nstderr (tail):\n%s", addr, err, tail(errOut.String(), 1500))
	}
	return out.String(), errOut.String(), err == nil
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// describe renders a list of lines for a comparison message.
func describe(lines []string) string { return fmt.Sprintf("%q", lines) }

// dialTCP opens a plain TCP connection with a generous deadline.
func dialTCP(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(120 * time.Second))
	return nc
}

func writeAll(t *testing.T, w io.Writer, b []byte) {
	t.Helper()
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
}

// connectFrame is a length-prefixed ConnectRequest for a new session.
func connectFrame() []byte {
	body := jute.Marshal(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16)})
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// closedWithin reads nc until the peer closes it: "closed", or what happened instead.
func closedWithin(nc net.Conn, d time.Duration) string {
	nc.SetReadDeadline(time.Now().Add(d))
	var buf [512]byte
	total := 0
	for {
		n, err := nc.Read(buf[:])
		total += n
		if err == nil {
			continue // a TLS alert, say: keep reading until the close
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Sprintf("still open after %v (%d bytes read)", d, total)
		}
		return "closed"
	}
}

// rawzkTLS opens a session over TLS.
func rawzkTLS(t *testing.T, addr string, cfg *tls.Config) *rawzk.Client {
	t.Helper()
	return rawzk.ConnectOver(t, dialTLS(t, addr, cfg))
}

// bystanderWorks runs a read on c, without failing the test itself.
func bystanderWorks(c *rawzk.Client) error {
	c.NC.SetDeadline(time.Now().Add(60 * time.Second))
	xid, err := c.TrySend(jute.OpExists, &jute.ExistsRequest{Path: "/zookeeper"})
	if err != nil {
		return err
	}
	h, err := c.Reply(xid, &jute.ExistsResponse{})
	if err != nil {
		return err
	}
	if h.Err != jute.OK {
		return fmt.Errorf("exists /zookeeper: %v", h.Err)
	}
	return nil
}

// linesWith are the lines of log that mention s.
func linesWith(log, s string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// kazooOnBoth runs kazoo with k and steps against each target's port (secure: its
// secureClientPort, else its clientPort), checks that each output holds every want line (a
// want starting with "refused" expects the connection refused), and that ZooKeeper's and
// zkd's outputs are the same. what names the case in the failure.
func kazooOnBoth(t *testing.T, what string, targets []tlsTarget, secure bool, k kazooTLS, want []string, steps ...string) {
	t.Helper()
	var got [][]string
	for _, tgt := range targets {
		addr := tgt.addr
		if secure {
			addr = tgt.secure
		}
		lines := runKazooTLS(t, addr, k, want[0] == "refused", steps...)
		t.Logf("%s: %s", tgt.name, describe(lines))
		for _, w := range want {
			if !slices.Contains(lines, w) {
				t.Errorf("%s: output lacks %q: %s", tgt.name, w, describe(lines))
			}
		}
		got = append(got, lines)
	}
	if !slices.Equal(got[0], got[1]) {
		t.Errorf("%s differs:\nzookeeper: %s\nzkd:       %s", what, describe(got[0]), describe(got[1]))
	}
}
