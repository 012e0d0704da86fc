package server

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/peer"
)

// newTCPElectionTransport serves this server's election port and connects to the others',
// speaking ZooKeeper's QuorumCnxManager protocol.
func newTCPElectionTransport(s *Server) (ElectionTransport, error) {
	self := s.self()
	peers := s.electionPeers()
	ln, err := s.bindElectionPort(listenAddrs(self.ElectionAddrs(), s.cfg.QuorumListenOnAllIPs))
	if err != nil {
		return nil, err
	}
	// The header names the configured addresses when the listener's own address is not
	// one (a wildcard, or only the first of several).
	version, adv := peer.ProtocolVersionV1, ""
	if len(self.MoreAddrs) > 0 {
		version = peer.ProtocolVersionV2 // what ZooKeeper sends with multiAddress.enabled
	}
	if len(self.MoreAddrs) > 0 || s.cfg.QuorumListenOnAllIPs {
		adv = strings.Join(self.ElectionAddrs(), "|")
	}
	t, err := peer.NewTCP(s.electionTCPConfig(ln, version, adv, peers))
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("server: election port %s: %w", self.ElectionAddr(), err)
	}
	return t, nil
}

// electionTCPConfig is the election transport's configuration: version and adv are the
// connection headers' protocol version and advertised addresses.
func (s *Server) electionTCPConfig(ln net.Listener, version int64, adv string, peers map[int64]string) peer.TCPConfig {
	return peer.TCPConfig{
		ID:              s.cfg.ServerID,
		Listener:        ln,
		AdvertiseAddr:   adv,
		ProtocolVersion: version,
		// zookeeper.cnxTimeout bounds QuorumCnxManager's connect; 0 leaves peer's 5 s,
		// ZooKeeper's default.
		DialTimeout: s.cfg.CnxTimeout,
		Peers:       peers,
		Logger:      s.log,
		TLS:         s.cfg.QuorumTLS,
		QuorumSASL:  s.quorumSASL(),
		PeerState:   s.ens.peerStates.report,
	}
}

// bindElectionPort listens on addrs, trying electionPortBindRetry times a second apart as
// QuorumCnxManager's listener does (a port a previous process still holds frees up).
func (s *Server) bindElectionPort(addrs []string) (net.Listener, error) {
	tries := s.cfg.ElectionPortBindRetry
	if tries == 0 {
		tries = config.DefaultElectionPortBindRetry
	}
	for n := 1; ; n++ {
		ln, err := peer.ListenAll(addrs)
		if err == nil {
			return ln, nil
		}
		if tries > 0 && n >= tries {
			return nil, fmt.Errorf("server: election port, after %d attempts (%s): %w", n, config.ElectionPortBindRetryKey, err)
		}
		s.log.Warn("cannot bind the election port, retrying", "addrs", addrs, "attempt", n, "err", err)
		select {
		case <-s.stopping:
			return nil, fmt.Errorf("server: election port: closed while binding: %w", err)
		case <-time.After(time.Second):
		}
	}
}
