package server

import (
	"context"
	"log/slog"
	"os"
	"os/user"
	"strings"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/jute"
)

// ZooKeeper's audit log (zookeeper.audit.enable=true; ZKAuditProvider, AuditHelper and
// AuditEvent in org.apache.zookeeper.audit). A line is tab-separated key=value pairs in
// this order, each left out when it has no value, then the result:
//
//	session=0x1a user=127.0.0.1,alice ip=127.0.0.1 operation=create znode=/a znode_type=persistent result=success
//
// session is the session id in hex, user the connection's authenticated ids as their
// providers name them (comma-separated: the ip, a digest's user name, ...), ip the client's
// address; acl is only a setAcl's (ZKUtil.aclToString: scheme:id:perms, one after the other
// with no separator, as ZooKeeper writes it). A write is logged by the server its client
// is connected to, once applied (FinalRequestProcessor): success, or failure for a write
// that failed. A multi that applied logs a line per create, delete and setData in it; one
// that failed logs one operation=multiOperation line with result=failure. serverStart
// (result=success) and serverStop (result=invoked) carry only user (the user running the
// server) and operation. zkd writes the lines to its log through Logger with logger=audit,
// the line as the message, at INFO, or ERROR for result=failure (Slf4jAuditLogger).
// Every server logs the ephemeral nodes a closed or expired session's txn deletes, as
// DataTree.deleteNodes does: operation=ephemeralZNodeDeletionOnSessionCloseOrExpire with
// the session, the user running the server, the znode and no ip.

// Audit operations (AuditConstants).
const (
	auditOpCreate  = "create"
	auditOpDelete  = "delete"
	auditOpSetData = "setData"
	auditOpSetACL  = "setAcl"
	auditOpMulti   = "multiOperation"
	auditOpConfig  = "reconfig"
	auditOpStart   = "serverStart"
	auditOpStop    = "serverStop"
	auditOpEphDel  = "ephemeralZNodeDeletionOnSessionCloseOrExpire"
)

// Audit results (AuditEvent.Result).
const (
	auditSuccess = "success"
	auditFailure = "failure"
	auditInvoked = "invoked"
)

// auditEvent is one audit line's fields; an empty field is left out.
type auditEvent struct {
	session, user, ip, operation, znode, znodeType, acl, result string
}

// String formats the event as AuditEvent.toString does.
func (e *auditEvent) String() string {
	var b strings.Builder
	for _, f := range [...]struct{ k, v string }{
		{"session", e.session}, {"user", e.user}, {"ip", e.ip}, {"operation", e.operation},
		{"znode", e.znode}, {"znode_type", e.znodeType}, {"acl", e.acl}, {"result", e.result},
	} {
		if f.v == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\t')
		}
		b.WriteString(f.k)
		b.WriteByte('=')
		b.WriteString(auditSanitize.Replace(f.v))
	}
	return b.String()
}

// auditSanitize drops tabs and line breaks from a value (AuditEvent.sanitize).
var auditSanitize = strings.NewReplacer("\t", "", "\n", "", "\r", "")

// newAuditLogger returns the audit log's logger, nil when auditing is off.
func newAuditLogger(cfg *Config) *slog.Logger {
	if !cfg.Audit || cfg.Logger == nil {
		return nil
	}
	return cfg.Logger.With("logger", "audit")
}

// auditLog writes one event; it does nothing when auditing is off.
func (s *Server) auditLog(e *auditEvent) {
	if s.audit == nil {
		return
	}
	level := slog.LevelInfo
	if e.result == auditFailure {
		level = slog.LevelError
	}
	s.audit.Log(context.Background(), level, e.String())
}

// auditServer logs serverStart or serverStop.
func (s *Server) auditServer(op, result string) {
	s.auditLog(&auditEvent{user: auditProcessUser(), operation: op, result: result})
}

// auditProcessUser names the user running the server (ServerCnxnFactory.getUserName: the
// system user when no login is configured).
func auditProcessUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

// auditUsers lists a connection's authenticated ids as AuthUtil.getUsers does: each
// provider's user name (a digest id's part before the colon, any other id as it is),
// comma-separated, the empty ones left out.
func auditUsers(ids []jute.ID) string {
	var b strings.Builder
	for _, id := range ids {
		name := id.ID
		if id.Scheme == "digest" {
			name, _, _ = strings.Cut(name, ":")
		}
		if strings.TrimSpace(name) == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(name)
	}
	return b.String()
}

// auditCreateMode is CreateMode.fromFlag(flags).toString().toLowerCase(); ok is false for
// a flag that names no mode (ZooKeeper then logs no audit line).
func auditCreateMode(flags int32) (mode string, ok bool) {
	switch flags {
	case jute.FlagPersistent:
		return "persistent", true
	case jute.FlagEphemeral:
		return "ephemeral", true
	case jute.FlagPersistentSequential:
		return "persistent_sequential", true
	case jute.FlagEphemeralSequential:
		return "ephemeral_sequential", true
	case jute.FlagContainer:
		return "container", true
	case jute.FlagPersistentWithTTL:
		return "persistent_with_ttl", true
	case jute.FlagPersistentSequentialTTL:
		return "persistent_sequential_with_ttl", true
	case jute.FlagPersistentSequential64: // zkd's wide extension
		return "persistent_sequential_64", true
	case jute.FlagEphemeralSequential64:
		return "ephemeral_sequential_64", true
	}
	return "", false
}

// auditACL is ZKUtil.aclToString.
func auditACL(acls []jute.ACL) string {
	var b strings.Builder
	for _, a := range acls {
		b.WriteString(a.ID.Scheme)
		b.WriteByte(':')
		b.WriteString(a.ID.ID)
		b.WriteByte(':')
		for _, p := range [...]struct {
			bit int32
			c   byte
		}{{jute.PermCreate, 'c'}, {jute.PermDelete, 'd'}, {jute.PermRead, 'r'}, {jute.PermWrite, 'w'}, {jute.PermAdmin, 'a'}} {
			if a.Perms&p.bit != 0 {
				b.WriteByte(p.c)
			}
		}
	}
	return b.String()
}

// auditWrite logs a write answered to its client (AuditHelper.addAuditLog): failed is
// set for a write that failed as a whole (an error txn).
func (s *Server) auditWrite(q *queued, txn *jute.LoggedTxn, res *applyResult, failed bool) {
	if s.audit == nil {
		return
	}
	c, r := q.c, q.req
	base := auditEvent{ip: c.ip, user: auditUsers(c.authIDs)}
	if c.sess != nil {
		base.session = hex(c.sess.id)
	}
	log := func(op, znode, znodeType, acl, result string) {
		e := base
		e.operation, e.znode, e.znodeType, e.acl, e.result = op, znode, znodeType, acl, result
		s.auditLog(&e)
	}
	result := auditSuccess
	if failed || res.Err != jute.OK {
		result = auditFailure
	}
	// The path: the applied txn's, or the request's for a write that failed.
	path := func(reqPath string) string {
		if failed {
			return reqPath
		}
		return res.Path
	}
	if row := jute.LookupOp(r.hdr.Type); row != nil && row.Ext != "" {
		// The keeper-ops writes: logged as the creates and deletes they are made of; an
		// error txn is a failure, but for createIfNotExists, which then wrote nothing.
		switch {
		case txn.Header.Type == jute.OpMulti && !failed:
			m := &jute.MultiRequest{}
			if cr, ok := r.body.(*jute.CreateRequest); ok {
				m.Ops = []jute.MultiOp{{Type: jute.OpCreate, Body: cr}}
			}
			s.auditMulti(m, res, log)
			return
		case r.hdr.Type == jute.OpCreateIfNotExists && txn.Header.Type == jute.OpError,
			r.hdr.Type == jute.OpCheckNotExists:
			return
		}
	}
	switch body := r.body.(type) {
	case *jute.CreateRequest: // create, create2, createContainer; not createTTL, as in ZooKeeper
		mode, ok := auditCreateMode(body.Flags)
		if !ok {
			return
		}
		log(auditOpCreate, path(body.Path), mode, "", result)
	case *jute.PathVersionRequest:
		if r.hdr.Type == jute.OpDelete {
			log(auditOpDelete, path(body.Path), "", "", result)
		}
	case *jute.SetDataRequest:
		log(auditOpSetData, path(body.Path), "", "", result)
	case *jute.SetACLRequest:
		log(auditOpSetACL, path(body.Path), "", auditACL(body.ACL), result)
	case *jute.MultiRequest:
		if r.hdr.Type != jute.OpMulti {
			return
		}
		if failed || txn.Header.Type != jute.OpMulti {
			log(auditOpMulti, "", "", "", auditFailure)
			return
		}
		s.auditMulti(body, res, log)
	case *jute.ReconfigRequest:
		log(auditOpConfig, path(""), "", "", result)
	}
}

// auditMulti logs an applied multi as AuditHelper.logMultiOperation does: a line per
// create, delete and setData, or one multiOperation failure when an op failed. A create's
// znode_type is its request's, found by the path it asked for (so none for a sequential
// node or a createTTL, as in ZooKeeper).
func (s *Server) auditMulti(m *jute.MultiRequest, res *applyResult, log func(op, znode, znodeType, acl, result string)) {
	modes := map[string]string{}
	for _, o := range m.Ops {
		if cr, ok := o.Body.(*jute.CreateRequest); ok {
			if mode, ok := auditCreateMode(cr.Flags); ok {
				modes[cr.Path] = mode
			}
		}
	}
	failed := false
	for _, sub := range res.Multi {
		switch sub.Type {
		case jute.OpCreate, jute.OpCreate2, jute.OpCreateTTL, jute.OpCreateContainer:
			log(auditOpCreate, sub.Path, modes[sub.Path], "", auditSuccess)
		case jute.OpDelete, jute.OpDeleteContainer:
			log(auditOpDelete, sub.Path, "", "", auditSuccess)
		case jute.OpSetData:
			log(auditOpSetData, sub.Path, "", "", auditSuccess)
		case jute.OpError:
			failed = true
		}
	}
	if failed {
		log(auditOpMulti, "", "", "", auditFailure)
	}
}

// auditEphemerals logs the ephemeral nodes a closeSession txn deleted (DataTree.deleteNodes,
// on every server that applies it).
func (s *Server) auditEphemerals(session int64, events []datatree.Event) {
	if s.audit == nil {
		return
	}
	for _, ev := range events {
		if ev.Type == jute.EventNodeDeleted {
			s.auditLog(&auditEvent{session: hex(session), user: auditProcessUser(), operation: auditOpEphDel,
				znode: ev.Path, result: auditSuccess})
		}
	}
}
