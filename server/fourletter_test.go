package server_test

import (
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

func fourLetter(t *testing.T, addr, cmd string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write([]byte(cmd)); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return string(b)
}

func TestFourLetterWords(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.FourLetterWhitelist = []string{"*"} }))
	c := rawzk.Connect(t, srv.Addr())
	c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/w4", ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{})
	c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/w4/e", ACL: jute.OpenACLUnsafe, Flags: jute.FlagEphemeral}, &jute.CreateResponse{})
	c.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/w4", Watch: true}, &jute.GetDataResponse{})
	sid := fmt.Sprintf("0x%x", c.Session)

	if got := fourLetter(t, srv.Addr(), "ruok"); got != "imok" {
		t.Errorf("ruok = %q", got)
	}
	srvr := fourLetter(t, srv.Addr(), "srvr")
	for _, re := range []string{
		`(?m)^Zookeeper version: 3\.8\.0-[^,]+, built on .+$`,
		`(?m)^Latency min/avg/max: \d+/[\d.]+/\d+$`,
		`(?m)^Mode: standalone$`,
		`(?m)^Node count: 7$`, // "", /, /zookeeper, quota, config, /w4, /w4/e, as ZooKeeper counts
		`(?m)^Connections: 2$`,
		`(?m)^Zxid: 0x3$`,
	} {
		if !regexp.MustCompile(re).MatchString(srvr) {
			t.Errorf("srvr lacks %s:\n%s", re, srvr)
		}
	}
	stat := fourLetter(t, srv.Addr(), "stat")
	if !strings.Contains(stat, "Clients:\n /127.0.0.1:") || !strings.Contains(stat, "Mode: standalone") {
		t.Errorf("stat:\n%s", stat)
	}
	mntr := fourLetter(t, srv.Addr(), "mntr")
	for _, want := range []string{"zk_server_state\tstandalone\n", "zk_znode_count\t7\n", "zk_ephemerals_count\t1\n", "zk_watch_count\t1\n"} {
		if !strings.Contains(mntr, want) {
			t.Errorf("mntr lacks %q", want)
		}
	}
	if !strings.HasPrefix(mntr, "zk_version\t3.8.0-") {
		t.Errorf("mntr starts %q", mntr[:40])
	}
	if got := fourLetter(t, srv.Addr(), "cons"); !strings.Contains(got, "sid="+sid) || !strings.Contains(got, "lop=GETD") {
		t.Errorf("cons:\n%s", got)
	}
	if got := fourLetter(t, srv.Addr(), "wchs"); got != "1 connections watching 1 paths\nTotal watches:1\n" {
		t.Errorf("wchs = %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "wchc"); got != sid+"\n\t/w4\n\n" {
		t.Errorf("wchc = %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "wchp"); got != "/w4\n\t"+sid+"\n\n" {
		t.Errorf("wchp = %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "dump"); !strings.Contains(got, sid+":\n\t/w4/e\n") {
		t.Errorf("dump:\n%s", got)
	}
	if got := fourLetter(t, srv.Addr(), "isro"); got != "rw" {
		t.Errorf("isro = %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "dirs"); !regexp.MustCompile(`^datadir_size: \d+\nlogdir_size: [1-9]\d*\n$`).MatchString(got) {
		t.Errorf("dirs = %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "envi"); !strings.HasPrefix(got, "Environment:\nzookeeper.version=3.8.0-") {
		t.Errorf("envi = %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "srst"); got != "Server stats reset.\n" {
		t.Errorf("srst = %q", got)
	}
}

func TestFourLetterWhitelist(t *testing.T) {
	srv := zktest.Start(t) // default whitelist: srvr only
	if got := fourLetter(t, srv.Addr(), "ruok"); got != "ruok is not executed because it is not in the whitelist.\n" {
		t.Errorf("ruok = %q", got)
	}
	if got := fourLetter(t, srv.Addr(), "srvr"); !strings.Contains(got, "Mode: standalone") {
		t.Errorf("srvr = %q", got)
	}
}
