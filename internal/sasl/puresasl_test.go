package sasl

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/needs"
)

// TestPureSASLClient logs in to this package's server with pure-sasl, the mechanism
// library kazoo uses, driven as kazoo drives it (testdata/puresasl_client.py).
func TestPureSASLClient(t *testing.T) {
	py, path := needs.KazooSASL(t)
	for _, tc := range []struct {
		user, pass string
		ok         bool
	}{
		{"bob", "secret", true},
		{"bob", "wrong", false},
		{"nobody", "secret", false},
	} {
		t.Run(tc.user+"/"+tc.pass, func(t *testing.T) {
			cmd := exec.Command(py, "testdata/puresasl_client.py", tc.user, tc.pass)
			cmd.Env = append(os.Environ(), "PYTHONPATH="+path)
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			t.Cleanup(func() {
				in.Close()
				cmd.Process.Kill()
				for range lines {
				}
				cmd.Wait()
			})
			read := func() string {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatal("pure-sasl client exited")
					}
					return l
				case <-time.After(time.Minute):
					t.Fatal("no answer from the pure-sasl client")
				}
				return ""
			}
			s, _ := NewServer(DigestMD5, ServerConfig{Users: testUsers})
			line := read()
			for i := 0; i < 3 && line != "DONE"; i++ {
				if strings.HasPrefix(line, "ERR ") {
					t.Fatalf("pure-sasl: %s", line)
				}
				chal, err := s.Step(unhexTok(t, line))
				if err != nil {
					if tc.ok {
						t.Fatalf("server: %v", err)
					}
					return
				}
				if _, err := in.Write([]byte(hexTok(chal) + "\n")); err != nil {
					t.Fatal(err)
				}
				line = read()
			}
			if !tc.ok {
				t.Fatalf("accepted (%s)", line)
			}
			if line != "DONE" || !s.Complete() || s.AuthorizationID() != tc.user {
				t.Fatalf("pure-sasl %q, server complete %v id %q", line, s.Complete(), s.AuthorizationID())
			}
		})
	}
}
