package gssapi

import (
	"strings"
	"testing"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/zkd-io/zkd/internal/testing/krbtest"
)

type kdcEnv struct {
	kdc  *krbtest.KDC
	conf *config.Config
	svc  *keytab.Keytab
}

func startKDC(t *testing.T) kdcEnv {
	t.Helper()
	k := krbtest.Start(t)
	conf, err := config.Load(k.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := keytab.Load(k.ServiceKeytab)
	if err != nil {
		t.Fatal(err)
	}
	return kdcEnv{kdc: k, conf: conf, svc: svc}
}

func (e kdcEnv) keytabClient(t *testing.T) *client.Client {
	t.Helper()
	kt, err := keytab.Load(e.kdc.ClientKeytab)
	if err != nil {
		t.Fatal(err)
	}
	cl := client.NewWithKeytab("client", krbtest.Realm, kt, e.conf, client.DisablePAFXFAST(true))
	t.Cleanup(cl.Destroy)
	return cl
}

func (e kdcEnv) server(t *testing.T, kt *keytab.Keytab) *Server {
	t.Helper()
	s, err := NewServer(ServerConfig{Keytab: kt, Principal: krbtest.ServicePrincipal})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestKDC runs the Go client against the server with tickets from a real MIT KDC.
func TestKDC(t *testing.T) {
	e := startKDC(t)
	kc := e.keytabClient(t)
	pw := client.NewWithPassword("client", krbtest.Realm, krbtest.ClientPassword, e.conf, client.DisablePAFXFAST(true))
	t.Cleanup(pw.Destroy)

	for _, tc := range []struct {
		name   string
		kc     *client.Client
		mutual bool
	}{{"keytab", kc, false}, {"keytab mutual", kc, true}, {"password", pw, false}, {"password mutual", pw, true}} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewClient(ClientConfig{Kerberos: tc.kc, Service: "zookeeper/localhost", Mutual: tc.mutual})
			if err != nil {
				t.Fatal(err)
			}
			s := e.server(t, e.svc)
			if err := exchange(c, s); err != nil {
				t.Fatalf("%v\nKDC log:\n%s", err, e.kdc.Log())
			}
			if got := s.AuthorizationID(); got != krbtest.ClientPrincipal {
				t.Fatalf("AuthorizationID %q, want %q", got, krbtest.ClientPrincipal)
			}
			if got, _ := s.Principal(); len(got) != 1 || got[0] != "client" {
				t.Fatalf("Principal %q", got)
			}
		})
	}

	t.Run("explicit authzid", func(t *testing.T) {
		c, _ := NewClient(ClientConfig{Kerberos: kc, Service: "zookeeper/localhost", AuthzID: krbtest.ClientPrincipal})
		if err := exchange(c, e.server(t, e.svc)); err != nil {
			t.Fatal(err)
		}
		c, _ = NewClient(ClientConfig{Kerberos: kc, Service: "zookeeper/localhost", AuthzID: "root@EXAMPLE.COM"})
		if err := exchange(c, e.server(t, e.svc)); err == nil || !strings.Contains(err.Error(), "may not act as") {
			t.Fatalf("authzid of another user: %v", err)
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		bad := client.NewWithPassword("client", krbtest.Realm, "not-the-password", e.conf, client.DisablePAFXFAST(true))
		t.Cleanup(bad.Destroy)
		c, _ := NewClient(ClientConfig{Kerberos: bad, Service: "zookeeper/localhost"})
		if _, err := c.Step(nil); err == nil {
			t.Fatal("login with a wrong password succeeded")
		}
	})

	t.Run("ticket for another service", func(t *testing.T) {
		e.kdc.AddPrincipal(t, "zookeeper/otherhost@"+krbtest.Realm, "")
		c, _ := NewClient(ClientConfig{Kerberos: kc, Service: "zookeeper/otherhost"})
		if err := exchange(c, e.server(t, e.svc)); err == nil {
			t.Fatal("ticket for zookeeper/otherhost accepted by zookeeper/localhost")
		}
	})

	// Last: it changes the service's keys. The old keytab cannot read tickets for the new
	// keys.
	t.Run("stale service keytab", func(t *testing.T) {
		e.kdc.Kadmin(t, "cpw -randkey "+krbtest.ServicePrincipal)
		fresh := e.keytabClient(t) // no cached ticket for the old keys
		c, _ := NewClient(ClientConfig{Kerberos: fresh, Service: "zookeeper/localhost"})
		if err := exchange(c, e.server(t, e.svc)); err == nil || !strings.Contains(err.Error(), "server:") {
			t.Fatalf("stale keytab: %v", err)
		}
		newKT := t.TempDir() + "/new.keytab"
		e.kdc.WriteKeytab(t, krbtest.ServicePrincipal, newKT)
		kt, err := keytab.Load(newKT)
		if err != nil {
			t.Fatal(err)
		}
		c, _ = NewClient(ClientConfig{Kerberos: fresh, Service: "zookeeper/localhost"})
		if err := exchange(c, e.server(t, kt)); err != nil {
			t.Fatalf("new keytab: %v", err)
		}
	})
}
