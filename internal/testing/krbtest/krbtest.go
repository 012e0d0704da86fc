package krbtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/needs"
	"github.com/zkd-io/zkd/internal/testing/portlock"
)

// The realm and principals every KDC started here has.
const (
	Realm            = "EXAMPLE.COM"
	ServicePrincipal = "zookeeper/localhost@" + Realm
	ClientPrincipal  = "client@" + Realm
	ClientPassword   = "client-secret"
)

// Paths of Debian's MIT Kerberos programs (krb5-kdc, krb5-admin-server's kadmin.local is in
// krb5-kdc too; kinit is krb5-user).
const (
	krb5kdcPath     = "/usr/sbin/krb5kdc"
	kdb5UtilPath    = "/usr/sbin/kdb5_util"
	kadminLocalPath = "/usr/sbin/kadmin.local"
)

// enctypes are the ones MIT, Java 17 and gokrb5 all speak.
const enctypes = "aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96"

// startTimeout bounds how long the KDC may take to create its database and listen on a loaded
// machine.
const startTimeout = 60 * time.Second

// KDC is a running test KDC. Its files are in Dir; it is stopped when the test that started it
// ends.
type KDC struct {
	Dir  string
	Addr string // host:port of the KDC, TCP
	// Krb5Conf is a krb5.conf for clients of this realm (MIT tools with KRB5_CONFIG, Java with
	// -Djava.security.krb5.conf, gokrb5's config.Load).
	Krb5Conf      string
	ServiceKeytab string // keys of ServicePrincipal
	ClientKeytab  string // keys of ClientPrincipal (its password still works too)

	kdcConf string
}

// Start creates a realm in a temporary directory, starts krb5kdc on a loopback port and waits
// until it accepts connections. It skips the test (needs.Missing) when the MIT Kerberos
// programs are not installed.
func Start(t testing.TB) *KDC {
	t.Helper()
	for _, p := range []string{krb5kdcPath, kdb5UtilPath, kadminLocalPath} {
		if _, err := os.Stat(p); err != nil {
			needs.Missing(t, p, "krb5-kdc krb5-admin-server krb5-user", err.Error())
		}
	}
	k := &KDC{Dir: t.TempDir()}
	k.Krb5Conf = filepath.Join(k.Dir, "krb5.conf")
	k.kdcConf = filepath.Join(k.Dir, "kdc.conf")
	k.ServiceKeytab = filepath.Join(k.Dir, "zookeeper.keytab")
	k.ClientKeytab = filepath.Join(k.Dir, "client.keytab")

	// A port another process bound between reservation and krb5kdc's bind makes krb5kdc exit:
	// try a few ports.
	var lastErr error
	for range 3 {
		port, lock, err := portlock.Reserve()
		if err != nil {
			t.Fatalf("krbtest: %v", err)
		}
		k.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err := k.writeConfig(port); err != nil {
			lock.Close()
			t.Fatalf("krbtest: %v", err)
		}
		if lastErr == nil {
			k.createRealm(t)
		}
		lastErr = k.startKDC(t)
		lock.Close()
		if lastErr == nil {
			return k
		}
		t.Logf("krbtest: %v; retrying on another port", lastErr)
	}
	t.Fatalf("krbtest: KDC did not start: %v", lastErr)
	return nil
}

func (k *KDC) writeConfig(port int) error {
	kdc := fmt.Sprintf(`[kdcdefaults]
	kdc_listen = ""
	kdc_tcp_listen = 127.0.0.1:%[1]d

[realms]
	%[2]s = {
		database_name = %[3]s/principal
		key_stash_file = %[3]s/stash
		acl_file = %[3]s/kadm5.acl
		kdc_listen = ""
		kdc_tcp_listen = 127.0.0.1:%[1]d
		max_life = 1d
		max_renewable_life = 1d
		supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
	}

[logging]
	kdc = FILE:%[3]s/kdc.log
	admin_server = FILE:%[3]s/kadmin.log
	default = FILE:%[3]s/krb5lib.log
`, port, Realm, k.Dir)
	if err := os.WriteFile(k.kdcConf, []byte(kdc), 0o600); err != nil {
		return fmt.Errorf("write kdc.conf: %w", err)
	}
	if err := os.WriteFile(filepath.Join(k.Dir, "kadm5.acl"), nil, 0o600); err != nil {
		return fmt.Errorf("write kadm5.acl: %w", err)
	}
	conf := fmt.Sprintf(`[libdefaults]
	default_realm = %[1]s
	dns_lookup_realm = false
	dns_lookup_kdc = false
	rdns = false
	udp_preference_limit = 1
	ticket_lifetime = 10h
	forwardable = false
	noaddresses = true
	default_tkt_enctypes = %[3]s
	default_tgs_enctypes = %[3]s
	permitted_enctypes = %[3]s

[realms]
	%[1]s = {
		kdc = 127.0.0.1:%[2]d
	}

[domain_realm]
	localhost = %[1]s
	.localhost = %[1]s
`, Realm, port, enctypes)
	if err := os.WriteFile(k.Krb5Conf, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("write krb5.conf: %w", err)
	}
	return nil
}

// Env is the environment for MIT Kerberos programs (kinit, klist, kadmin.local) to use this
// realm and nothing from /etc.
func (k *KDC) Env() []string {
	return append(os.Environ(),
		"KRB5_CONFIG="+k.Krb5Conf,
		"KRB5_KDC_PROFILE="+k.kdcConf,
		"KRB5RCACHEDIR="+k.Dir,
		"KRB5CCNAME=FILE:"+filepath.Join(k.Dir, "ccache"),
		"KRB5_TRACE=/dev/null",
	)
}

func (k *KDC) run(t testing.TB, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = k.Env()
	cmd.Dir = k.Dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("krbtest: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// Kadmin runs one kadmin.local query (e.g. "addprinc -randkey HTTP/localhost") on the realm's
// database.
func (k *KDC) Kadmin(t testing.TB, query string) {
	t.Helper()
	k.run(t, kadminLocalPath, "-r", Realm, "-q", query)
}

// AddPrincipal creates principal with password, or with a random key when password is "".
func (k *KDC) AddPrincipal(t testing.TB, principal, password string) {
	t.Helper()
	if password == "" {
		k.Kadmin(t, "addprinc -randkey "+principal)
		return
	}
	k.Kadmin(t, fmt.Sprintf("addprinc -pw %s %s", password, principal))
}

// WriteKeytab writes the current keys of principal to a new keytab at path, without changing
// them (a password keeps working).
func (k *KDC) WriteKeytab(t testing.TB, principal, path string) {
	t.Helper()
	k.Kadmin(t, fmt.Sprintf("ktadd -norandkey -k %s %s", path, principal))
}

func (k *KDC) createRealm(t testing.TB) {
	t.Helper()
	k.run(t, kdb5UtilPath, "-r", Realm, "create", "-s", "-P", "master-password-for-tests")
	k.AddPrincipal(t, ServicePrincipal, "")
	k.WriteKeytab(t, ServicePrincipal, k.ServiceKeytab)
	k.AddPrincipal(t, ClientPrincipal, ClientPassword)
	k.WriteKeytab(t, ClientPrincipal, k.ClientKeytab)
}

// startKDC starts krb5kdc in the foreground and waits until its port accepts connections. An
// error means krb5kdc exited (its port was taken, say) and is not running.
func (k *KDC) startKDC(t testing.TB) error {
	t.Helper()
	cmd := exec.Command(krb5kdcPath, "-n", "-r", Realm, "-P", filepath.Join(k.Dir, "krb5kdc.pid"))
	cmd.Env = k.Env()
	cmd.Dir = k.Dir
	logf, err := os.Create(filepath.Join(k.Dir, "krb5kdc.out"))
	if err != nil {
		return fmt.Errorf("krb5kdc output file: %w", err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start krb5kdc: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case err := <-exited:
			out, _ := os.ReadFile(filepath.Join(k.Dir, "krb5kdc.out"))
			log, _ := os.ReadFile(filepath.Join(k.Dir, "kdc.log"))
			return fmt.Errorf("krb5kdc exited: %v\n%s\n%s", err, out, log)
		default:
		}
		c, err := net.DialTimeout("tcp", k.Addr, time.Second)
		if err == nil {
			c.Close()
			t.Cleanup(stop)
			return nil
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("krbtest: krb5kdc did not listen on %s within %v: %v", k.Addr, startTimeout, err)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case err := <-exited:
			exited <- err
		}
	}
}

// Log returns what the KDC logged so far, for a failing test's message.
func (k *KDC) Log() string {
	b, err := os.ReadFile(filepath.Join(k.Dir, "kdc.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err.Error()
	}
	return string(b)
}

// JavaClient is what a Java ZooKeeper client needs to authenticate to a zkd or ZooKeeper server
// with GSSAPI in this realm.
type JavaClient struct {
	JAAS string // path of the JAAS file, section "Client" (Krb5LoginModule with a keytab)
	// JVMFlags are the system properties to pass to java (for zkCli.sh: in CLIENT_JVMFLAGS):
	// the JAAS file, this realm's krb5.conf, and the server principal zookeeper/localhost.
	JVMFlags []string
}

// WriteJavaClient writes a JAAS file in dir that logs in as principal with the keys in keytab,
// and returns it with the JVM flags that make ZooKeeper's client use it against a server whose
// principal is ServicePrincipal (connect to it as "localhost").
func (k *KDC) WriteJavaClient(t testing.TB, dir, principal, keytab string) JavaClient {
	t.Helper()
	jaas := filepath.Join(dir, "jaas-client.conf")
	body := fmt.Sprintf(`Client {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true
  keyTab=%q
  storeKey=true
  useTicketCache=false
  doNotPrompt=true
  refreshKrb5Config=true
  principal=%q;
};
`, keytab, principal)
	if err := os.WriteFile(jaas, []byte(body), 0o600); err != nil {
		t.Fatalf("krbtest: write JAAS file: %v", err)
	}
	return JavaClient{
		JAAS: jaas,
		JVMFlags: []string{
			"-Djava.security.auth.login.config=" + jaas,
			"-Djava.security.krb5.conf=" + k.Krb5Conf,
			"-Dzookeeper.sasl.client=true",
			"-Dzookeeper.sasl.client.username=zookeeper",
			"-Dzookeeper.sasl.client.canonicalize.hostname=false",
			"-Dzookeeper.server.realm=" + Realm,
			"-Djavax.security.auth.useSubjectCredsOnly=true",
		},
	}
}
