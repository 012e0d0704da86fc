package config

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/zkd-io/zkd/internal/quorum"
)

// Dynamic reconfiguration keys (issue 13).
const (
	// ReconfigEnabledKey turns on the reconfig operation (QuorumPeerConfig's
	// reconfigEnabled; off by default, as in ZooKeeper 3.5+).
	ReconfigEnabledKey = "reconfigEnabled"
	// StandaloneEnabledKey = false makes a single-server configuration run as a one-member
	// ensemble (so that it can grow by reconfig) instead of a standalone server.
	StandaloneEnabledKey = "standaloneEnabled"
	// DynamicConfigFileKey names the file holding the server.N, group.N and weight.N lines
	// and, in its name, their version.
	DynamicConfigFileKey = "dynamicConfigFile"
)

// NextDynamicConfigSuffix is what ZooKeeper appends to the static config's path for the
// proposed-but-not-committed configuration (QuorumPeerConfig.nextDynamicConfigFileSuffix).
const NextDynamicConfigSuffix = ".dynamic.next"

// Dynamic is one quorum configuration: the members, the optional hierarchical quorum shape
// and the configuration's version (the zxid of the reconfig that made it; 0 for a
// configuration that only ever came from a zoo.cfg). It is the value ZooKeeper's
// QuorumVerifier holds, and what /zookeeper/config and zoo.cfg.dynamic.<version> contain.
type Dynamic struct {
	Servers   map[int]Member
	Hierarchy Hierarchy
	Version   int64
}

// Dynamic is the quorum configuration of the Config's server.N, group.N and weight.N lines
// and DynamicVersion.
func (c *Config) Dynamic() Dynamic {
	return Dynamic{Servers: maps.Clone(c.Servers), Hierarchy: c.Hierarchy, Version: c.DynamicVersion}
}

// Text is the configuration as QuorumMaj.toString or QuorumHierarchical.toString print it:
// what the leader writes to /zookeeper/config and peers send each other in FLE
// notifications and NEWLEADER.
func (d Dynamic) Text() string { return HierarchicalText(d.Servers, d.Hierarchy, d.Version) }

// Verifier is the configuration's quorum rule.
func (d Dynamic) Verifier() (quorum.Verifier, error) { return d.Hierarchy.Verifier(d.Servers) }

// Voters are the ids of the participants, the members that vote.
func (d Dynamic) Voters() []int64 {
	var ids []int64
	for _, id := range serverOrder(d.Servers) {
		if !d.Servers[id].Observer {
			ids = append(ids, int64(id))
		}
	}
	return ids
}

// Equal reports whether both configurations have the same members, shape and version.
// (ZooKeeper's QuorumMaj.equals ignores the version; compare Version separately for that.)
func (d Dynamic) Equal(o Dynamic) bool {
	return d.Version == o.Version && d.Text() == o.Text()
}

// ErrDynamic matches (with errors.Is) every error ParseDynamic returns.
var ErrDynamic = errors.New("config: invalid dynamic configuration")

// DynamicError is a configuration ParseDynamic refused. Exception tells which Java
// exception ZooKeeper's QuorumPeerConfig.parseDynamicConfig throws for it, which decides
// the error code a reconfig gets (ConfigException: BADARGUMENTS; the others:
// MARSHALLINGERROR).
type DynamicError struct {
	Exception JavaException
	Msg       string
}

// JavaException is the class of exception ZooKeeper throws for a bad configuration.
type JavaException int

const (
	ConfigException JavaException = iota
	// IllegalArgumentException includes NumberFormatException.
	IllegalArgumentException
)

func (e *DynamicError) Error() string { return "config: dynamic configuration: " + e.Msg }

// Is makes every DynamicError match ErrDynamic.
func (e *DynamicError) Is(target error) bool { return target == ErrDynamic }

func configErr(format string, args ...any) error {
	return &DynamicError{Exception: ConfigException, Msg: fmt.Sprintf(format, args...)}
}

func illegalArg(format string, args ...any) error {
	return &DynamicError{Exception: IllegalArgumentException, Msg: fmt.Sprintf(format, args...)}
}

// ParseDynamic reads a quorum configuration in java.util.Properties syntax: the text of
// /zookeeper/config, of a peer's FLE notification or NEWLEADER, of a zoo.cfg.dynamic file
// (whose version is in its name, see LoadDynamicFile) or of a non-incremental reconfig's
// member list. Keys are server.N, group.N, weight.N and version (hex); any other key is
// refused, as QuorumPeerConfig.parseDynamicConfig refuses it outside zoo.cfg. It applies
// parseDynamicConfig's checks on participants and observers with standaloneEnabled on; use
// ParseDynamicStandalone for the other setting.
func ParseDynamic(text []byte) (Dynamic, error) { return ParseDynamicStandalone(text, true) }

// ParseDynamicStandalone is ParseDynamic under the given standaloneEnabled setting.
func ParseDynamicStandalone(text []byte, standaloneEnabled bool) (Dynamic, error) {
	props, err := parsePropertiesText(text)
	if err != nil {
		return Dynamic{}, illegalArg("%v", err)
	}
	return dynamicFromProps(props, standaloneEnabled, false)
}

// dynamicFromProps is QuorumPeerConfig.parseDynamicConfig; in backwardCompatible mode (a
// zoo.cfg holding everything) other keys are left to the caller.
func dynamicFromProps(props []property, standaloneEnabled, backwardCompatible bool) (Dynamic, error) {
	d := Dynamic{}
	// Properties is a map: a repeated key keeps its last value.
	last := make(map[string]int, len(props))
	for i, p := range props {
		last[p.Key] = i
	}
	for i, p := range props {
		if last[p.Key] != i {
			continue
		}
		switch key, v := p.Key, p.Value; {
		case strings.HasPrefix(key, "server."):
			id := key[len("server."):]
			if _, err := strconv.ParseInt(id, 10, 64); err != nil {
				return Dynamic{}, illegalArg("%s: server id %q is not a number", key, id)
			}
			s, err := parseServer(id, v)
			if err != nil {
				return Dynamic{}, configErr("%s=%s: %v", key, v, err)
			}
			if d.Servers == nil {
				d.Servers = make(map[int]Member)
			}
			d.Servers[int(s.ID)] = s
		case strings.HasPrefix(key, "group"), strings.HasPrefix(key, "weight"):
			if _, err := d.Hierarchy.setHierarchyKey(key, v); err != nil {
				return Dynamic{}, illegalArg("%s=%s: %v", key, v, err)
			}
		case key == "version":
			ver, err := strconv.ParseInt(v, 16, 64)
			if err != nil {
				return Dynamic{}, illegalArg("version=%s: not a hexadecimal number", v)
			}
			d.Version = ver
		case !backwardCompatible:
			return Dynamic{}, configErr("Unrecognised parameter: %s", key)
		}
	}
	if err := d.validate(standaloneEnabled); err != nil {
		return Dynamic{}, err
	}
	return d, nil
}

// validate applies QuorumHierarchical's and parseDynamicConfig's rules.
func (d Dynamic) validate(standaloneEnabled bool) error {
	var problems []string
	d.Hierarchy.validate(d.Servers, func(key string, value any, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s=%v: %s", key, value, fmt.Sprintf(format, args...)))
	})
	if len(problems) > 0 {
		return configErr("%s", strings.Join(problems, "; "))
	}
	voters := len(d.Voters())
	observers := len(d.Servers) - voters
	switch {
	case voters == 0 && !standaloneEnabled:
		return illegalArg("standaloneEnabled = false then number of participants should be >0")
	case voters == 0 && observers > 0:
		return illegalArg("Observers w/o participants is an invalid configuration")
	case voters == 1 && standaloneEnabled && observers > 0:
		return illegalArg("Observers w/o quorum is an invalid configuration")
	}
	return nil
}

// ConfigVersion reads the version line of a configuration text (what FLE notifications and
// NEWLEADER carry) without parsing the members: the hex value of its last version= key, 0
// when it has none (QuorumMaj's default).
func ConfigVersion(text []byte) (int64, error) {
	props, err := parsePropertiesText(text)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrDynamic, err)
	}
	var ver int64
	for _, p := range props {
		if p.Key == "version" {
			if ver, err = strconv.ParseInt(p.Value, 16, 64); err != nil {
				return 0, fmt.Errorf("%w: version=%s: not a hexadecimal number", ErrDynamic, p.Value)
			}
		}
	}
	return ver, nil
}

// VersionFromFilename is QuorumPeerConfig.getVersionFromFilename: the hex number after the
// path's last '.', ok false when that is not one ("zoo.cfg.dynamic" has no version).
func VersionFromFilename(path string) (version int64, ok bool) {
	i := strings.LastIndexByte(path, '.')
	if i < 0 {
		return 0, false
	}
	v, err := strconv.ParseInt(path[i+1:], 16, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}
