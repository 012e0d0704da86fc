package zk

import (
	"crypto/sha1"
	"encoding/base64"
)

// OpenACL grants everything to everyone (ZooKeeper's OPEN_ACL_UNSAFE).
func OpenACL() []ACL { return WorldACL(PermAll) }

// ReadACL grants read to everyone (READ_ACL_UNSAFE).
func ReadACL() []ACL { return WorldACL(PermRead) }

// CreatorAllACL grants everything to the identities the session has authenticated (with
// AddAuth) when it creates the node (CREATOR_ALL_ACL). The server refuses it with
// ErrInvalidACL for a session without such identities.
func CreatorAllACL() []ACL { return []ACL{{Perms: PermAll, ID: ID{Scheme: "auth", ID: ""}}} }

// WorldACL grants perms to everyone.
func WorldACL(perms int32) []ACL {
	return []ACL{{Perms: perms, ID: ID{Scheme: "world", ID: "anyone"}}}
}

// DigestACL grants perms to sessions that authenticated with AddAuth(ctx, "digest",
// "user:password").
func DigestACL(perms int32, user, password string) []ACL {
	return []ACL{{Perms: perms, ID: ID{Scheme: "digest", ID: DigestID(user, password)}}}
}

// DigestID is the digest scheme's id for user and password: "user:" followed by the base64
// SHA-1 of "user:password", as the server computes it.
func DigestID(user, password string) string {
	sum := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// IPACL grants perms to clients connecting from addr: an IPv4 or IPv6 address, optionally
// with a "/bits" prefix length ("10.0.0.0/8").
func IPACL(perms int32, addr string) []ACL {
	return []ACL{{Perms: perms, ID: ID{Scheme: "ip", ID: addr}}}
}
