package zkcli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/jcmturner/gokrb5/v8/client"
	krb5config "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/zkd-io/zkd/internal/sasl"
	"github.com/zkd-io/zkd/internal/tlsconf"
	"github.com/zkd-io/zkd/zk"
)

// clientProperties are the Java client's settings: the -client-configuration file
// (ZKClientConfig reads it as a properties file) over the -D system properties.
func clientProperties(f *flags) (map[string]string, error) {
	props := map[string]string{}
	for k, v := range f.props {
		props[k] = v
	}
	if f.clientConfig == "" {
		return props, nil
	}
	data, err := os.ReadFile(f.clientConfig)
	if err != nil {
		return nil, fmt.Errorf("client configuration: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			k, v, _ = strings.Cut(line, ":")
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return props, nil
}

// clientOptions maps the Java client's TLS and SASL settings onto the Go client's options:
// zookeeper.client.secure with the zookeeper.ssl.* stores, and SASL from the JAAS file's
// Client section (java.security.auth.login.config) unless zookeeper.sasl.client=false.
func clientOptions(f *flags) ([]zk.Option, error) {
	props, err := clientProperties(f)
	if err != nil {
		return nil, err
	}
	var opts []zk.Option
	if strings.EqualFold(props["zookeeper.client.secure"], "true") {
		ssl := map[string]string{}
		for k, v := range props {
			if rest, ok := strings.CutPrefix(k, "zookeeper.ssl."); ok {
				ssl[rest] = v
			}
		}
		st, err := tlsconf.Parse(ssl, "zookeeper.ssl.")
		if err != nil {
			return nil, fmt.Errorf("client TLS settings: %w", err)
		}
		host := ""
		if h, _, err := net.SplitHostPort(strings.Split(strings.Split(f.server, "/")[0], ",")[0]); err == nil {
			host = h
		}
		cfg, err := st.ClientConfig(host, slog.New(slog.DiscardHandler))
		if err != nil {
			return nil, fmt.Errorf("client TLS settings: %w", err)
		}
		opts = append(opts, zk.WithTLS(cfg))
	}
	jaasPath := props["java.security.auth.login.config"]
	if jaasPath == "" || strings.EqualFold(props["zookeeper.sasl.client"], "false") {
		return opts, nil
	}
	data, err := os.ReadFile(jaasPath)
	if err != nil {
		return nil, fmt.Errorf("JAAS configuration: %w", err)
	}
	jaas, err := sasl.ParseJAAS(data)
	if err != nil {
		return nil, fmt.Errorf("JAAS configuration %s: %w", jaasPath, err)
	}
	section := props["zookeeper.sasl.clientconfig"]
	if section == "" {
		section = "Client"
	}
	if _, ok := jaas.Sections[section]; !ok {
		return opts, nil // as Java: no section, no SASL
	}
	if jaas.HasModule(section, sasl.DigestLoginModule) {
		user, pw, err := jaas.DigestClient(section)
		if err != nil {
			return nil, fmt.Errorf("JAAS configuration %s: %w", jaasPath, err)
		}
		return append(opts, zk.WithDigestSASL(user, pw)), nil
	}
	k, err := jaas.Krb5(section)
	if err != nil {
		return nil, fmt.Errorf("JAAS configuration %s: %w", jaasPath, err)
	}
	krb, err := kerberosClient(k, props)
	if err != nil {
		return nil, fmt.Errorf("JAAS configuration %s: %w", jaasPath, err)
	}
	service := props["zookeeper.sasl.client.username"]
	return append(opts, zk.WithKerberosSASL(krb, service)), nil
}

// kerberosClient logs in with the Krb5LoginModule's keytab and principal.
func kerberosClient(k sasl.Krb5Options, props map[string]string) (*client.Client, error) {
	if !k.UseKeyTab || k.KeyTab == "" {
		return nil, errors.New("Krb5LoginModule: zkcli logs in with useKeyTab=true and keyTab only")
	}
	kt, err := keytab.Load(k.KeyTab)
	if err != nil {
		return nil, fmt.Errorf("keytab %s: %w", k.KeyTab, err)
	}
	var conf *krb5config.Config
	for _, p := range []string{props["java.security.krb5.conf"], os.Getenv("KRB5_CONFIG"), "/etc/krb5.conf"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		// gokrb5 returns what it parsed along with an error for a directive it does not know.
		if c, err := krb5config.Load(p); c != nil {
			conf = c
			break
		} else if err != nil {
			return nil, fmt.Errorf("krb5.conf %s: %w", p, err)
		}
	}
	if conf == nil {
		return nil, errors.New("no krb5.conf (java.security.krb5.conf, KRB5_CONFIG or /etc/krb5.conf)")
	}
	user, realm, ok := strings.Cut(k.Principal, "@")
	if !ok {
		realm = conf.LibDefaults.DefaultRealm
	}
	return client.NewWithKeytab(user, realm, kt, conf, client.DisablePAFXFAST(true)), nil
}
