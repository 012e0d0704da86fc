package refzk

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
	"github.com/zkd-io/zkd/jute"
)

func TestStandaloneServesAndStops(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	s := StartStandalone(t, Options{
		TickTime:         1000,
		Config:           []string{"maxClientCnxns=7"},
		SystemProperties: []string{"-Dzookeeper.extendedTypesEnabled=true", "java.io.tmpdir=" + tmp}, // with and without -D
		JavaOpts:         []string{"-Xmx200m", "-XX:-UsePerfData"},
	})

	srvr, err := s.Command("srvr")
	if err != nil || !strings.Contains(srvr, "\nMode: standalone\n") {
		t.Fatalf("srvr = %q, %v; want a Mode: standalone line", srvr, err)
	}
	if !strings.HasPrefix(srvr, "Zookeeper version: 3.") {
		t.Errorf("srvr does not come from Apache ZooKeeper: %q", srvr)
	}

	conf, err := s.Command("conf")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(s.Addr())
	for _, want := range []string{
		"clientPort=" + port + "\n",
		"dataDir=" + filepath.Join(s.DataDir(), "version-2") + "\n",
		"tickTime=1000\n",
		"maxClientCnxns=7\n", // the extra line overrides the harness's maxClientCnxns=0
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("conf answer lacks %q:\n%s", want, conf)
		}
	}
	if envi, err := s.Command("envi"); err != nil || !strings.Contains(envi, "java.io.tmpdir="+tmp+"\n") {
		t.Errorf("system property not passed: envi = %q, %v", envi, err)
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(s.PID()), "cmdline"))
	if err == nil && !strings.Contains(string(cmdline), "\x00-Xmx200m\x00") {
		t.Errorf("JavaOpts not passed: cmdline %q", cmdline)
	}

	s.Stop()
	// The whole process group is gone (and the JVM reaped, so its pid is not signalled again).
	if err := syscall.Kill(-s.PID(), 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill(-%d, 0) after Stop = %v, want ESRCH", s.PID(), err)
	}
	if _, err := s.Command("srvr"); err == nil {
		t.Error("server still answers after Stop")
	}
	s.Stop() // no-op
	s.Kill() // no-op
}

// A data directory written by one server is read by the next: the harness must hand the given
// DataDir to ZooKeeper rather than a fresh one.
func TestReopenDataDir(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "shared")
	s := StartStandalone(t, Options{DataDir: dataDir})
	if s.DataDir() != dataDir {
		t.Fatalf("DataDir() = %q, want %q", s.DataDir(), dataDir)
	}
	if z := srvrZxid(t, s); z != "0x0" {
		t.Fatalf("fresh server has zxid %s", z)
	}
	openSession(t, s.Addr()) // createSession is a transaction: zxid 1
	s.Kill()
	if logs, _ := filepath.Glob(filepath.Join(dataDir, "version-2", "log.*")); len(logs) == 0 {
		t.Fatalf("no transaction log in %s/version-2", dataDir)
	}

	s2 := StartStandalone(t, Options{DataDir: dataDir})
	if z := srvrZxid(t, s2); z == "0x0" {
		t.Errorf("restarted server has zxid 0x0: the data dir was not reused")
	}
}

// On a failed start the error carries the server log, and no process is left.
func TestStartFailureReportsLog(t *testing.T) {
	Require(t)
	t.Parallel()
	dir := t.TempDir()
	_, err := start(t, dir, Options{Config: []string{"tickTime=abc"}})
	if err == nil {
		t.Fatal("start succeeded with tickTime=abc")
	}
	// ZooKeeper logs the parse failure before exiting.
	if !strings.Contains(err.Error(), "server exited before serving") || !strings.Contains(err.Error(), `For input string: "abc"`) {
		t.Errorf("error does not explain the failure:\n%v", err)
	}
}

var zxidLine = regexp.MustCompile(`(?m)^Zxid: (0x[0-9a-f]+)$`)

func srvrZxid(t *testing.T, s *Server) string {
	t.Helper()
	out, err := s.Command("srvr")
	m := zxidLine.FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("srvr = %q, %v", out, err)
	}
	return m[1]
}

// openSession performs a client handshake, which commits a createSession transaction.
func openSession(t *testing.T, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	body := jute.Marshal(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true})
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if _, err := conn.Write(append(frame, body...)); err != nil {
		t.Fatal(err)
	}
	var n [4]byte
	if _, err := io.ReadFull(conn, n[:]); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, binary.BigEndian.Uint32(n[:]))
	if _, err := io.ReadFull(conn, reply); err != nil {
		t.Fatal(err)
	}
	var resp jute.ConnectResponse
	if err := jute.Unmarshal(reply, &resp); err != nil || resp.SessionID == 0 {
		t.Fatalf("ConnectResponse %+v, %v", resp, err)
	}
}

// TestSecureClientPort: with SecureClientPort and the ssl.* keys, ZooKeeper serves TLS on
// SecureAddr (NettyServerCnxnFactory, so NettyJars are enough), refuses a client without a
// certificate under clientAuth=need, and keeps serving plaintext on Addr.
func TestSecureClientPort(t *testing.T) {
	t.Parallel()
	pki := tlstest.New(t, filepath.Join(t.TempDir(), "pki"))
	s := StartStandalone(t, Options{SecureClientPort: true, Config: []string{
		"ssl.keyStore.location=" + pki.Server.PKCS12, "ssl.keyStore.password=" + tlstest.Password,
		"ssl.trustStore.location=" + pki.TrustPKCS12, "ssl.trustStore.password=" + tlstest.Password,
	}})
	if s.SecureAddr() == "" || s.SecureAddr() == s.Addr() {
		t.Fatalf("SecureAddr = %q (Addr %q)", s.SecureAddr(), s.Addr())
	}
	roots := x509.NewCertPool()
	roots.AddCert(pki.CA.Cert)
	dial := func(certs []tls.Certificate) error {
		nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", s.SecureAddr(),
			&tls.Config{RootCAs: roots, ServerName: "127.0.0.1", Certificates: certs})
		if err != nil {
			return err
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		// A ConnectRequest, read back as a ConnectResponse frame (a refused certificate shows
		// here under TLS 1.3).
		body := jute.Marshal(&jute.ConnectRequest{TimeOut: 10000, Passwd: make([]byte, 16)})
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		if _, err := nc.Write(append(frame, body...)); err != nil {
			return err
		}
		var n [4]byte
		if _, err := io.ReadFull(nc, n[:]); err != nil {
			return err
		}
		return nil
	}
	if err := dial([]tls.Certificate{pki.Client.TLS}); err != nil {
		t.Fatalf("TLS session with a client certificate: %v\n%s", err, s.logTail())
	}
	if err := dial(nil); err == nil {
		t.Errorf("TLS session without a client certificate under clientAuth=need was served")
	}
	openSession(t, s.Addr())
}

// The Prometheus provider built from source serves ZooKeeper's metrics on MetricsAddr, and
// a second server in the same process reuses the built jar.
func TestPrometheusProvider(t *testing.T) {
	t.Parallel()
	s := StartStandalone(t, Options{Prometheus: true, Config: []string{"metricsProvider.exportJvmInfo=false"}})
	if s.MetricsAddr() == "" {
		t.Fatal("MetricsAddr is empty with Options.Prometheus")
	}
	resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s, %v", resp.Status, err)
	}
	for _, want := range []string{"# TYPE znode_count gauge\n", "# TYPE readlatency summary\n", "# TYPE commit_count counter\n"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("scrape lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(string(body), "jvm_threads_current") {
		t.Errorf("jvm_* exported with metricsProvider.exportJvmInfo=false")
	}
	if again := PrometheusJar(t); again != s.promJar {
		t.Errorf("PrometheusJar = %s, then %s", s.promJar, again)
	}
}
