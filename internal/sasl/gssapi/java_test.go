package gssapi

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/krbtest"
	"github.com/zkd-io/zkd/internal/testing/needs"
)

// TestJavaClient runs Java's GssKrb5Client (JDK's SASL GSSAPI, what ZooKeeper's Java client
// uses) against the server, with tickets from the loopback KDC.
func TestJavaClient(t *testing.T) {
	java := needs.Command(t, "java", "default-jre-headless")
	e := startKDC(t)
	jc := e.kdc.WriteJavaClient(t, t.TempDir(), krbtest.ClientPrincipal, e.kdc.ClientKeytab)
	src, err := filepath.Abs("testdata/SaslGssapiClient.java")
	if err != nil {
		t.Fatal(err)
	}
	for _, mutual := range []bool{false, true} {
		t.Run(fmt.Sprintf("mutual=%v", mutual), func(t *testing.T) {
			args := append(append([]string{}, jc.JVMFlags...), src)
			if mutual {
				args = append(args, "mutual")
			}
			// The JVM compiles the source first: generous on a loaded machine.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, java, args...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			})
			s := e.server(t, e.svc)
			if err := driveJava(s, bufio.NewReader(stdout), stdin); err != nil {
				t.Fatalf("%v\njava stderr:\n%s\nKDC log:\n%s", err, stderr.String(), e.kdc.Log())
			}
			if got := s.AuthorizationID(); got != krbtest.ClientPrincipal {
				t.Fatalf("AuthorizationID %q", got)
			}
		})
	}
}

// driveJava answers the Java client's responses with the server's challenges.
func driveJava(s *Server, out *bufio.Reader, in io.Writer) error {
	for range 10 {
		line, err := out.ReadString('\n')
		if err != nil {
			return fmt.Errorf("reading java: %w", err)
		}
		line = strings.TrimSpace(line)
		// An empty response is "C" once trimmed.
		if line != "C" && !strings.HasPrefix(line, "C ") {
			return fmt.Errorf("java said %q", line)
		}
		resp, err := base64.StdEncoding.DecodeString(strings.TrimSpace(line[1:]))
		if err != nil {
			return err
		}
		chal, err := s.Step(resp)
		if err != nil {
			return fmt.Errorf("server refused java: %w", err)
		}
		if s.Complete() {
			if _, err := io.WriteString(in, "OK\n"); err != nil {
				return err
			}
			line, err := out.ReadString('\n')
			if err != nil {
				return fmt.Errorf("reading java's end: %w", err)
			}
			if strings.TrimSpace(line) != "DONE true" {
				return fmt.Errorf("java ended with %q", line)
			}
			return nil
		}
		if _, err := io.WriteString(in, "S "+base64.StdEncoding.EncodeToString(chal)+"\n"); err != nil {
			return err
		}
	}
	return fmt.Errorf("no end after 10 rounds")
}

// TestJavaServer runs the Go client against Java's GssKrb5Server (what ZooKeeper's server
// uses), with tickets from the loopback KDC.
func TestJavaServer(t *testing.T) {
	java := needs.Command(t, "java", "default-jre-headless")
	e := startKDC(t)
	dir := t.TempDir()
	jaas := filepath.Join(dir, "jaas-server.conf")
	conf := fmt.Sprintf(`Server {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true
  keyTab=%q
  storeKey=true
  useTicketCache=false
  isInitiator=false
  doNotPrompt=true
  principal=%q;
};
`, e.kdc.ServiceKeytab, krbtest.ServicePrincipal)
	if err := os.WriteFile(jaas, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := filepath.Abs("testdata/SaslGssapiServer.java")
	if err != nil {
		t.Fatal(err)
	}
	kc := e.keytabClient(t)
	for _, mutual := range []bool{false, true} {
		t.Run(fmt.Sprintf("mutual=%v", mutual), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, java, "-Djava.security.auth.login.config="+jaas,
				"-Djava.security.krb5.conf="+e.kdc.Krb5Conf, "-Djavax.security.auth.useSubjectCredsOnly=true", src)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			})
			c, err := NewClient(ClientConfig{Kerberos: kc, Service: "zookeeper/localhost", Mutual: mutual})
			if err != nil {
				t.Fatal(err)
			}
			out := bufio.NewReader(stdout)
			msg, err := c.Step(nil)
			for i := 0; err == nil && i < 10; i++ {
				if _, err = io.WriteString(stdin, "C "+base64.StdEncoding.EncodeToString(msg)+"\n"); err != nil {
					break
				}
				var line string
				if line, err = out.ReadString('\n'); err != nil {
					break
				}
				line = strings.TrimSpace(line)
				if id, ok := strings.CutPrefix(line, "DONE "); ok {
					if !c.Complete() || id != krbtest.ClientPrincipal {
						t.Fatalf("java completed with %q, client complete %v", id, c.Complete())
					}
					return
				}
				if line != "S" && !strings.HasPrefix(line, "S ") {
					t.Fatalf("java server said %q\n%s", line, stderr.String())
				}
				var chal []byte
				if chal, err = base64.StdEncoding.DecodeString(strings.TrimSpace(line[1:])); err != nil {
					break
				}
				msg, err = c.Step(chal)
			}
			t.Fatalf("exchange with java did not complete: %v\njava stderr:\n%s", err, stderr.String())
		})
	}
}
