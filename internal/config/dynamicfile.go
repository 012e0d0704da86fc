package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// isDynamicKey reports whether key belongs in a dynamic config file: what
// QuorumPeerConfig refuses in a zoo.cfg that names one.
func isDynamicKey(key string) bool {
	return strings.HasPrefix(key, "server.") || strings.HasPrefix(key, "group") || strings.HasPrefix(key, "weight")
}

// StandaloneEnabled is the standaloneEnabled setting (true unless the zoo.cfg says false).
func (c *Config) StandaloneEnabled() bool { return !c.StandaloneDisabled }

// Distributed is QuorumPeerConfig.isDistributed: the server runs as an ensemble member
// rather than standalone. That takes two participants, or one with standaloneEnabled=false.
func (c *Config) Distributed() bool {
	voters := 0
	for _, s := range c.Servers {
		if !s.Observer {
			voters++
		}
	}
	return voters > 1 || (voters > 0 && c.StandaloneDisabled)
}

// BacksUpStaticConfig reports whether ZooKeeper, reading this zoo.cfg at start-up, copies
// it to <zoo.cfg>.bak (QuorumPeerConfig.backupOldConfig): the members are in the zoo.cfg
// itself, the server is distributed and reconfig is enabled, since the first reconfig will
// move the members to a dynamic file.
func (c *Config) BacksUpStaticConfig() bool {
	return c.DynamicConfigFile == "" && c.Distributed() && c.ReconfigEnabled
}

// BackupOldConfig copies the zoo.cfg at path to path+".bak", atomically, as ZooKeeper does
// at start-up when BacksUpStaticConfig holds.
func BackupOldConfig(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: backing up %s: %w", path, err)
	}
	return writeFileAtomic(path+".bak", data)
}

// loadDynamic reads the dynamicConfigFile as QuorumPeerConfig.parse does: relative paths
// from the working directory, no version key inside (the version is in the file's name),
// nothing but server.N, group.N and weight.N keys. It then reads the proposed
// configuration in <configFile>.dynamic.next if there is one.
func (c *Config) loadDynamic(configFile string) error {
	path := c.DynamicConfigFile
	bad := func(err error) error { return fmt.Errorf("%w: Error processing %s: %w", ErrInvalid, path, err) }
	data, err := os.ReadFile(path)
	if err != nil {
		return bad(err)
	}
	props, err := parseProperties(data)
	if err != nil {
		return bad(err)
	}
	for _, p := range props {
		if p.Key == "version" {
			return bad(errors.New("dynamic file shouldn't have version inside"))
		}
	}
	d, err := dynamicFromProps(props, c.StandaloneEnabled(), false)
	if err != nil {
		return bad(err)
	}
	d.Version, _ = VersionFromFilename(path)
	c.Servers, c.Hierarchy, c.DynamicVersion = d.Servers, d.Hierarchy, d.Version
	if configFile == "" {
		return nil
	}
	next := configFile + NextDynamicConfigSuffix
	// ZooKeeper goes on without a next file it cannot read (or that is missing, the
	// usual case).
	data, err = os.ReadFile(next)
	if err != nil {
		return nil
	}
	if props, err = parseProperties(data); err != nil {
		return nil
	}
	nd, err := dynamicFromProps(props, true, true)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalid, next, err)
	}
	c.NextDynamic = &nd
	return nil
}

// DynamicConfigPath is where ZooKeeper writes a committed configuration of this version:
// the static config's path plus ".dynamic.<hex version>" (QuorumPeer.makeDynamicConfigFilename).
func DynamicConfigPath(configFile string, version int64) string {
	return configFile + ".dynamic." + strconv.FormatUint(uint64(version), 16)
}

// WriteDynamicConfig writes a configuration, given as Dynamic.Text prints it, to path the
// way QuorumPeerConfig.writeDynamicConfig does: its key=value lines sorted as strings and
// joined by newlines (no newline at the end), without the version line unless keepVersion
// (ZooKeeper keeps it only in the .dynamic.next file; a committed file's version is in its
// name). The file is replaced atomically.
func WriteDynamicConfig(path, text string, keepVersion bool) error {
	props, err := parsePropertiesText([]byte(text))
	if err != nil {
		return fmt.Errorf("config: writing %s: %w", path, err)
	}
	last := make(map[string]string, len(props))
	for _, p := range props {
		last[p.Key] = p.Value
	}
	lines := make([]string, 0, len(last))
	for k, v := range last {
		if !keepVersion && strings.HasPrefix(k, "version") {
			continue
		}
		lines = append(lines, k+"="+v)
	}
	// Java's String.compareTo orders by UTF-16 unit; the lines are ASCII, where that is
	// byte order.
	slices.Sort(lines)
	return writeFileAtomic(path, []byte(strings.Join(lines, "\n")))
}

// EditStaticConfig rewrites the zoo.cfg at configFile as QuorumPeerConfig.editStaticConfig
// does after a reconfig: it drops the server.*, group*, weight*, dynamicConfigFile* and
// peerType* keys, and, when eraseClientPortAddress, every key starting with "clientPort"
// (ZooKeeper's test, which takes clientPortListenBacklog too), then appends
// dynamicConfigFile=<canonical path of dynamicFile>. Both files must exist. Keys are
// written as key=value with the value trimmed, not escaped, as ZooKeeper writes them; zkd
// keeps the keys in their order in the file (ZooKeeper writes them in its hash table's
// order), each at its first place with its last value. The file is replaced atomically.
func EditStaticConfig(configFile, dynamicFile string, eraseClientPortAddress bool) error {
	data, err := os.ReadFile(configFile)
	if err != nil {
		return fmt.Errorf("config: editing %s: %w", configFile, err)
	}
	if _, err := os.Stat(dynamicFile); err != nil {
		return fmt.Errorf("config: editing %s: %w", configFile, err)
	}
	dyn, err := filepath.Abs(dynamicFile)
	if err == nil {
		dyn, err = filepath.EvalSymlinks(dyn)
	}
	if err != nil {
		return fmt.Errorf("config: editing %s: %w", configFile, err)
	}
	props, err := parseProperties(data)
	if err != nil {
		return fmt.Errorf("config: editing %s: %w", configFile, err)
	}
	values := map[string]string{}
	var order []string
	for _, p := range props {
		if _, seen := values[p.Key]; !seen {
			order = append(order, p.Key)
		}
		values[p.Key] = p.Value
	}
	var b strings.Builder
	for _, k := range order {
		if isDynamicKey(k) || strings.HasPrefix(k, DynamicConfigFileKey) || strings.HasPrefix(k, "peerType") ||
			(eraseClientPortAddress && strings.HasPrefix(k, "clientPort")) {
			continue
		}
		b.WriteString(k + "=" + values[k] + "\n")
	}
	b.WriteString(DynamicConfigFileKey + "=" + filepath.ToSlash(dyn) + "\n")
	return writeFileAtomic(configFile, []byte(b.String()))
}

// writeFileAtomic is ZooKeeper's AtomicFileWritingIdiom: write path+".tmp", sync it, rename
// it over path. An existing file's permissions are kept.
func writeFileAtomic(path string, data []byte) (err error) {
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("config: writing %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("config: syncing %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("config: closing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	// The rename is durable once the directory is synced; a failure here leaves a
	// complete file, so it is not reported.
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
