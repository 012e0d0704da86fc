package config

import (
	"errors"
	"strings"
	"testing"
)

const shapeBase = "tickTime=2000\ninitLimit=5\nsyncLimit=2\ndataDir=/d\nclientPort=2181\n"

func TestMultiAddressParse(t *testing.T) {
	in := shapeBase + "server.1=127.0.0.2:2888:3888|127.0.0.1:2889:3889:observer;2181\n" +
		"server.2=h2:2888:3888:participant|[::1]:2888:3888:participant\n" +
		"zookeeper.multiAddress.enabled=true\n" // after the servers: order does not matter
	c, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	s1 := c.Servers[1]
	if !s1.Observer || s1.Host != "127.0.0.2" || s1.QuorumPort != 2888 || len(s1.MoreAddrs) != 1 ||
		s1.MoreAddrs[0] != (MemberAddr{"127.0.0.1", 2889, 3889}) {
		t.Fatalf("server.1 = %+v", s1)
	}
	// ZooKeeper's QuorumServer.toString sorts the addresses by host.
	if got, want := s1.String(), "127.0.0.1:2889:3889|127.0.0.2:2888:3888:observer;2181"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got, want := QuorumText(c.Servers, 0), "server.1=127.0.0.1:2889:3889|127.0.0.2:2888:3888:observer;0.0.0.0:2181\n"+
		"server.2=[::1]:2888:3888|h2:2888:3888:participant\nversion=0"; got != want {
		t.Errorf("QuorumText = %q, want %q", got, want)
	}
	// Config.String keeps the written order, so the first address stays first.
	back, err := Parse(strings.NewReader(c.String()))
	if err != nil {
		t.Fatalf("reparsing %s: %v", c, err)
	}
	if back.String() != c.String() || back.Servers[1].Host != "127.0.0.2" {
		t.Errorf("round trip changed the config:\n%s\nvs\n%s", back, c)
	}
}

func TestMultiAddressInvalid(t *testing.T) {
	tests := []struct{ name, in, key, want string }{
		{"disabled", shapeBase + "server.1=h:1:2|g:3:4\nserver.2=h:5:6", "server.1", "Multiple address feature is disabled"},
		{"disabled explicitly", shapeBase + "multiAddress.enabled=false\nserver.1=h:1:2|g:3:4", "server.1", "sid 1"},
		{"mixed roles", shapeBase + "multiAddress.enabled=true\nserver.1=h:1:2:observer|g:3:4:participant", "server.1", "similar roles"},
		{"bad second address", shapeBase + "multiAddress.enabled=true\nserver.1=h:1:2|g:3", "server.1", "want host:quorumPort"},
		{"same ports in second", shapeBase + "multiAddress.enabled=true\nserver.1=h:1:2|g:3:3", "server.1", "must be different"},
		{"empty address", shapeBase + "multiAddress.enabled=true\nserver.1=h:1:2|", "server.1", "want host:quorumPort"},
		{"bad boolean", shapeBase + "multiAddress.enabled=yes", MultiAddressKey, `"true" or "false"`},
		{"bad listen all", shapeBase + "quorumListenOnAllIPs=1", QuorumListenOnAllIPsKey, `"true" or "false"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.in + "\n"))
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Key != tt.key {
				t.Fatalf("error %v: want a KeyError for %q", err, tt.key)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
	c, err := Parse(strings.NewReader(shapeBase + "observerMasterPort=2191\n"))
	if err != nil {
		t.Fatalf("observerMasterPort=2191: %v", err)
	}
	if c.QuorumShape.ObserverMasterPort != 2191 {
		t.Errorf("observerMasterPort=2191 read as %d", c.QuorumShape.ObserverMasterPort)
	}
}

func TestQuorumShapeKeys(t *testing.T) {
	c, err := Parse(strings.NewReader(shapeBase + "quorumListenOnAllIPs=true\nelectionPortBindRetry=0\n" +
		"multiAddress.reachabilityCheckEnabled=false\nmultiAddress.reachabilityCheckTimeoutMs=500\nobserverMasterPort=0\n"))
	if err != nil {
		t.Fatal(err)
	}
	q := c.QuorumShape
	if !q.ListenOnAllIPs || q.ElectionPortBindRetries() != 0 || !q.ReachabilityCheckDisabled || q.ReachabilityCheckTimeoutMs != 500 {
		t.Errorf("QuorumShape = %+v", q)
	}
	for v, want := range map[string]int{"": 3, "7": 7, "-2": 3, "x": 3, "0": 0} {
		in := shapeBase
		if v != "" {
			in += "zookeeper.electionPortBindRetry=" + v + "\n"
		}
		c, err := Parse(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.QuorumShape.ElectionPortBindRetries(); got != want {
			t.Errorf("electionPortBindRetry=%q: %d retries, want %d", v, got, want)
		}
		back, err := Parse(strings.NewReader(c.String()))
		if err != nil || back.QuorumShape != c.QuorumShape {
			t.Errorf("electionPortBindRetry=%q: round trip %+v, %v", v, back, err)
		}
	}
}
