package server

import "fmt"

// newTCPElectionTransport connects to the other servers' election ports.
func newTCPElectionTransport(s *Server) (ElectionTransport, error) {
	return nil, fmt.Errorf("server: the TCP election transport is not wired yet")
}
