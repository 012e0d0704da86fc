package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/peer"
	"github.com/zkd-io/zkd/internal/sasl"
	"github.com/zkd-io/zkd/server"
)

// Default JAAS sections of quorum SASL, from the key table.
var (
	defaultQuorumServerSection  = config.DefaultString("quorum.auth.server.saslLoginContext")
	defaultQuorumLearnerSection = config.DefaultString("quorum.auth.learner.saslLoginContext")
)

// jaasPath is the JAAS login configuration file: zoo.cfg's java.security.auth.login.config,
// or the -D ZooKeeper's scripts pass in SERVER_JVMFLAGS / JVMFLAGS.
func jaasPath(sec *config.Security, getenv func(string) string) string {
	if sec.JAASConfig != "" {
		return sec.JAASConfig
	}
	return jvmProperty(getenv, "java.security.auth.login.config")
}

// applyQuorumSASL configures quorum SASL (quorum.auth.enableSasl) as ZooKeeper's
// QuorumPeer.initialize does: with it on, the JAAS file must have both the server section
// (QuorumServer: user_NAME="password" entries of a DigestLoginModule, the members that may
// connect) and the learner section (QuorumLearner: this member's username and password),
// whatever the require flags say. zkd does DIGEST-MD5 only: a section with any other login
// module (Kerberos's Krb5LoginModule) stops start-up.
func applyQuorumSASL(sec *config.Security, sc *server.Config, logger *slog.Logger, getenv func(string) string) error {
	if !sec.QuorumSASL {
		return nil
	}
	path := jaasPath(sec, getenv)
	if path == "" {
		return errors.New("quorum.auth.enableSasl=true needs a JAAS file: set java.security.auth.login.config " +
			"(in zoo.cfg, or -Djava.security.auth.login.config=... in SERVER_JVMFLAGS)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("java.security.auth.login.config: %w", err)
	}
	j, err := sasl.ParseJAAS(data)
	if err != nil {
		return fmt.Errorf("java.security.auth.login.config %s: %w", path, err)
	}
	serverSection := sec.QuorumServerLoginContext
	if serverSection == "" {
		serverSection = defaultQuorumServerSection
	}
	learnerSection := sec.QuorumLearnerLoginContext
	if learnerSection == "" {
		learnerSection = defaultQuorumLearnerSection
	}
	for _, s := range []struct{ key, section string }{
		{"quorum.auth.server.saslLoginContext", serverSection},
		{"quorum.auth.learner.saslLoginContext", learnerSection},
	} {
		mods, err := j.Section(s.section)
		if err != nil {
			return fmt.Errorf("java.security.auth.login.config %s: quorum SASL needs the JAAS section %q (%s): %w",
				path, s.section, s.key, err)
		}
		for _, m := range mods {
			if m.Class == sasl.DigestLoginModule {
				continue
			}
			if m.Class == sasl.Krb5LoginModule {
				return fmt.Errorf("java.security.auth.login.config %s: section %q: %w: zkd's quorum SASL does "+
					"DIGEST-MD5 only (Kerberos between ensemble members is not implemented); use %s",
					path, s.section, config.ErrNotImplemented, sasl.DigestLoginModule)
			}
			return fmt.Errorf("java.security.auth.login.config %s: section %q: login module %s: zkd's quorum "+
				"SASL knows only %s", path, s.section, m.Class, sasl.DigestLoginModule)
		}
	}
	users, err := j.QuorumUsers(serverSection)
	if err != nil {
		return fmt.Errorf("java.security.auth.login.config %s: %w", path, err)
	}
	user, pass, err := j.DigestClient(learnerSection)
	if err != nil {
		return fmt.Errorf("java.security.auth.login.config %s: %w", path, err)
	}
	sc.QuorumSASL = &peer.QuorumSASL{
		LearnerRequired: sec.QuorumLearnerRequireSASL,
		ServerRequired:  sec.QuorumServerRequireSASL,
		NewServer: func() (sasl.Server, error) {
			return sasl.NewServer(sasl.DigestMD5, sasl.ServerConfig{
				Service: sasl.QuorumService, Host: sasl.QuorumHost, Users: users,
				Authorize: sasl.QuorumDigestAuthorize,
			})
		},
		NewClient: func() (sasl.Client, error) {
			return sasl.NewClient(sasl.DigestMD5, user, pass, sasl.QuorumService, sasl.QuorumHost)
		},
	}
	logger.Info("quorum SASL", "mechanism", sasl.DigestMD5, "jaas", path, "serverSection", serverSection,
		"learnerSection", learnerSection, "learner", user, "users", len(users),
		"learnerRequireSasl", sec.QuorumLearnerRequireSASL, "serverRequireSasl", sec.QuorumServerRequireSASL)
	return nil
}
