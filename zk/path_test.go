package zk

import (
	"errors"
	"slices"
	"testing"
)

func TestParseConnString(t *testing.T) {
	cases := []struct {
		in      string
		servers []string
		chroot  string
	}{
		{"a:1", []string{"a:1"}, ""},
		{"a", []string{"a:2181"}, ""},
		{"a:1,b:2,a:1", []string{"a:1", "b:2"}, ""},
		{" a:1 , b ", []string{"a:1", "b:2181"}, ""},
		{"a:1,b:2/app/x", []string{"a:1", "b:2"}, "/app/x"},
		{"a:1/", []string{"a:1"}, ""},
		{"[::1]:5,::1", []string{"[::1]:5", "[::1]:2181"}, ""},
		{"127.0.0.1:2181/zk", []string{"127.0.0.1:2181"}, "/zk"},
	}
	for _, c := range cases {
		got, err := parseConnString(c.in)
		if err != nil || !slices.Equal(got.servers, c.servers) || got.chroot != c.chroot {
			t.Errorf("parse %q = %+v %v, want %v %q", c.in, got, err, c.servers, c.chroot)
		}
	}
	for _, bad := range []string{"", "/app", "a:x", "a:0", "a:70000", "a:1/app/", "a:1/a//b", "a:1/a/../b", ":1"} {
		if _, err := parseConnString(bad); !errors.Is(err, ErrBadArguments) {
			t.Errorf("parse %q: %v, want ErrBadArguments", bad, err)
		}
	}
}

func TestValidatePath(t *testing.T) {
	good := []string{"/", "/a", "/a/b", "/a.b", "/..a", "/a..", "/.a/b", "/zookeeper", "/日本", "/a b"}
	for _, p := range good {
		if err := validatePath(p, false); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	bad := []string{"", "a", "/a/", "//", "/a//b", "/.", "/..", "/a/.", "/a/..", "/./a", "/a\x00", "/a\x1f",
		"/a\u007f", "/a\u009f", "/a\ud7ff\ue000", "/a\ufff0", "/\xff"}
	for _, p := range bad {
		if err := validatePath(p, false); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
	// Sequential creates may end in '/'.
	if err := validatePath("/a/", true); err != nil {
		t.Errorf("sequential /a/: %v", err)
	}
}

func TestChroot(t *testing.T) {
	var none chroot
	if p, err := none.toServer("/a", false); err != nil || p != "/a" {
		t.Fatal(p, err)
	}
	c := chroot("/app")
	for client, server := range map[string]string{"/": "/app", "/a": "/app/a", "/a/b": "/app/a/b"} {
		if p, err := c.toServer(client, false); err != nil || p != server {
			t.Errorf("toServer(%q) = %q %v", client, p, err)
		}
		if p, ok := c.toClient(server); !ok || p != client {
			t.Errorf("toClient(%q) = %q %v", server, p, ok)
		}
	}
	for _, outside := range []string{"/apple", "/ap", "/", "/other/app"} {
		if _, ok := c.toClient(outside); ok {
			t.Errorf("%q mapped into the chroot", outside)
		}
	}
	if _, err := c.toServer("a", false); !errors.Is(err, ErrBadArguments) {
		t.Errorf("relative path: %v", err)
	}
	if p, err := c.toServer("/q/", true); err != nil || p != "/app/q/" {
		t.Errorf("sequential: %q %v", p, err)
	}
}

func TestParent(t *testing.T) {
	for p, want := range map[string]string{"/": "", "/a": "/", "/a/b": "/a", "/a/b/c": "/a/b"} {
		if got := parent(p); got != want {
			t.Errorf("parent(%q) = %q, want %q", p, got, want)
		}
	}
}
