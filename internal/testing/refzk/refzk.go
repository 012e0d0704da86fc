// Package refzk runs Apache ZooKeeper 3.8 (Debian's packages) as a reference server for
// integration and differential tests. It owns the reference server's process: its zoo.cfg, its
// class path and logging, its port, waiting until it serves, and killing it when the test ends.
//
// Tests skip when the reference server is not installed (see Available and Require), or fail
// when ZKD_REQUIRE_TOOLS is set (internal/needs). ZKD_REFZK_CLASSPATH replaces the Debian
// class path, for ZooKeeper installed elsewhere.
package refzk

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/needs"
	"github.com/zkd-io/zkd/internal/testing/portlock"
	"github.com/zkd-io/zkd/internal/testing/proc"
)

const (
	// EnvClassPath, when set, is used as the Java class path instead of Debian's jars; each
	// of its entries must exist.
	EnvClassPath = "ZKD_REFZK_CLASSPATH"

	mainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
	javaDir   = "/usr/share/java"
)

// debianJars is the class path for Debian's ZooKeeper. zookeeper.jar's manifest pulls in the
// rest (netty, jackson, metrics, ...). Putting every jar of /usr/share/java on the path instead
// would bring several competing SLF4J bindings on machines with other Java packages; this list
// chooses log4j 1.2, which Debian's ZooKeeper is built against.
var debianJars = []string{"zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-log4j12.jar", "log4j-1.2.jar"}

// log4jConfig sends the server's log to stdout, which the harness writes to server.log.
const log4jConfig = `log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
`

// DefaultJavaOpts are the JVM flags used when Options.JavaOpts is nil: a bounded heap and a
// single-threaded collector suit a small shared CI machine; no hsperfdata files are left behind
// by killed JVMs.
var DefaultJavaOpts = []string{"-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:-UsePerfData"}

// missing says what keeps the reference server from running here: the tool, the Debian
// package that provides it, and what was found wrong; tool is "" when nothing is missing.
type missing struct{ tool, pkg, why string }

var check = sync.OnceValue(func() missing {
	if _, err := exec.LookPath("java"); err != nil {
		return missing{"java", "default-jre-headless", err.Error()}
	}
	var jars []string
	if env := os.Getenv(EnvClassPath); env != "" {
		for _, e := range filepath.SplitList(env) {
			if e != "" && !strings.HasSuffix(e, "*") { // a "dir/*" entry is java's wildcard
				jars = append(jars, e)
			}
		}
	} else {
		for _, jar := range debianJars {
			jars = append(jars, filepath.Join(javaDir, jar))
		}
	}
	for _, jar := range jars {
		if _, err := os.Stat(jar); err != nil {
			return missing{"Apache ZooKeeper 3.8 (" + filepath.Base(jar) + ")", "zookeeper", err.Error()}
		}
	}
	return missing{}
})

// Available reports whether the reference ZooKeeper can be started here, and if not, why.
// Tests call Require instead, which skips or fails.
func Available() (ok bool, why string) {
	m := check()
	if m.tool == "" {
		return true, ""
	}
	return false, fmt.Sprintf("%s is missing (apt-get install %s): %s", m.tool, m.pkg, m.why)
}

// Require ends the test when the reference ZooKeeper cannot be started here: it is skipped,
// or failed when ZKD_REQUIRE_TOOLS is set (see internal/needs).
func Require(t testing.TB) {
	t.Helper()
	if m := check(); m.tool != "" {
		needs.Missing(t, m.tool, m.pkg, m.why)
	}
}

// Options configures a reference server. The zero value is a fresh standalone server.
type Options struct {
	// TickTime is written to zoo.cfg; 0 means 2000.
	TickTime int
	// Config lines are appended to the generated zoo.cfg and override its settings (the last
	// occurrence of a key wins), except clientPort, clientPortAddress and dataDir, which the
	// harness relies on.
	Config []string
	// SystemProperties are Java system properties, as "-Dname=value" or "name=value", e.g.
	// "-Dznode.container.checkIntervalMs=1000". ZooKeeper turns zoo.cfg keys it does not know
	// into "zookeeper."-prefixed system properties while parsing, which beats a -D for the
	// same name (e.g. zookeeper.4lw.commands.whitelist).
	SystemProperties []string
	// JavaOpts are other JVM flags, e.g. "-Xmx1g". nil means DefaultJavaOpts.
	JavaOpts []string
	// DataDir is the data directory; it may hold the files of an earlier run (ZooKeeper's or
	// zkd's). "" means a fresh directory inside the test's temporary directory. The harness
	// never deletes a DataDir it was given.
	DataDir string
	// StartTimeout bounds the wait until the server serves; 0 means 60 s.
	StartTimeout time.Duration
	// MyID, when non-zero, is written to DataDir/myid: the member's id in an ensemble
	// (whose server.N lines go in Config).
	MyID int
	// AdminServer serves ZooKeeper's AdminServer (Jetty) on a reserved loopback port, see
	// Server.AdminAddr. It needs Debian's Jetty 9 jars (AdminServerJars); a test asking for
	// it skips (or fails, in CI) without them.
	AdminServer bool
	// NoWait returns as soon as the JVM runs, without waiting for it to serve: an
	// ensemble member serves only once a quorum is up. Use WaitServing.
	NoWait bool
	// Netty serves clients with NettyServerCnxnFactory (serverCnxnFactory), which TLS and
	// client.portUnification need, with NettyJars on the class path.
	Netty bool
	// SecureClientPort serves TLS on a reserved loopback port (secureClientPort and
	// secureClientPortAddress; see Server.SecureAddr); it implies Netty. The ssl.* keys go in
	// Config. The plaintext clientPort stays, and the harness's readiness check uses it.
	SecureClientPort bool
	// Prometheus runs ZooKeeper's PrometheusMetricsProvider (built by PrometheusJar) on a
	// reserved loopback port, see Server.MetricsAddr. Config lines may add other
	// metricsProvider.* keys (exportJvmInfo).
	Prometheus bool
}

// Server is a running reference ZooKeeper.
type Server struct {
	t           testing.TB
	addr        string
	adminAddr   string // "" unless Options.AdminServer
	secureAddr  string // "" unless Options.SecureClientPort
	metricsAddr string // "" unless Options.Prometheus
	promJar     string // "" unless Options.Prometheus
	dataDir     string
	cfgPath     string
	logPath     string
	proc        *proc.Proc
	portLock    io.Closer
}

// AdminServerJars are the jars, beside debianJars, that ZooKeeper's AdminServer needs:
// Jetty 9, the servlet API and Jackson (Debian: libjetty9-java, libservlet-api-java,
// libjackson2-*). Without them ZooKeeper logs "Unable to load jetty" and serves no HTTP.
var AdminServerJars = []string{
	"jetty9-server.jar", "jetty9-servlet.jar", "jetty9-http.jar", "jetty9-io.jar",
	"jetty9-util.jar", "jetty9-security.jar", "servlet-api.jar",
	"jackson-databind.jar", "jackson-core.jar", "jackson-annotations.jar",
}

// requireAdminJars ends the test through internal/needs when a jar of AdminServerJars is
// missing.
func requireAdminJars(t testing.TB) {
	t.Helper()
	for _, jar := range AdminServerJars {
		if _, err := os.Stat(filepath.Join(javaDir, jar)); err != nil {
			needs.Missing(t, "Jetty 9 for ZooKeeper's AdminServer ("+jar+")", "libjetty9-java", err.Error())
		}
	}
}

// AdminAddr is the AdminServer's host:port, "" unless Options.AdminServer was set.
func (s *Server) AdminAddr() string { return s.adminAddr }

// NettyJars are the jars, beside debianJars, that ZooKeeper's Netty connections (the server's
// NettyServerCnxnFactory and the client's ClientCnxnSocketNetty, so every TLS connection)
// need: zookeeper.jar's manifest names netty-buffer, -common, -handler, -transport and
// -transport-native-epoll, but not what they load in turn (Debian: libnetty-java). Without
// them ZooKeeper fails with NoClassDefFoundError io/netty/handler/codec/ByteToMessageDecoder.
var NettyJars = []string{"netty-codec.jar", "netty-resolver.jar", "netty-transport-native-unix-common.jar"}

// requireNettyJars ends the test through internal/needs when a jar of NettyJars is missing.
func requireNettyJars(t testing.TB) {
	t.Helper()
	for _, jar := range NettyJars {
		if _, err := os.Stat(filepath.Join(javaDir, jar)); err != nil {
			needs.Missing(t, "Netty 4 for ZooKeeper's TLS ("+jar+")", "libnetty-java", err.Error())
		}
	}
}

// ClientClassPath is the class path of ZooKeeper's Java client (org.apache.zookeeper.ZooKeeperMain,
// what zkCli.sh runs) able to speak TLS: ZooKeeper's jars, log4j and NettyJars, or
// ZKD_REFZK_CLASSPATH when set. It ends the test through internal/needs when they are missing.
func ClientClassPath(t testing.TB) string {
	t.Helper()
	Require(t)
	if env := os.Getenv(EnvClassPath); env != "" {
		return env
	}
	requireNettyJars(t)
	var cp []string
	for _, jar := range append(append([]string(nil), debianJars...), NettyJars...) {
		cp = append(cp, filepath.Join(javaDir, jar))
	}
	return strings.Join(cp, string(os.PathListSeparator))
}

// MetricsAddr is the Prometheus provider's host:port (it serves /metrics), "" unless
// Options.Prometheus was set.
func (s *Server) MetricsAddr() string { return s.metricsAddr }

// SecureAddr is the secure client port's host:port, "" unless Options.SecureClientPort was set.
func (s *Server) SecureAddr() string { return s.secureAddr }

// StartStandalone starts a standalone Apache ZooKeeper on 127.0.0.1 and returns once it serves
// requests. The server is killed when the test ends. It ends the test through Require when
// ZooKeeper is not installed, and fails it when the server does not start.
func StartStandalone(t testing.TB, opts Options) *Server {
	t.Helper()
	Require(t)
	if opts.AdminServer {
		requireAdminJars(t)
	}
	if opts.SecureClientPort {
		opts.Netty = true
	}
	if opts.Netty {
		requireNettyJars(t)
	}
	if opts.Prometheus {
		PrometheusJar(t) // builds it, or ends the test, before anything starts
	}
	dir := t.TempDir()
	// A port can still be taken between choosing it and the JVM binding it; try a few.
	for attempt := 1; ; attempt++ {
		s, err := start(t, dir, opts)
		if err == nil {
			return s
		}
		if attempt < 3 && errors.Is(err, errPortInUse) {
			t.Logf("refzk: %v; retrying", err)
			continue
		}
		t.Fatalf("refzk: %v", err)
	}
}

var errPortInUse = errors.New("port already in use")

// start launches one server in dir and waits until it serves. On error the process is gone.
func start(t testing.TB, dir string, opts Options) (*Server, error) {
	port, portLock, err := portlock.Reserve()
	if err != nil {
		return nil, err
	}
	s := &Server{
		t:        t,
		addr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		dataDir:  opts.DataDir,
		cfgPath:  filepath.Join(dir, "zoo.cfg"),
		logPath:  filepath.Join(dir, "server.log"),
		portLock: portLock,
	}
	if s.dataDir == "" {
		s.dataDir = filepath.Join(dir, "data")
	}
	if opts.AdminServer {
		adminPort, adminLock, err := portlock.Reserve()
		if err != nil {
			portLock.Close()
			return nil, err
		}
		s.adminAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(adminPort))
		s.portLock = multiCloser{portLock, adminLock}
		portLock = s.portLock
		opts.Config = append([]string{"admin.enableServer=true", "admin.serverAddress=127.0.0.1",
			"admin.serverPort=" + strconv.Itoa(adminPort)}, opts.Config...)
	}
	if opts.SecureClientPort {
		securePort, secureLock, err := portlock.Reserve()
		if err != nil {
			portLock.Close()
			return nil, err
		}
		s.secureAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(securePort))
		s.portLock = multiCloser{portLock, secureLock}
		portLock = s.portLock
		opts.Config = append([]string{"secureClientPort=" + strconv.Itoa(securePort),
			"secureClientPortAddress=127.0.0.1"}, opts.Config...)
	}
	if opts.Prometheus {
		metricsPort, metricsLock, err := portlock.Reserve()
		if err != nil {
			portLock.Close()
			return nil, err
		}
		s.metricsAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort))
		s.promJar = PrometheusJar(t) // built by StartStandalone; cached
		s.portLock = multiCloser{portLock, metricsLock}
		portLock = s.portLock
		opts.Config = append([]string{"metricsProvider.className=" + PrometheusProviderClass,
			"metricsProvider.httpHost=127.0.0.1", "metricsProvider.httpPort=" + strconv.Itoa(metricsPort)}, opts.Config...)
	}
	if opts.Netty {
		opts.Config = append([]string{"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory"}, opts.Config...)
	}
	if err := s.writeFiles(dir, port, opts); err != nil {
		portLock.Close()
		return nil, err
	}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		portLock.Close()
		return nil, fmt.Errorf("creating server log: %w", err)
	}
	defer logFile.Close() // the child has its own copy

	cmd := exec.Command("java", s.javaArgs(dir, opts)...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	s.proc, err = proc.Start(cmd)
	if err != nil {
		portLock.Close()
		return nil, err
	}
	go func() {
		<-s.proc.Done()
		s.portLock.Close()
	}()
	t.Cleanup(s.Kill)

	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	if opts.NoWait {
		return s, nil
	}
	if err := s.waitServing(timeout); err != nil {
		s.Kill()
		tail := s.logTail()
		if bytes.Contains(tail, []byte("Address already in use")) {
			err = fmt.Errorf("%s: %w", s.addr, errPortInUse)
		}
		return nil, fmt.Errorf("%w\n--- %s (tail) ---\n%s", err, s.logPath, tail)
	}
	return s, nil
}

func (s *Server) writeFiles(dir string, port int, opts Options) error {
	if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
		return fmt.Errorf("creating data dir: %w", err)
	}
	if opts.MyID != 0 {
		if err := os.WriteFile(filepath.Join(s.dataDir, "myid"), []byte(strconv.Itoa(opts.MyID)+"\n"), 0o644); err != nil {
			return fmt.Errorf("writing myid: %w", err)
		}
	}
	tick := opts.TickTime
	if tick == 0 {
		tick = 2000
	}
	cfg := []string{
		"tickTime=" + strconv.Itoa(tick),
		"initLimit=10",
		"syncLimit=5",
		"dataDir=" + escapeProperty(s.dataDir),
		"clientPort=" + strconv.Itoa(port),
		"clientPortAddress=127.0.0.1",
		"admin.enableServer=false", // its Jetty would want port 8080 in every server
		"maxClientCnxns=0",
		"4lw.commands.whitelist=*",
	}
	cfg = append(cfg, opts.Config...)
	if err := os.WriteFile(s.cfgPath, []byte(strings.Join(cfg, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing zoo.cfg: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log4j.properties"), []byte(log4jConfig), 0o644); err != nil {
		return fmt.Errorf("writing log4j.properties: %w", err)
	}
	return nil
}

func (s *Server) javaArgs(dir string, opts Options) []string {
	javaOpts := opts.JavaOpts
	if javaOpts == nil {
		javaOpts = DefaultJavaOpts
	}
	args := append([]string(nil), javaOpts...)
	for _, p := range opts.SystemProperties {
		if !strings.HasPrefix(p, "-D") {
			p = "-D" + p
		}
		args = append(args, p)
	}
	// The directory with log4j.properties goes first so log4j finds it as a resource.
	cp := []string{dir}
	if env := os.Getenv(EnvClassPath); env != "" {
		cp = append(cp, env)
	} else {
		for _, jar := range debianJars {
			cp = append(cp, filepath.Join(javaDir, jar))
		}
		if opts.AdminServer {
			for _, jar := range AdminServerJars {
				cp = append(cp, filepath.Join(javaDir, jar))
			}
		}
		if opts.Netty {
			for _, jar := range NettyJars {
				cp = append(cp, filepath.Join(javaDir, jar))
			}
		}
		if opts.Prometheus {
			for _, jar := range PrometheusJars {
				cp = append(cp, filepath.Join(javaDir, jar))
			}
		}
	}
	if s.promJar != "" {
		cp = append(cp, s.promJar)
	}
	return append(args, "-cp", strings.Join(cp, string(os.PathListSeparator)), mainClass, s.cfgPath)
}

// multiCloser closes each of its Closers.
type multiCloser []io.Closer

func (m multiCloser) Close() error {
	var errs []error
	for _, c := range m {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// escapeProperty protects the backslashes of a path from java.util.Properties.
func escapeProperty(v string) string { return strings.ReplaceAll(v, `\`, `\\`) }

var modeLine = regexp.MustCompile(`(?m)^Mode: \S+`)

// waitServing polls srvr until it prints a Mode line: ruok answers before the database is
// loaded, srvr's Mode line only once requests are served. The secure client port must accept
// connections too.
func (s *Server) waitServing(timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for {
		if out, err := s.Command("srvr"); err == nil && modeLine.MatchString(out) && s.secureListening() {
			select {
			case <-s.proc.Done(): // someone else answered on our port
			default:
				return nil
			}
		}
		select {
		case <-s.proc.Done():
			return fmt.Errorf("server exited before serving (exit code %d)", s.proc.ExitCode())
		case <-deadline.C:
			return fmt.Errorf("server not serving on %s after %v", s.addr, timeout)
		case <-poll.C:
		}
	}
}

// secureListening reports whether the secure client port (if any) accepts connections:
// ZooKeeper starts it after the plaintext port, so srvr can answer before it is bound.
func (s *Server) secureListening() bool {
	if s.secureAddr == "" {
		return true
	}
	nc, err := net.DialTimeout("tcp", s.secureAddr, 5*time.Second)
	if err != nil {
		return false
	}
	nc.Close()
	return true
}

// WaitServing waits until the server answers srvr with a Mode line (and its secure client
// port, if any, accepts connections).
func (s *Server) WaitServing(timeout time.Duration) error {
	if err := s.waitServing(timeout); err != nil {
		return fmt.Errorf("%w\n--- %s (tail) ---\n%s", err, s.logPath, s.logTail())
	}
	return nil
}

// Addr is the client address, "127.0.0.1:port".
func (s *Server) Addr() string { return s.addr }

// DataDir is the server's data directory (ZooKeeper keeps its files in DataDir/version-2).
func (s *Server) DataDir() string { return s.dataDir }

// ConfigPath is the zoo.cfg the server was started with.
func (s *Server) ConfigPath() string { return s.cfgPath }

// LogPath is the file with the server's log and the JVM's output.
func (s *Server) LogPath() string { return s.logPath }

// PID is the JVM's process id; it is also the id of the JVM's process group.
func (s *Server) PID() int { return s.proc.PID() }

// Command sends a four-letter word and returns the whole answer.
func (s *Server) Command(cmd string) (string, error) {
	conn, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", err
	}
	out, err := io.ReadAll(conn)
	return string(out), err
}

// Stop ends the server cleanly (SIGTERM to its process group) and waits for it; after 30 s it
// is killed. Calling Stop or Kill again does nothing.
func (s *Server) Stop() {
	s.t.Helper()
	if !s.signal(syscall.SIGTERM) {
		return
	}
	if s.proc.Wait(30*time.Second) != nil {
		s.t.Logf("refzk: %s did not stop within 30s of SIGTERM; killing it", s.addr)
		s.Kill()
	}
}

// Kill ends the server with SIGKILL to its process group and waits for it.
func (s *Server) Kill() {
	s.t.Helper()
	if err := s.proc.Kill(30 * time.Second); err != nil {
		s.t.Errorf("refzk: java: %v", err)
	}
}

// Signal sends sig (SIGSTOP, SIGCONT...) to the server's process group; proc.ErrExited
// when it has exited.
func (s *Server) Signal(sig syscall.Signal) error { return s.proc.Signal(sig) }

// Exited reports whether the server's process has exited.
func (s *Server) Exited() bool { return s.proc.Exited() }

// signal sends sig to the server's process group, unless it has exited. It reports whether
// it signalled.
func (s *Server) signal(sig syscall.Signal) bool {
	err := s.proc.Signal(sig)
	if errors.Is(err, proc.ErrExited) {
		return false
	}
	if err != nil {
		s.t.Errorf("refzk: %v", err)
	}
	return true
}

// logTail returns the end of the server log.
func (s *Server) logTail() []byte {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return []byte(err.Error())
	}
	const max = 6000
	if len(b) > max {
		b = b[len(b)-max:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return b
}
