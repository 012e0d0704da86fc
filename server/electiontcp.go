package server

import (
	"fmt"

	"github.com/zkd-io/zkd/internal/peer"
)

// newTCPElectionTransport serves this server's election port and connects to the others',
// speaking ZooKeeper's QuorumCnxManager protocol.
func newTCPElectionTransport(s *Server) (ElectionTransport, error) {
	self := s.self()
	peers := map[int64]string{}
	for _, p := range s.cfg.Peers {
		if p.ID != s.cfg.ServerID {
			peers[p.ID] = p.electionAddr()
		}
	}
	t, err := peer.NewTCP(peer.TCPConfig{
		ID:         s.cfg.ServerID,
		ListenAddr: self.electionAddr(),
		Peers:      peers,
		Logger:     s.log,
		TLS:        s.cfg.QuorumTLS,
		QuorumSASL: s.quorumSASL(),
	})
	if err != nil {
		return nil, fmt.Errorf("server: election port %s: %w", self.electionAddr(), err)
	}
	return t, nil
}
