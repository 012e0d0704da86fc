package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/testing/krbtest"
	"github.com/zkd-io/zkd/internal/testing/needs"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/jute"
)

// These tests prove SASL with ZooKeeper's own clients (kazoo, zkCli.sh / the Java client)
// against zkd started from a zoo.cfg and a JAAS file exactly as Apache ZooKeeper 3.8 is, and
// against ZooKeeper itself configured the same way: what each client prints must be equal.

// saslProvider is the zoo.cfg line that turns on the sasl ACL scheme on both servers.
const saslProvider = "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"

// jaasDigest is the JAAS file both servers read: DIGEST-MD5 users bob and alice.
const jaasDigest = `Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_bob="bobsecret"
    user_alice="alicesecret";
};
`

// allExtensions is the zoo.cfg line that turns every extension beyond ZooKeeper on.
const allExtensions = config.ExtensionsKey + "=all"

// saslServer is one server under test.
type saslServer struct {
	name string // "zookeeper" or "zkd"
	addr string
	log  func() string
}

// startSASLServers starts Apache ZooKeeper 3.8 and zkd, each from a zoo.cfg with cfg's lines
// and with -Djava.security.auth.login.config=jaas plus props (system properties, "name=value")
// on the JVM line: for ZooKeeper on java's command line, for zkd in SERVER_JVMFLAGS, where
// ZooKeeper's scripts put them.
func startSASLServers(t *testing.T, jaas string, cfg []string, props ...string) []saslServer {
	t.Helper()
	refzk.Require(t)
	props = append([]string{"java.security.auth.login.config=" + jaas}, props...)
	ref := refzk.StartStandalone(t, refzk.Options{Config: cfg, SystemProperties: props})
	dir := t.TempDir()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	// zkd runs with every extension on: kazoo and zkCli.sh are stock clients, which must see
	// exactly what ZooKeeper shows them whatever the server enables.
	text := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n%s\n%s\n",
		filepath.Join(dir, "data"), port, allExtensions, strings.Join(cfg, "\n"))
	path := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var flags []string
	for _, p := range props {
		flags = append(flags, "-D"+p)
	}
	p := spawnEnv(t, addr, []string{"--config", path, "--log-level", "info"},
		[]string{"SERVER_JVMFLAGS=-Xmx512m " + strings.Join(flags, " ")})
	p.waitMode(t, func(m string) bool { return m == "standalone" })
	refLog := func() string {
		b, err := os.ReadFile(ref.LogPath())
		if err != nil {
			return err.Error()
		}
		return string(b)
	}
	return []saslServer{{"zookeeper", ref.Addr(), refLog}, {"zkd", addr, p.logText}}
}

// writeFile writes a file in dir and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runBounded runs cmd, killing it after limit: a client that never gives up (the hang the
// issue describes) fails the test instead of hanging it. It returns stdout and stderr.
func runBounded(t *testing.T, limit time.Duration, name string, args []string, env []string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("killed after %v: %w", limit, ctx.Err())
	}
	return stdout.String(), stderr.String(), err
}

// compareOutputs fails unless every server's lines equal the first's (ZooKeeper's).
func compareOutputs(t *testing.T, servers []saslServer, got [][]string) {
	t.Helper()
	for i := 1; i < len(got); i++ {
		if strings.Join(got[i], "\n") != strings.Join(got[0], "\n") {
			t.Errorf("%s and %s differ:\n--- %s\n%s\n--- %s\n%s", servers[0].name, servers[i].name,
				servers[0].name, strings.Join(got[0], "\n"), servers[i].name, strings.Join(got[i], "\n"))
		}
	}
}

// kazooSASLScript logs in with kazoo's sasl_options and prints one line per observation.
// Every kazoo call has a timeout, and the script's caller a limit, so nothing can hang.
const kazooSASLScript = `
import os, sys, time, logging
from kazoo.client import KazooClient
from kazoo.protocol.states import KeeperState
from kazoo.exceptions import AuthFailedError, ConnectionClosedError
from kazoo.security import make_acl

logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
addr, mode = sys.argv[1], sys.argv[2]

def client(user=None, password=None, **kw):
    opts = None
    if user is not None:
        opts = {"mechanism": "DIGEST-MD5", "username": user, "password": password}
    # max_tries bounds kazoo's reconnecting: a refused login must end, not loop.
    return KazooClient(hosts=addr, timeout=10, sasl_options=opts,
                       connection_retry={"max_tries": 2, "delay": 0.2, "max_delay": 1}, **kw)

def run(name, f):
    try:
        r = f()
    except Exception as e:
        r = "raised " + type(e).__name__
    print("%s: %s" % (name, r), flush=True)

def start(c):
    c.start(timeout=20)
    return "connected"

def start_refused(c):
    # kazoo reports CONNECTED before its SASL exchange, AUTH_FAILED when the server refuses
    # it, then CLOSED; start() returns "connected" or a time-out depending on which of its
    # own threads looks first. The states it passes through do not race.
    seen = []
    callback = c._session_callback
    def record(state):
        seen.append(state)
        return callback(state)
    c._session_callback = record
    c.start_async()
    for _ in range(200):
        if KeeperState.AUTH_FAILED in seen:
            return KeeperState.AUTH_FAILED
        time.sleep(0.1)
    return "states %s" % seen

def refused(f):
    # After AUTH_FAILED a request fails with AuthFailedError, or ConnectionClosedError once
    # kazoo has closed the client: the same refusal, at kazoo's own pace.
    try:
        f()
        return "served"
    except (AuthFailedError, ConnectionClosedError):
        return "refused"

def stop(c):
    c.stop()
    c.close()

if mode == "digest":
    bob = client("bob", "bobsecret")
    run("bob start", lambda: start(bob))
    acl = [make_acl("sasl", "bob", all=True)]
    run("bob create", lambda: bob.create("/kz-sasl", b"bobs", acl=acl))
    run("bob get", lambda: bob.get("/kz-sasl")[0])
    run("bob acl", lambda: [str(a) for a in bob.get_acls("/kz-sasl")[0]])
    anon = client()
    run("anon start", lambda: start(anon))
    run("anon get", lambda: anon.get("/kz-sasl")[0])
    run("anon set", lambda: anon.set("/kz-sasl", b"x"))
    alice = client("alice", "alicesecret")
    run("alice start", lambda: start(alice))
    run("alice get", lambda: alice.get("/kz-sasl")[0])
    stop(alice)
    eve = client("bob", "not-bobs-password")
    run("wrong password start", lambda: start_refused(eve))
    run("wrong password get", lambda: refused(lambda: eve.get("/")))
    stop(eve)
    nobody = client("mallory", "whatever")
    run("unknown user start", lambda: start_refused(nobody))
    run("unknown user get", lambda: refused(lambda: nobody.get("/")))
    stop(nobody)
    run("bob still served", lambda: bob.get("/kz-sasl")[0])
    run("bob delete", lambda: bob.delete("/kz-sasl"))
    stop(anon)
    stop(bob)
elif mode == "required":
    anon = client()
    run("anon start", lambda: start(anon))
    # kazoo 2.8 does not know SESSIONCLOSEDREQUIRESASLAUTH (-124): its connection thread
    # dies of "Invalid error code" and the request is never answered, so wait a bounded time.
    run("anon get", lambda: anon.get_async("/").get(timeout=10))
    stop(anon)
    bob = client("bob", "bobsecret")
    run("bob start", lambda: start(bob))
    run("bob create", lambda: bob.create("/kz-req", b"r"))
    run("bob get", lambda: bob.get("/kz-req")[0])
    run("bob delete", lambda: bob.delete("/kz-req"))
    stop(bob)
    eve = client("bob", "not-bobs-password")
    run("wrong password start", lambda: start(eve))
    run("wrong password get", lambda: eve.get("/"))
    stop(eve)
print("done", flush=True)
# A client thread kazoo left behind must not keep the interpreter alive.
os._exit(0)
`

// runKazooSASL runs kazooSASLScript in mode against every server and compares the outputs.
func runKazooSASL(t *testing.T, servers []saslServer, mode string) [][]string {
	t.Helper()
	python, pythonPath := needs.KazooSASL(t)
	script := writeFile(t, t.TempDir(), "kazoo_sasl.py", kazooSASLScript)
	var got [][]string
	for _, s := range servers {
		stdout, stderr, err := runBounded(t, 3*time.Minute, python, []string{script, s.addr, mode},
			[]string{"PYTHONPATH=" + pythonPath})
		lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
		if err != nil || lines[len(lines)-1] != "done" {
			t.Fatalf("kazoo (%s) against %s: %v\nstdout:\n%s\nstderr:\n%s\nserver log:\n%s",
				mode, s.name, err, stdout, stderr, tail(s.log(), 40))
		}
		t.Logf("kazoo (%s) against %s:\n%s", mode, s.name, stdout)
		got = append(got, lines)
	}
	compareOutputs(t, servers, got)
	return got
}

// TestKazooSASLDigest: kazoo logs in with DIGEST-MD5 to zkd and to ZooKeeper 3.8 configured
// from the same JAAS file: bob creates a node only sasl:bob may use and reads it, an
// unauthenticated client and alice get NOAUTH, a wrong password and an unknown user are
// refused (kazoo's AUTH_FAILED state, and no request served) and end, and bob is served
// throughout.
func TestKazooSASLDigest(t *testing.T) {
	jaas := writeFile(t, t.TempDir(), "jaas.conf", jaasDigest)
	servers := startSASLServers(t, jaas, []string{saslProvider})
	got := runKazooSASL(t, servers, "digest")
	want := map[string]string{
		"bob start":            "connected",
		"bob get":              "b'bobs'",
		"bob acl":              `["ACL(perms=31, acl_list=['ALL'], id=Id(scheme='sasl', id='bob'))"]`,
		"anon get":             "raised NoAuthError",
		"alice get":            "raised NoAuthError",
		"wrong password start": "AUTH_FAILED",
		"wrong password get":   "refused",
		"unknown user start":   "AUTH_FAILED",
		"unknown user get":     "refused",
		"bob still served":     "b'bobs'",
	}
	checkLines(t, got[len(got)-1], want)
	waitForLog(t, servers[1].log, "the failed logins", func(log string) bool {
		return strings.Contains(log, "client failed to SASL authenticate")
	})
}

// checkLines fails for each "name: value" in want that lines do not hold.
func checkLines(t *testing.T, lines []string, want map[string]string) {
	t.Helper()
	have := map[string]string{}
	for _, l := range lines {
		if k, v, ok := strings.Cut(l, ": "); ok {
			have[k] = v
		}
	}
	for k, v := range want {
		if have[k] != v {
			t.Errorf("%s: %q, want %q", k, have[k], v)
		}
	}
}

// TestKazooSASLRequired: with sessionRequireClientSASLAuth=true, or enforce.auth.enabled with
// enforce.auth.schemes=sasl, kazoo without SASL gets a session whose first request is refused
// (SESSIONCLOSEDREQUIRESASLAUTH, which kazoo 2.8 does not know) and the connection closed,
// while kazoo with SASL is served; as in ZooKeeper 3.8 configured the same way.
func TestKazooSASLRequired(t *testing.T) {
	jaas := writeFile(t, t.TempDir(), "jaas.conf", jaasDigest)
	for name, cfg := range map[string][]string{
		"sessionRequireClientSASLAuth": {saslProvider, "sessionRequireClientSASLAuth=true"},
		"enforce.auth.schemes=sasl":    {saslProvider, "enforce.auth.enabled=true", "enforce.auth.schemes=sasl"},
	} {
		t.Run(name, func(t *testing.T) {
			servers := startSASLServers(t, jaas, cfg)
			got := runKazooSASL(t, servers, "required")
			// A refused login is answered SESSIONCLOSEDREQUIRESASLAUTH here, which kazoo's
			// SASL loop does not know either: it sees the connection lost.
			checkLines(t, got[len(got)-1], map[string]string{
				"anon get":           "raised KazooTimeoutError",
				"bob start":          "connected",
				"bob get":            "b'r'",
				"wrong password get": "raised ConnectionLoss",
			})
			for _, s := range servers {
				c := rawzk.Connect(t, s.addr)
				if h := c.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/"}, &jute.GetDataResponse{}); h.Err != jute.ErrSessionClosedRequireSASL {
					t.Errorf("%s: unauthenticated getData: %v, want SESSIONCLOSEDREQUIRESASLAUTH", s.name, h.Err)
				}
				if !c.Closed() {
					t.Errorf("%s: connection kept after SESSIONCLOSEDREQUIRESASLAUTH", s.name)
				}
				c = rawzk.Connect(t, s.addr)
				if code := saslLogin(t, c, "bob", "not-bobs-password"); code != jute.ErrSessionClosedRequireSASL {
					t.Errorf("%s: wrong password: %v, want SESSIONCLOSEDREQUIRESASLAUTH", s.name, code)
				}
				if !c.Closed() {
					t.Errorf("%s: connection kept after a refused login", s.name)
				}
			}
		})
	}
}

// jaasClient is a Java client's JAAS file for DIGEST-MD5 (ZooKeeper's Client section).
func jaasClient(user, password string) string {
	return fmt.Sprintf("Client {\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n"+
		"    username=%q\n    password=%q;\n};\n", user, password)
}

// runZkCli feeds commands to zkCli.sh on stdin against addr, with jvmFlags in
// CLIENT_JVMFLAGS, and returns its output. The shell is killed after a generous limit.
func runZkCli(t *testing.T, addr string, jvmFlags []string, commands ...string) string {
	t.Helper()
	zkCli := needs.ZkCli(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, zkCli, "-server", addr, "-waitforconnection", "-timeout", "30000")
	logDir := t.TempDir()
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS=-Xmx256m -XX:+UseSerialGC -XX:-UsePerfData "+strings.Join(jvmFlags, " "),
		"ZOO_LOG_DIR="+logDir, "ZOO_LOG4J_PROP=WARN,CONSOLE")
	cmd.Stdin = strings.NewReader(strings.Join(append(commands, "quit"), "\n") + "\n")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("zkCli.sh against %s did not end within 2 minutes:\n%s", addr, out)
	}
	if err != nil {
		t.Logf("zkCli.sh against %s: %v", addr, err)
	}
	return string(out)
}

// TestZkCliSASLDigest: zkCli.sh (the Java client) with a Client JAAS section logs in to zkd
// and to ZooKeeper 3.8 with DIGEST-MD5: whoami shows sasl bob, a node with a sasl:bob ACL
// is bob's; with a wrong password the login is refused and requests fail AuthFailed.
func TestZkCliSASLDigest(t *testing.T) {
	dir := t.TempDir()
	jaas := writeFile(t, dir, "jaas.conf", jaasDigest)
	good := writeFile(t, dir, "client-good.conf", jaasClient("bob", "bobsecret"))
	bad := writeFile(t, dir, "client-bad.conf", jaasClient("bob", "not-bobs-password"))
	servers := startSASLServers(t, jaas, []string{saslProvider})
	for _, s := range servers {
		out := runZkCli(t, s.addr, []string{"-Djava.security.auth.login.config=" + good},
			"whoami", "create /zc bobs sasl:bob:cdrwa", "getAcl /zc", "get /zc")
		t.Logf("zkCli.sh as bob against %s:\n%s", s.name, out)
		for _, want := range []string{"sasl: bob", "'sasl,'bob", "bobs"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: zkCli.sh as bob: no %q in its output", s.name, want)
			}
		}
		out = runZkCli(t, s.addr, []string{"-Djava.security.auth.login.config=" + bad}, "whoami", "get /zc")
		t.Logf("zkCli.sh with a wrong password against %s:\n%s", s.name, out)
		if strings.Contains(out, "sasl: bob") || !strings.Contains(out, "AuthFailed") {
			t.Errorf("%s: zkCli.sh with a wrong password was not refused", s.name)
		}
	}
}

// TestZkCliSASLGSSAPI: zkCli.sh logs in with Kerberos (GSSAPI) as client@EXAMPLE.COM, from a
// loopback MIT KDC, to zkd and to ZooKeeper 3.8, each with a Server section naming the
// service keytab of zookeeper/localhost: whoami shows sasl client@EXAMPLE.COM, or "client" with
// kerberos.removeRealmFromPrincipal=true, as SaslServerCallbackHandler names it; a client
// whose keytab holds stale keys is refused.
func TestZkCliSASLGSSAPI(t *testing.T) {
	kdc := krbtest.Start(t)
	dir := t.TempDir()
	jaas := writeFile(t, dir, "jaas.conf", fmt.Sprintf(`Server {
    com.sun.security.auth.module.Krb5LoginModule required
    useKeyTab=true
    keyTab=%q
    storeKey=true
    useTicketCache=false
    principal=%q;
};
`, kdc.ServiceKeytab, krbtest.ServicePrincipal))
	client := kdc.WriteJavaClient(t, t.TempDir(), krbtest.ClientPrincipal, kdc.ClientKeytab)
	// A keytab whose keys the KDC no longer has: written, then the key changed.
	const stale = "stale@" + krbtest.Realm
	kdc.AddPrincipal(t, stale, "")
	staleKeytab := filepath.Join(t.TempDir(), "stale.keytab")
	kdc.WriteKeytab(t, stale, staleKeytab)
	kdc.Kadmin(t, "cpw -randkey "+stale)
	staleClient := kdc.WriteJavaClient(t, t.TempDir(), stale, staleKeytab)

	for _, tc := range []struct {
		removeRealm bool
		id          string
	}{{false, krbtest.ClientPrincipal}, {true, "client"}} {
		t.Run(fmt.Sprintf("removeRealmFromPrincipal=%v", tc.removeRealm), func(t *testing.T) {
			cfg := []string{saslProvider, fmt.Sprintf("kerberos.removeRealmFromPrincipal=%v", tc.removeRealm)}
			servers := startSASLServers(t, jaas, cfg, "java.security.krb5.conf="+kdc.Krb5Conf)
			for _, s := range servers {
				// The client names the server zookeeper/<host it dialled>: localhost.
				addr := strings.Replace(s.addr, "127.0.0.1", "localhost", 1)
				out := runZkCli(t, addr, client.JVMFlags, "whoami",
					"create /gss x sasl:"+tc.id+":cdrwa", "get /gss")
				t.Logf("zkCli.sh with Kerberos against %s:\n%s", s.name, out)
				if !strings.Contains(out, "sasl: "+tc.id+"\n") || !strings.Contains(out, "Created /gss") ||
					!strings.Contains(out, "\nx\n") {
					t.Errorf("%s: zkCli.sh as %s: no sasl id %q, or the node was not its own:\n%s\nserver log:\n%s",
						s.name, krbtest.ClientPrincipal, tc.id, out, tail(s.log(), 30))
				}
				out = runZkCli(t, addr, staleClient.JVMFlags, "whoami")
				t.Logf("zkCli.sh with a stale keytab against %s:\n%s", s.name, out)
				if strings.Contains(out, "sasl: ") || !strings.Contains(out, "AuthFailed") {
					t.Errorf("%s: a client with a stale keytab was not refused", s.name)
				}
			}
		})
	}
}

// TestSASLBadTokens: garbage and truncated SASL tokens from a raw client, on zkd and on
// ZooKeeper 3.8 with the same DIGEST-MD5 setup: each is answered AUTHFAILED and its
// connection closed (zkd logs why), and a bystander session is served throughout.
func TestSASLBadTokens(t *testing.T) {
	jaas := writeFile(t, t.TempDir(), "jaas.conf", jaasDigest)
	servers := startSASLServers(t, jaas, []string{saslProvider})
	outcomes := map[string]string{} // ZooKeeper's, by case
	for _, s := range servers {
		bystander := rawzk.Connect(t, s.addr)
		if code := saslLogin(t, bystander, "bob", "bobsecret"); code != jute.OK {
			t.Fatalf("%s: bob: %v", s.name, code)
		}
		for name, tokens := range map[string][][]byte{
			// DIGEST-MD5 servers ignore the client's initial response: answered, kept.
			"garbage first token":   {[]byte("\x00\xff garbage \x01")},
			"null token":            {nil},
			"garbage after a nonce": {{}, []byte("username=\"bob\",nonce=")},
			"truncated response":    {{}, []byte("username=\"bob\",realm=\"zk-sasl-md5\",nonce=\"abc")},
			"not utf-8":             {{}, []byte{0xc3, 0x28, '=', '"', 0xff}},
		} {
			c := rawzk.Connect(t, s.addr)
			var steps []string
			for _, tok := range tokens {
				h, err := c.Reply(c.Send(jute.OpSASL, &jute.SASLToken{Token: tok}), &jute.SASLToken{})
				if err != nil {
					steps = append(steps, "closed without a reply")
					break
				}
				steps = append(steps, fmt.Sprint(h.Err))
				if h.Err != jute.OK {
					break
				}
			}
			var closed bool
			switch steps[len(steps)-1] {
			case "closed without a reply":
				closed = true
			case fmt.Sprint(jute.OK): // answered mid-exchange: the connection serves on
				h, err := c.Reply(c.Send(jute.OpExists, &jute.ExistsRequest{Path: "/"}), &jute.ExistsResponse{})
				closed = err != nil || h.Err != jute.OK
			default:
				closed = c.Closed()
			}
			got := fmt.Sprintf("%v, closed %v", steps, closed)
			t.Logf("%s: %s: %s", s.name, name, got)
			if s.name == "zookeeper" {
				outcomes[name] = got
			} else if got != outcomes[name] {
				t.Errorf("%s: zkd: %s, ZooKeeper: %s", name, got, outcomes[name])
			}
			if h := bystander.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/"}, &jute.GetDataResponse{}); h.Err != jute.OK {
				t.Fatalf("%s: bystander after %s: %v", s.name, name, h.Err)
			}
		}
	}
	// The refusal is answered before it is logged: wait for the third line.
	waitForLog(t, servers[1].log, "a failed SASL login for each of the three refusals", func(log string) bool {
		return strings.Count(log, "client failed to SASL authenticate") >= 3
	})
}
