package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/peer"
	"github.com/zkd-io/zkd/server"
)

func jaasQuorumText(pass string) string {
	return fmt.Sprintf(`QuorumServer {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_zkd="quorum-secret"
    user_other="other-secret";
};
QuorumLearner {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="zkd"
    password="%s";
};
`, pass)
}

// writeTemp writes a file in a new temporary directory and returns its path.
func writeTemp(t *testing.T, name, text string) string {
	t.Helper()
	return writeFile(t, t.TempDir(), name, text)
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// quorumPair runs one exchange between a learner and a server setting over loopback and
// reports the learner's error.
func quorumPair(t *testing.T, learner, srv *peer.QuorumSASL) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer nc.Close()
		done <- srv.Authenticate(nc, bufio.NewReader(nc))
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	lerr := learner.Learn(nc)
	nc.Close()
	<-done
	return lerr
}

// TestQuorumSASLFromJAAS: zoo.cfg's quorum.auth keys and the JAAS file's QuorumServer and
// QuorumLearner sections (names from the saslLoginContext keys) configure quorum SASL; the
// learner and server it builds authenticate each other, and a wrong password fails.
func TestQuorumSASLFromJAAS(t *testing.T) {
	good := writeTemp(t, "jaas.conf", strings.NewReplacer("QuorumServer", "QS", "QuorumLearner", "QL").Replace(jaasQuorumText("quorum-secret")))
	cfg, err := config.Parse(strings.NewReader("tickTime=2000\ndataDir=/tmp/x\nclientPort=2181\n" +
		"quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\nquorum.auth.serverRequireSasl=true\n" +
		"quorum.auth.server.saslLoginContext=QS\nquorum.auth.learner.saslLoginContext=QL\n"))
	if err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "SERVER_JVMFLAGS" {
			return "-Djava.security.auth.login.config=" + good
		}
		return ""
	}
	var sc server.Config
	if err := applyQuorumSASL(&cfg.Security, &sc, discard, env); err != nil {
		t.Fatal(err)
	}
	q := sc.QuorumSASL
	if q == nil || !q.LearnerRequired || !q.ServerRequired {
		t.Fatalf("quorum SASL %+v", q)
	}
	// A JAAS file for the quorum only leaves the client port without SASL rather than
	// stopping start-up.
	if err := applySASL(&cfg.Security, &sc, discard, env); err != nil || sc.NewSASLServer != nil {
		t.Fatalf("client SASL from a quorum-only JAAS file: %v", err)
	}
	if err := quorumPair(t, q, q); err != nil {
		t.Fatalf("exchange: %v", err)
	}
	bad := writeTemp(t, "jaas.conf", strings.NewReplacer("QuorumServer", "QS", "QuorumLearner", "QL").Replace(jaasQuorumText("wrong")))
	cfg.Security.JAASConfig = bad
	var sc2 server.Config
	if err := applyQuorumSASL(&cfg.Security, &sc2, discard, env); err != nil {
		t.Fatal(err)
	}
	if err := quorumPair(t, sc2.QuorumSASL, q); !errors.Is(err, peer.ErrQuorumAuth) {
		t.Fatalf("wrong password: %v", err)
	}
}

func TestQuorumSASLConfigErrors(t *testing.T) {
	krb := `QuorumServer {
    com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k" principal="zkquorum/h@R";
};
QuorumLearner {
    org.apache.zookeeper.server.auth.DigestLoginModule required username="zkd" password="x";
};
`
	for _, tc := range []struct {
		name, jaas, want string
	}{
		{"no JAAS file", "", "needs a JAAS file"},
		{"missing file", "/nonexistent/jaas.conf", "java.security.auth.login.config"},
		{"no QuorumLearner", `QuorumServer { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="b"; };`, `"QuorumLearner"`},
		{"no QuorumServer", `QuorumLearner { org.apache.zookeeper.server.auth.DigestLoginModule required username="a" password="b"; };`, `"QuorumServer"`},
		{"kerberos", krb, "Kerberos"},
		{"learner without password", `QuorumServer { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="b"; };
QuorumLearner { org.apache.zookeeper.server.auth.DigestLoginModule required username="a"; };`, "username and password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sec := config.Security{QuorumSASL: true}
			switch {
			case strings.HasPrefix(tc.jaas, "/"):
				sec.JAASConfig = tc.jaas
			case tc.jaas != "":
				sec.JAASConfig = writeTemp(t, "jaas.conf", tc.jaas)
			}
			var sc server.Config
			err := applyQuorumSASL(&sec, &sc, discard, func(string) string { return "" })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
			if tc.name == "kerberos" && !errors.Is(err, config.ErrNotImplemented) {
				t.Fatalf("err %v is not ErrNotImplemented", err)
			}
		})
	}
	// Off: nothing is read and nothing configured.
	var sc server.Config
	if err := applyQuorumSASL(&config.Security{}, &sc, discard, func(string) string { return "" }); err != nil || sc.QuorumSASL != nil {
		t.Fatalf("quorum SASL off: %v %+v", err, sc.QuorumSASL)
	}
}

// TestProcessEnsembleQuorumSASL: three zkd processes whose zoo.cfg turns on quorum SASL with
// every requirement, the JAAS file named in zoo.cfg, form an ensemble and replicate.
func TestProcessEnsembleQuorumSASL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	jaas := writeTemp(t, "jaas.conf", jaasQuorumText("quorum-secret"))
	e := startProcEnsembleCfg(t, 3, 200, false, []string{
		"quorum.auth.enableSasl=true", "quorum.auth.learnerRequireSasl=true",
		"quorum.auth.serverRequireSasl=true", "java.security.auth.login.config=" + jaas,
	})
	c := connectAll(t, e.addrs)
	if _, err := c.Create("/q", []byte("sasl"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for i, p := range e.procs {
		waitForLog(t, p.logText, fmt.Sprintf("server %d's quorum SASL setting", i+1), func(log string) bool {
			return strings.Contains(log, "quorum SASL")
		})
	}
	leader := e.leader()
	waitForLog(t, e.procs[leader].logText, "the leader's two authenticated learners", func(log string) bool {
		return strings.Count(log, "quorum learner authenticated with SASL") >= 2
	})
}
