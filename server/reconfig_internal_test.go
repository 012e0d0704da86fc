package server

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/zab"
	"github.com/zkd-io/zkd/jute"
)

// TestLeaderLastSeenReplacesTruncatedProposal: a reconfig this follower logged but no
// leader committed (its proposal is truncated when a leader without it syncs this server)
// must not stay pending: NEWLEADER's configuration replaces it, in memory and in
// zoo.cfg.dynamic.next, as setLastSeenQuorumVerifier overwrites it in ZooKeeper. Kept, it
// would be activated when this server next leads.
func TestLeaderLastSeenReplacesTruncatedProposal(t *testing.T) {
	type write struct {
		text    string
		version int64
		next    bool
	}
	writes := make(chan write, 16)
	peers := PeersOf(map[int]config.Member{
		1: {ID: 1, Host: "127.0.0.1", QuorumPort: 1001, ElectionPort: 2001},
		2: {ID: 2, Host: "127.0.0.1", QuorumPort: 1002, ElectionPort: 2002},
		3: {ID: 3, Host: "127.0.0.1", QuorumPort: 1003, ElectionPort: 2003},
	})
	committed := zab.MakeZxid(1, 0)
	s, err := New(Config{
		DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ServerID: 2, Peers: peers, ReconfigEnabled: true, StandaloneEnabled: true, ConfigVersion: committed,
		PersistConfig: func(text []byte, version int64, next bool) error {
			writes <- write{string(text), version, next}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.startPersist()
	defer func() {
		close(s.logCh)
		<-s.logDone
		s.txlog.Close()
	}()
	next := func() write {
		t.Helper()
		select {
		case w := <-writes:
			return w
		case <-time.After(30 * time.Second):
			t.Fatal("no configuration file written")
		}
		return write{}
	}

	cur := s.dynamic()
	proposed := cur
	proposed.Servers = map[int]config.Member{}
	for id, spec := range cur.Servers {
		proposed.Servers[id] = spec
	}
	proposed.Servers[4] = config.Member{ID: 4, Host: "127.0.0.1", QuorumPort: 1004, ElectionPort: 2004}
	proposed.Version = zab.MakeZxid(1, 7)
	s.onConfigEvent(zab.ConfigEvent{Kind: zab.ConfigSeen, Zxid: proposed.Version, Text: []byte(proposed.Text()), Designated: zab.NoLeader})
	if s.ens.lastSeen == nil || s.ens.lastSeen.Version != proposed.Version {
		t.Fatalf("a proposed reconfig is not pending: %+v", s.ens.lastSeen)
	}
	if w := next(); !w.next || w.version != proposed.Version {
		t.Fatalf("wrote %+v, want zoo.cfg.dynamic.next of version %x", w, proposed.Version)
	}

	// A new leader that never had the proposal sends the committed configuration.
	s.onConfigEvent(zab.ConfigEvent{Kind: zab.ConfigFromLeader, Zxid: zab.MakeZxid(2, 0), Text: []byte(cur.Text()), Designated: zab.NoLeader})
	if s.ens.lastSeen != nil {
		t.Fatalf("the truncated proposal %x is still pending after NEWLEADER", s.ens.lastSeen.Version)
	}
	if w := next(); !w.next || w.text != "" {
		t.Fatalf("wrote %+v, want zoo.cfg.dynamic.next removed", w)
	}
	if _, ls, err := s.zabConfigs(); err != nil || ls.Text != nil {
		t.Fatalf("a leader started now would complete configuration %x (err %v)", ls.Version, err)
	}
}

// TestProposedConfigWrittenBeforeItsTxn: a reconfig txn handed to the log (a follower's
// proposal, the leader's own) first records its configuration as last seen, with
// zoo.cfg.dynamic.next written by the storage goroutine before the txn itself, so the file
// is on disk before the proposal is acked.
func TestProposedConfigWrittenBeforeItsTxn(t *testing.T) {
	order := make(chan string, 16)
	peers := PeersOf(map[int]config.Member{
		1: {ID: 1, Host: "127.0.0.1", QuorumPort: 1001, ElectionPort: 2001},
		2: {ID: 2, Host: "127.0.0.1", QuorumPort: 1002, ElectionPort: 2002},
		3: {ID: 3, Host: "127.0.0.1", QuorumPort: 1003, ElectionPort: 2003},
	})
	s, err := New(Config{
		DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ServerID: 2, Peers: peers, ReconfigEnabled: true, StandaloneEnabled: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Written on the storage goroutine: the txn must not be durable (ackable) yet.
	s.cfg.PersistConfig = func(text []byte, version int64, next bool) error {
		order <- fmt.Sprintf("config %x next=%v durable=%v", version, next, s.durable.Load() >= version)
		return nil
	}
	s.startPersist()
	defer func() {
		close(s.logCh)
		<-s.logDone
		s.txlog.Close()
	}()
	next := s.dynamic()
	next.Servers = map[int]config.Member{1: next.Servers[1], 2: next.Servers[2]}
	zxid := zab.MakeZxid(1, 1)
	next.Version = zxid
	txn := jute.EncodeTxn(nil, &jute.LoggedTxn{
		Header: jute.TxnHeader{ClientID: 1, Cxid: 1, Zxid: zxid, Time: 1, Type: jute.OpReconfig},
		Body:   &jute.SetDataTxn{Path: "/zookeeper/config", Data: []byte(next.Text()), Version: -1},
	})
	plain := jute.EncodeTxn(nil, &jute.LoggedTxn{
		Header: jute.TxnHeader{ClientID: 1, Cxid: 2, Zxid: zxid + 1, Time: 1, Type: jute.OpSetData},
		Body:   &jute.SetDataTxn{Path: "/x", Data: []byte("v"), Version: -1},
	})
	txns := []zab.Committed{{Zxid: zxid, Data: txn}, {Zxid: zxid + 1, Data: plain}}
	s.seeProposedConfigs(txns)
	for _, c := range txns {
		s.queueAppend(c.Zxid, c.Data)
	}
	s.storageOp(func() func() { order <- "logged"; return nil })
	var got []string
	for len(got) < 2 {
		select {
		case o := <-order:
			got = append(got, o)
		case <-time.After(30 * time.Second):
			t.Fatalf("only %q", got)
		}
	}
	if want := []string{fmt.Sprintf("config %x next=true durable=false", zxid), "logged"}; !slices.Equal(got, want) {
		t.Fatalf("storage did %q, want %q", got, want)
	}
	if s.ens.lastSeen == nil || s.ens.lastSeen.Version != zxid {
		t.Fatalf("last seen %+v, want version %x", s.ens.lastSeen, zxid)
	}
}
