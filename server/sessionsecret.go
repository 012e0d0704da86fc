package server

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/zkd-io/zkd/internal/session"
)

// sessionSecretCheck is how often the secret file is looked at for changes.
const sessionSecretCheck = time.Second

// sessionSecret keeps the ensemble's session secrets (Config.SessionSecretFile) current.
// The core reads them with an atomic load on each handshake; the file is read at start-up
// (New) and afterwards only by the watcher goroutine, never by the core.
type sessionSecret struct {
	path string
	cur  atomic.Pointer[session.Secrets] // nil: no file configured, ZooKeeper's passwords

	// Owned by the watcher goroutine after New.
	loaded  fileStamp // the stamp of the file last read successfully (or last refused)
	pending fileStamp // a changed stamp seen once, read when it is seen again unchanged
}

// fileStamp identifies a version of the secret file by its size and modification time.
type fileStamp struct {
	size  int64
	mtime time.Time
	ok    bool
}

func (a fileStamp) same(b fileStamp) bool {
	return a.ok && b.ok && a.size == b.size && a.mtime.Equal(b.mtime)
}

// secrets returns the session secrets in force; nil means ZooKeeper's derivation.
func (s *Server) secrets() *session.Secrets { return s.secret.cur.Load() }

// loadSessionSecret reads the secret file at start-up: a missing, unreadable or invalid
// file stops the server, so it never runs with passwords the operator did not ask for.
func (s *Server) loadSessionSecret() error {
	path := s.cfg.SessionSecretFile
	if path == "" {
		return nil
	}
	s.secret.path = path
	sec, st, err := readSessionSecret(path)
	if err != nil {
		return fmt.Errorf("server: session secret file: %w", err)
	}
	s.secret.cur.Store(sec)
	s.secret.loaded = st
	s.warnSecretMode(path)
	s.log.Info("session secret loaded", "file", path, "secrets", sec.String())
	return nil
}

// readSessionSecret reads and parses the file, with the stamp it had before it was read.
// Errors name the file and the line, never a secret.
func readSessionSecret(path string) (*session.Secrets, fileStamp, error) {
	st, err := statSecret(path)
	if err != nil {
		return nil, fileStamp{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, st, fmt.Errorf("reading: %w", err)
	}
	sec, err := session.ParseSecrets(data)
	if err != nil {
		return nil, st, fmt.Errorf("%s: %w", path, err)
	}
	return sec, st, nil
}

func statSecret(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, fmt.Errorf("stat: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fileStamp{}, fmt.Errorf("%s: not a regular file", path)
	}
	return fileStamp{size: fi.Size(), mtime: fi.ModTime(), ok: true}, nil
}

// warnSecretMode warns, as ssh does for private keys, when other users may read the file:
// anyone who reads it can take over any session.
func (s *Server) warnSecretMode(path string) {
	fi, err := os.Stat(path)
	if err == nil && fi.Mode().Perm()&0o004 != 0 {
		s.log.Warn("session secret file is readable by every user: anyone who can read it can take over any session; chmod 600 it",
			"file", path, "mode", fi.Mode().Perm().String())
	}
}

// watchSessionSecret re-reads the secret file when it changes, checking at most once per
// sessionSecretCheck. A change is read once the file's stamp has stayed the same for one
// check (so a file being written in place is not read half-way) and is applied only if the
// file did not change while it was read. A file that cannot be read or parsed is logged and
// the secrets in force are kept.
func (s *Server) watchSessionSecret() {
	defer s.wg.Done()
	t := s.clk.NewTicker(sessionSecretCheck)
	defer t.Stop()
	for {
		select {
		case <-s.stopping:
			return
		case <-t.C():
			s.checkSessionSecret()
		}
	}
}

func (s *Server) checkSessionSecret() {
	ss := &s.secret
	st, err := statSecret(ss.path)
	if err != nil {
		if ss.pending.ok || ss.loaded.ok {
			s.log.Error("session secret file: keeping the secrets in force", "file", ss.path, "err", err)
		}
		// Logged once per disappearance: the next good stamp differs from these.
		ss.pending, ss.loaded = fileStamp{}, fileStamp{}
		return
	}
	if st.same(ss.loaded) {
		ss.pending = fileStamp{}
		return
	}
	if !st.same(ss.pending) {
		ss.pending = st // changed: read it once it has settled
		return
	}
	sec, readSt, err := readSessionSecret(ss.path)
	if after, aerr := statSecret(ss.path); aerr != nil || !readSt.same(st) || !after.same(st) {
		// Written while it was read: what was read may mix two versions. Start over.
		ss.pending = fileStamp{}
		return
	}
	ss.pending, ss.loaded = fileStamp{}, st
	if err != nil {
		s.log.Error("session secret file: reload failed; keeping the secrets in force", "file", ss.path, "err", err)
		return
	}
	s.warnSecretMode(ss.path)
	if sec.Equal(ss.cur.Load()) {
		return
	}
	ss.cur.Store(sec)
	s.log.Info("session secret reloaded", "file", ss.path, "secrets", sec.String())
}
