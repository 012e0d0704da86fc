package config

import (
	"strings"
	"testing"
)

func TestQuorumText(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lines   []string
		version int64
		want    string
	}{{
		// As Apache ZooKeeper 3.8 serves it for start.sh's loopback ensemble.
		name: "static",
		lines: []string{
			"server.3=127.0.0.1:27403:27503",
			"server.1=127.0.0.1:27401:27501",
			"server.2=127.0.0.1:27402:27502",
		},
		want: "server.1=127.0.0.1:27401:27501:participant\n" +
			"server.2=127.0.0.1:27402:27502:participant\n" +
			"server.3=127.0.0.1:27403:27503:participant\nversion=0",
	}, {
		name: "client parts, observer, IPv6, version",
		lines: []string{
			"server.1=127.0.0.1:2888:3888;127.0.0.1:2181",
			"server.2=127.0.0.2:2888:3888:participant;2182",
			"server.3=[::1]:2888:3888:OBSERVER;[::1]:2183",
		},
		version: 0x100000003,
		want: "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n" +
			"server.2=127.0.0.2:2888:3888:participant;0.0.0.0:2182\n" +
			"server.3=[::1]:2888:3888:observer;[::1]:2183\nversion=100000003",
	}, {
		// Java's HashMap puts 16 in bucket 0 and 17 in bucket 1 of its 16.
		name: "hash order",
		lines: []string{
			"server.2=h:1:2", "server.16=h:1:2", "server.17=h:1:2", "server.1=h:1:2",
		},
		want: "server.16=h:1:2:participant\nserver.1=h:1:2:participant\n" +
			"server.17=h:1:2:participant\nserver.2=h:1:2:participant\nversion=0",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			text := "tickTime=2000\ninitLimit=5\nsyncLimit=2\ndataDir=/tmp/x\nclientPort=2181\n" +
				strings.Join(tc.lines, "\n") + "\n"
			c, err := Parse(strings.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			if got := QuorumText(c.Servers, tc.version); got != tc.want {
				t.Errorf("QuorumText:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestJavaHashMapCapacity(t *testing.T) {
	for n, want := range map[int]int{0: 16, 12: 16, 13: 32, 24: 32, 25: 64} {
		if got := javaHashMapCapacity(n); got != want {
			t.Errorf("capacity after %d puts = %d, want %d", n, got, want)
		}
	}
	// Long.hashCode folds the high word in: 1<<32 | 5 hashes as 4.
	if got := javaLongBucket(1<<32|5, 16); got != 4 {
		t.Errorf("bucket of 1<<32|5 = %d, want 4", got)
	}
}
