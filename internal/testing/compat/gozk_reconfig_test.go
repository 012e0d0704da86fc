package compat

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// The two tests below are go-zookeeper's own reconfig tests, TestIntegration_Reconfig and
// TestIntegration_IncrementalReconfig (github.com/go-zookeeper/zk v1.0.4, the version in
// go.mod, zk_test.go at commit 27bc0d6c39bb4e9d3c410057bf2c779f256ba15e), ported to zkd: upstream they start Apache
// ZooKeeper with zkServer.sh. The ensemble is laid out as their StartTestCluster
// (server_help_test.go) lays it out, with the zoo.cfg their ServerConfig.Marshall
// (server_java_test.go) writes, and the JVM flags of their NewIntegrationTestServer become
// zoo.cfg keys (zkd reads ZooKeeper's system properties from zoo.cfg). The operations and
// assertions are theirs; the waits are bounded polls with generous deadlines instead of
// their fixed retry counts.

// gozkServer is one server of a gozkCluster (their TestServer).
type gozkServer struct {
	id                              int
	clientPort, peerPort, electPort int
	dir                             string
}

// gozkCluster is their TestCluster: the servers and the last server's ServerConfig
// (cluster.Config, whose ClientPort TestIntegration_Reconfig uses for every member).
type gozkCluster struct {
	servers    []gozkServer
	clientPort int
}

// gozkZooCfg is ServerConfig.Marshall's zoo.cfg (defaults tickTime 2000, initLimit 10,
// syncLimit 5) plus the system properties NewIntegrationTestServer passes in
// SERVER_JVMFLAGS (the super password is "test").
func gozkZooCfg(dataDir string, clientPort int, servers []gozkServer) string {
	var b strings.Builder
	fmt.Fprintln(&b, "admin.enableServer=false")
	fmt.Fprintf(&b, "dataDir=%s\n", dataDir)
	fmt.Fprintln(&b, "tickTime=2000")
	fmt.Fprintln(&b, "initLimit=10")
	fmt.Fprintln(&b, "syncLimit=5")
	fmt.Fprintf(&b, "clientPort=%d\n", clientPort)
	fmt.Fprintln(&b, "reconfigEnabled=true")
	fmt.Fprintln(&b, "4lw.commands.whitelist=*")
	if len(servers) >= 2 {
		fmt.Fprintln(&b, "standaloneEnabled=false")
		for _, s := range servers {
			fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", s.id, s.peerPort, s.electPort)
		}
	}
	fmt.Fprintln(&b, "zookeeper.DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=")
	fmt.Fprintln(&b, "zookeeper.extendedTypesEnabled=true")
	fmt.Fprintln(&b, "zookeeper.emulate353TTLNodes=true")
	return b.String()
}

// startGozkServer writes srvPath/zoo.cfg and myid for the member me of servers, as
// StartTestCluster does, and starts zkd on it.
func startGozkServer(t *testing.T, bin string, me gozkServer, servers []gozkServer) {
	t.Helper()
	writeFile(t, filepath.Join(me.dir, "zoo.cfg"), gozkZooCfg(me.dir, me.clientPort, servers))
	writeFile(t, filepath.Join(me.dir, "myid"), fmt.Sprintf("%d\n", me.id))
	startZkdProcess(t, bin, filepath.Join(me.dir, "zoo.cfg"))
}

// gozkLayout reserves StartTestCluster's ports for size servers: server i (from 0) has
// client port start+3i, peer port start+3i+1 and election port start+3i+2.
func gozkLayout(t *testing.T, size int) []gozkServer {
	var offsets []int
	for i := range 3 * size {
		offsets = append(offsets, i)
	}
	start := reservePortLayout(t, offsets...)
	tmp := t.TempDir()
	var servers []gozkServer
	for i := range size {
		servers = append(servers, gozkServer{
			id:         i + 1,
			clientPort: start + 3*i,
			peerPort:   start + 3*i + 1,
			electPort:  start + 3*i + 2,
			dir:        filepath.Join(tmp, fmt.Sprintf("srv%d", i+1)),
		})
	}
	return servers
}

// startGozkCluster is StartTestCluster(t, size, ...) with zkd: it returns once every server
// answers srvr (their waitForStart).
func startGozkCluster(t *testing.T, bin string, size int) *gozkCluster {
	t.Helper()
	servers := gozkLayout(t, size)
	for _, s := range servers {
		startGozkServer(t, bin, s, servers)
	}
	c := &gozkCluster{servers: servers, clientPort: servers[len(servers)-1].clientPort}
	addrs := c.addrs()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if allServe(addrs) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("unable to verify health of servers %v within 90s", addrs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// allServe reports whether every server answers srvr with its mode, as their waitForStart
// checks with zk.FLWSrvr. FLWSrvr itself cannot be used: its pattern wants the build date
// as ZooKeeper up to 3.6 printed it ("built on 05/04/2020 15:07 GMT"), and 3.7 on (zkd
// prints 3.8.0's form) write "built on 2022-02-25 08:49 UTC", so it never reports ok.
func allServe(addrs []string) bool {
	for _, addr := range addrs {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Write([]byte("srvr"))
		var out []byte
		if err == nil {
			out, err = io.ReadAll(c)
		}
		c.Close()
		if err != nil || !bytes.Contains(out, []byte("\nMode: ")) {
			return false
		}
	}
	return true
}

func (c *gozkCluster) addrs() []string {
	var hosts []string
	for _, s := range c.servers {
		hosts = append(hosts, fmt.Sprintf("127.0.0.1:%d", s.clientPort))
	}
	return hosts
}

// connectAll is their ConnectAll: one client over every server, session timeout 15 s.
func (c *gozkCluster) connectAll(t *testing.T) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	conn, events, err := zk.Connect(c.addrs(), 15*time.Second, zk.WithLogger(testLogger{t}))
	if err != nil {
		t.Fatalf("failed to connect to cluster: %v", err)
	}
	t.Cleanup(conn.Close)
	return conn, events
}

// testLogger sends go-zookeeper's log to the test log.
type testLogger struct{ t *testing.T }

func (l testLogger) Printf(format string, args ...any) { l.t.Logf(format, args...) }

// waitForSession is theirs: it returns at the first event that is HasSession or not
// (upstream waits on one event only), failing if the event channel closed or none came.
func waitForSession(ctx context.Context, events <-chan zk.Event) error {
	select {
	case event, ok := <-events:
		if !ok {
			return fmt.Errorf("connection closed before state reached")
		}
		if event.State == zk.StateHasSession {
			return nil
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func TestGoZookeeperIncrementalReconfig(t *testing.T) {
	bin := buildZkd(t)
	ts := startGozkCluster(t, bin, 3)

	// start and add a new server: its zoo.cfg names only itself, so it runs standalone.
	srv4 := gozkLayout(t, 1)[0]
	srv4.id = 4
	startGozkServer(t, bin, srv4, []gozkServer{srv4})

	conn, events := ts.connectAll(t)
	if err := conn.AddAuth("digest", []byte("super:test")); err != nil {
		t.Fatalf("failed to auth to cluster: %v", err)
	}
	waitCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := waitForSession(waitCtx, events); err != nil {
		t.Fatalf("failed to wait for session: %v", err)
	}
	if _, _, err := conn.Get("/zookeeper/config"); err != nil {
		t.Fatalf("get config returned error: %+v", err)
	}

	// remove node 3.
	_, err := conn.IncrementalReconfig(nil, []string{"3"}, -1)
	if err != nil && err == zk.ErrConnectionClosed {
		t.Log("connection closed is fine since the cluster re-elects and we dont reconnect")
	} else if err != nil {
		t.Fatalf("failed to remove node from cluster: %v", err)
	}

	// add a new 4th node
	server := fmt.Sprintf("server.%d=%s:%d:%d;%d", srv4.id, "127.0.0.1", srv4.peerPort, srv4.electPort, srv4.clientPort)
	_, err = conn.IncrementalReconfig([]string{server}, nil, -1)
	if err != nil && err == zk.ErrConnectionClosed {
		t.Log("connection closed is fine since the cluster re-elects and we dont reconnect")
	} else if err != nil {
		t.Fatalf("failed to add new server to cluster: %v", err)
	}
}

func TestGoZookeeperReconfig(t *testing.T) {
	bin := buildZkd(t)
	// This test ensures we can do a non-incremental reconfig
	ts := startGozkCluster(t, bin, 3)

	conn, events := ts.connectAll(t)
	if err := conn.AddAuth("digest", []byte("super:test")); err != nil {
		t.Fatalf("failed to auth to cluster: %v", err)
	}
	waitCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := waitForSession(waitCtx, events); err != nil {
		t.Fatalf("failed to wait for session: %v", err)
	}
	if _, _, err := conn.Get("/zookeeper/config"); err != nil {
		t.Fatalf("get config returned error: %+v", err)
	}

	// essentially remove the first node
	var s []string
	for _, host := range ts.servers[1:] {
		s = append(s, fmt.Sprintf("server.%d=%s:%d:%d;%d\n", host.id, "127.0.0.1", host.peerPort, host.electPort, ts.clientPort))
	}
	if _, err := conn.Reconfig(s, -1); err != nil {
		t.Fatalf("failed to reconfig cluster: %v", err)
	}

	// reconfig to all the hosts again
	s = []string{}
	for _, host := range ts.servers {
		s = append(s, fmt.Sprintf("server.%d=%s:%d:%d;%d\n", host.id, "127.0.0.1", host.peerPort, host.electPort, ts.clientPort))
	}
	if _, err := conn.Reconfig(s, -1); err != nil {
		t.Fatalf("failed to reconfig cluster: %v", err)
	}
}
