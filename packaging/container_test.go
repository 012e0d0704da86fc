package packaging

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkd-io/zkd/internal/testing/needs"
	"github.com/zkd-io/zkd/internal/testing/portlock"
)

// The container tests build packaging/Containerfile.local's image (packaging/build-local.sh)
// once per run and start it with podman as a user would start the official image: a
// standalone server on a bridge network with published ports, and a three-member ensemble
// on the host's network, configured from ZOO_* variables only. Everything runs on
// loopback; every container and volume is removed at the end of its test, the image at
// the end of the run.

// podman runs podman with the OCI runtime found by needs.Podman and cgroupfs (no systemd
// on the machines this runs on).
type podman struct {
	path, runtime string
}

// cmd runs podman with args, for at most two minutes, and returns its combined output.
func (p podman) cmd(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := append([]string{"--runtime", p.runtime, "--cgroup-manager", "cgroupfs"}, args...)
	out, err := exec.CommandContext(ctx, p.path, all...).CombinedOutput()
	if err != nil {
		err = fmt.Errorf("podman %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), err
}

var built struct {
	once  sync.Once
	image string
	p     podman
	took  time.Duration
	err   error
}

// zkdImage returns podman and the image built from this checkout, building it on first use.
func zkdImage(t *testing.T) (podman, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs a container image")
	}
	path, runtime := needs.Podman(t)
	built.once.Do(func() {
		built.p = podman{path, runtime}
		built.image = fmt.Sprintf("localhost/zkd-test:%d", os.Getpid())
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "build-local.sh", built.image)
		cmd.Env = append(os.Environ(), "CONTAINER_ENGINE="+path)
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("build-local.sh: %w: %s", err, out)
		}
		built.took = time.Since(start)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	t.Logf("image %s (built in %v)", built.image, built.took.Round(time.Second))
	return built.p, built.image
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.image != "" {
		if _, err := built.p.cmd("rmi", "-f", built.image); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// ports reserves n free loopback ports for the test's life.
func ports(t *testing.T, n int) []int {
	t.Helper()
	var ps []int
	for range n {
		port, lock, err := portlock.Reserve()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lock.Close() })
		ps = append(ps, port)
	}
	return ps
}

// name is a container or volume name unique to this run.
func name(t *testing.T, what string) string {
	return fmt.Sprintf("zkdtest-%d-%s-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"), what)
}

// volume creates a named volume (podman fills it from the image's directory, so it is
// owned by 65532) and removes it at the end of the test.
func volume(t *testing.T, p podman, vol string) string {
	t.Helper()
	if _, err := p.cmd("volume", "create", vol); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := p.cmd("volume", "rm", "-f", vol); err != nil {
			t.Error(err)
		}
	})
	return vol
}

// container is a started container.
type container struct {
	p    podman
	name string
}

// run starts a container of img, detached, with the given podman run arguments, and
// removes it at the end of the test (logging its output when the test failed).
func run(t *testing.T, p podman, img, cname string, args ...string) *container {
	t.Helper()
	all := append([]string{"run", "-d", "--name", cname,
		"--ulimit", "nofile=10000:10000", "--ulimit", "nproc=1000:1000"}, args...)
	c := &container{p, cname}
	t.Cleanup(func() { c.remove(t) })
	if _, err := p.cmd(append(all, img)...); err != nil {
		t.Fatal(err)
	}
	return c
}

// remove stops the container (SIGTERM, then SIGKILL after 10 s) and removes it with its
// anonymous volumes (the image's VOLUMEs when nothing is mounted there); named volumes
// stay. Removing a removed container is a no-op.
func (c *container) remove(t *testing.T) {
	t.Helper()
	if t.Failed() {
		if out, err := c.p.cmd("logs", c.name); err == nil {
			t.Logf("%s's output:\n%s", c.name, lastLines(out, 40))
		}
	}
	if _, err := c.p.cmd("rm", "-f", "-v", "-t", "10", "--ignore", c.name); err != nil {
		t.Error(err)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// fatal ends the test with the container's recent output.
func (c *container) fatal(t *testing.T, format string, args ...any) {
	t.Helper()
	out, _ := c.p.cmd("logs", c.name)
	t.Fatalf("%s: %s\n%s's output:\n%s", c.name, fmt.Sprintf(format, args...), c.name, lastLines(out, 40))
}

// srvrMode is the Mode srvr reports at addr, or "" when nothing answers.
func srvrMode(addr string) string {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return ""
	}
	s := bufio.NewScanner(conn)
	for s.Scan() {
		if m, ok := strings.CutPrefix(s.Text(), "Mode: "); ok {
			return m
		}
	}
	return ""
}

// waitMode waits up to 90 s for the server at addr to serve in one of the modes.
func (c *container) waitMode(t *testing.T, addr string, modes ...string) string {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		m := srvrMode(addr)
		for _, want := range modes {
			if m == want {
				return m
			}
		}
		if time.Now().After(deadline) {
			c.fatal(t, "not serving as %v at %s after 90s (srvr says %q)", modes, addr, m)
		}
		if out, err := c.p.cmd("inspect", "-f", "{{.State.Running}}", c.name); err == nil && strings.TrimSpace(out) == "false" {
			c.fatal(t, "exited")
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// connect opens a session to addr only, closed at the end of the test.
func connect(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 15*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// retry runs op until it succeeds, for up to 60 s (a session may still be connecting).
func retry(t *testing.T, what string, op func() error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := op()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// readThrough syncs the session's server with the leader and reads path.
func readThrough(t *testing.T, conn *zk.Conn, path string) string {
	t.Helper()
	var data []byte
	retry(t, "sync and get "+path, func() error {
		if _, err := conn.Sync(path); err != nil {
			return err
		}
		var err error
		data, _, err = conn.Get(path)
		return err
	})
	return string(data)
}

func create(t *testing.T, conn *zk.Conn, path, data string) {
	t.Helper()
	retry(t, "create "+path, func() error {
		_, err := conn.Create(path, []byte(data), 0, zk.WorldACL(zk.PermAll))
		if err == zk.ErrNodeExists {
			return nil // a retried create that had gone through
		}
		return err
	})
}

// TestContainerStandalone runs the image as `docker run -p` users do: no variable set, a
// bridge network, the client port and the AdminServer published on loopback ports of the
// host. A client writes and reads through the published client port; the AdminServer
// answers through the published 8080 (it listens on all of the container's interfaces, as
// the official image's does) and its Host check and snapshot guard still refuse.
func TestContainerStandalone(t *testing.T) {
	p, img := zkdImage(t)
	ps := ports(t, 2)
	client, admin := fmt.Sprintf("127.0.0.1:%d", ps[0]), fmt.Sprintf("127.0.0.1:%d", ps[1])
	c := run(t, p, img, name(t, "zk"),
		"-p", client+":2181", "-p", admin+":8080",
		"-e", "ZOO_4LW_COMMANDS_WHITELIST=srvr,ruok")
	c.waitMode(t, client, "standalone")

	conn := connect(t, client)
	create(t, conn, "/container", "standalone")
	if got := readThrough(t, conn, "/container"); got != "standalone" {
		t.Fatalf("read %q, wrote %q", got, "standalone")
	}

	get := func(path, host string, header ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+admin+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		hc := &http.Client{Timeout: 30 * time.Second}
		resp, err := hc.Do(req)
		if err != nil {
			c.fatal(t, "GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	adminPort := strconv.Itoa(ps[1])
	for _, host := range []string{"", "localhost:" + adminPort, "192.0.2.7:8080"} {
		if code, body := get("/commands/ruok", host); code != http.StatusOK || !strings.Contains(body, `"error": null`) {
			c.fatal(t, "ruok through the published port, Host %q: %d %s", host, code, body)
		}
	}
	if code, body := get("/commands/stat", ""); code != http.StatusOK || !strings.Contains(body, `"server_stats"`) {
		c.fatal(t, "stat through the published port: %d %s", code, body)
	}
	// A DNS-rebinding page names its own host: refused, since the image lists allowedHosts.
	if code, body := get("/commands/ruok", "evil.example:"+adminPort); code != http.StatusForbidden {
		c.fatal(t, "Host evil.example: %d %s, want 403", code, body)
	}
	if code, body := get("/commands/ruok", "", "Origin", "http://evil.example"); code != http.StatusForbidden {
		c.fatal(t, "Origin evil.example: %d %s, want 403", code, body)
	}
	// A made-up digest user gets no snapshot, and restore is off.
	if code, body := get("/commands/snapshot?streaming=true", "", "Authorization", "digest nobody:anything"); code != http.StatusForbidden {
		c.fatal(t, "snapshot as a made-up user: %d %.200s, want 403", code, body)
	}
}

// member is one container of an ensemble on the host's network, with its own loopback ports.
type member struct {
	id                              int
	quorum, election, client, admin int
	data, datalog                   string // volume names
	c                               *container
}

func (m *member) addr() string { return fmt.Sprintf("127.0.0.1:%d", m.client) }

// TestContainerEnsemble forms a three-member ensemble from ZOO_MY_ID and ZOO_SERVERS, each
// member a container on the host's network (so each has its own loopback ports, given in
// ZOO_SERVERS and ZOO_CFG_EXTRA) with its data on named volumes. A client writes through
// one member and another reads through a second. Then a member's container is removed,
// the ensemble takes a write without it, and a new container on the same volumes, started
// without ZOO_MY_ID (the volume's myid names it), rejoins and serves that write.
func TestContainerEnsemble(t *testing.T) {
	p, img := zkdImage(t)
	ps := ports(t, 12)
	var members []*member
	var servers []string
	for i := range 3 {
		m := &member{id: i + 1, quorum: ps[4*i], election: ps[4*i+1], client: ps[4*i+2], admin: ps[4*i+3]}
		m.data = volume(t, p, name(t, fmt.Sprintf("data%d", m.id)))
		m.datalog = volume(t, p, name(t, fmt.Sprintf("datalog%d", m.id)))
		members = append(members, m)
		servers = append(servers, fmt.Sprintf("server.%d=127.0.0.1:%d:%d;127.0.0.1:%d", m.id, m.quorum, m.election, m.client))
	}
	start := func(m *member, withID bool) {
		args := []string{"--network", "host",
			"-v", m.data + ":/data", "-v", m.datalog + ":/datalog",
			"-e", "ZOO_SERVERS=" + strings.Join(servers, " "),
			"-e", "ZOO_TICK_TIME=500",
			"-e", "ZOO_4LW_COMMANDS_WHITELIST=srvr,ruok",
			// On the host's network the AdminServer keeps to loopback and a port of its own.
			"-e", fmt.Sprintf("ZOO_CFG_EXTRA=admin.serverAddress=127.0.0.1 admin.serverPort=%d", m.admin),
		}
		if withID {
			args = append(args, "-e", fmt.Sprintf("ZOO_MY_ID=%d", m.id))
		}
		m.c = run(t, p, img, name(t, fmt.Sprintf("zk%d-%d", m.id, time.Now().UnixNano())), args...)
	}
	for _, m := range members {
		start(m, true)
	}
	for _, m := range members {
		m.c.waitMode(t, m.addr(), "leader", "follower")
	}
	// One leader and two followers, seen together (an election may still be settling).
	deadline := time.Now().Add(90 * time.Second)
	for {
		var modes []string
		for _, m := range members {
			modes = append(modes, srvrMode(m.addr()))
		}
		slices.Sort(modes)
		if slices.Equal(modes, []string{"follower", "follower", "leader"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("modes %v after 90s, want a leader and two followers", modes)
		}
		time.Sleep(250 * time.Millisecond)
	}

	first, third := connect(t, members[0].addr()), connect(t, members[2].addr())
	create(t, first, "/ensemble", "written through member 1")
	if got := readThrough(t, third, "/ensemble"); got != "written through member 1" {
		t.Fatalf("member 3 read %q", got)
	}

	// Member 3's container goes; its volumes stay. The other two still make a quorum.
	third.Close()
	members[2].c.remove(t)
	create(t, first, "/while-down", "written while member 3 was down")
	start(members[2], false)
	members[2].c.waitMode(t, members[2].addr(), "follower", "leader")
	again := connect(t, members[2].addr())
	if got := readThrough(t, again, "/while-down"); got != "written while member 3 was down" {
		t.Fatalf("restarted member 3 read %q", got)
	}
	if got := readThrough(t, again, "/ensemble"); got != "written through member 1" {
		t.Fatalf("restarted member 3 read %q for /ensemble", got)
	}
	// It came back as member 3, from the myid on its volume.
	code, body := adminGet(t, fmt.Sprintf("http://127.0.0.1:%d/commands/conf", members[2].admin))
	if code != http.StatusOK || !strings.Contains(body, `"server_id": 3,`) {
		members[2].c.fatal(t, "conf of the restarted member: %d %.400s", code, body)
	}
}

func adminGet(t *testing.T, url string) (int, string) {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
