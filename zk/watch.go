package zk

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/zkd-io/zkd/jute"
)

// watchKind is the client-side table a watch lives in; it decides which events fire it and
// which setWatches list re-registers it after a reconnect.
type watchKind uint8

const (
	kindData       watchKind = iota // getData, or exists on an existing node
	kindExist                       // exists on a missing node
	kindChild                       // getChildren
	kindPersistent                  // addWatch PERSISTENT
	kindRecursive                   // addWatch PERSISTENT_RECURSIVE
	// kindConfig is getConfig's data watch on the server's ConfigNode, which no chroot
	// applies to: its path is a server path, so the other kinds' dispatch never sees it.
	kindConfig
	// kindResume and kindResumeRecursive are AddWatchSince's watches: dispatched as the
	// persistent kinds, but not re-registered by setWatches after a reconnect, where the
	// application resumes them with AddWatchSince from the connection's LastZxid.
	kindResume
	kindResumeRecursive
	numKinds
)

// oneShotBuffer holds a standard watch's single event, so delivering it never blocks and
// needs no goroutine.
const oneShotBuffer = 1

// persistentBuffer is the channel buffer of persistent watches and session events; events
// beyond it wait in the queue's unbounded overflow.
const persistentBuffer = 64

// watchEntry is one watch the application holds: a one-shot channel or a *Watcher.
type watchEntry struct {
	kind watchKind
	path string // client path (chroot removed)
	q    *eventQueue
	// armed: an AddWatchSince watch the server accepted once, which the client resumes by
	// itself on every new connection (guarded by the registry's mutex).
	armed bool
}

// registry holds the client's watches by kind and client path. The reader dispatches
// notifications into it; the connection loop reads it to build setWatches. Delivery only
// pushes to eventQueues, which never block.
type registry struct {
	mu sync.Mutex
	m  [numKinds]map[string][]*watchEntry
}

func (r *registry) add(e *watchEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m[e.kind] == nil {
		r.m[e.kind] = make(map[string][]*watchEntry)
	}
	r.m[e.kind][e.path] = append(r.m[e.kind][e.path], e)
}

// resumeKey is one server registration an AddWatchSince watch needs: its kind and path.
type resumeKey struct {
	kind watchKind
	path string
}

// arm marks e as a watch the client resumes by itself after a reconnect.
func (r *registry) arm(e *watchEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.armed = true
}

// resumable returns the registrations the armed AddWatchSince watches need, one per kind
// and path (the replay of one reaches every entry on it), sorted.
func (r *registry) resumable() []resumeKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	var keys []resumeKey
	for _, k := range []watchKind{kindResume, kindResumeRecursive} {
		for p, es := range r.m[k] {
			if slices.ContainsFunc(es, func(e *watchEntry) bool { return e.armed }) {
				keys = append(keys, resumeKey{k, p})
			}
		}
	}
	slices.SortFunc(keys, func(a, b resumeKey) int {
		if a.path != b.path {
			return strings.Compare(a.path, b.path)
		}
		return int(a.kind) - int(b.kind)
	})
	return keys
}

// endResume ends the armed watches of key with ev, their last event: the resume failed.
func (r *registry) endResume(key resumeKey, ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var keep []*watchEntry
	for _, e := range r.m[key.kind][key.path] {
		if e.armed {
			e.q.push(ev, true)
		} else {
			keep = append(keep, e)
		}
	}
	if len(keep) == 0 {
		delete(r.m[key.kind], key.path)
	} else {
		r.m[key.kind][key.path] = keep
	}
}

// take removes and returns the entries of kind k on path.
func (r *registry) takeLocked(k watchKind, path string) []*watchEntry {
	es := r.m[k][path]
	if es != nil {
		delete(r.m[k], path)
	}
	return es
}

// dispatch delivers a server notification, with its path already relative to the chroot,
// following ZooKeeper's client rules: standard watches fire once and are removed, persistent
// ones stay, recursive ones fire for the path and its descendants but never for child-list
// changes.
func (r *registry) dispatch(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fire := func(es []*watchEntry, final bool) {
		for _, e := range es {
			e.q.push(ev, final)
		}
	}
	switch ev.Type {
	case EventNodeCreated, EventNodeDataChanged:
		fire(r.takeLocked(kindData, ev.Path), true)
		fire(r.takeLocked(kindExist, ev.Path), true)
	case EventNodeDeleted:
		fire(r.takeLocked(kindData, ev.Path), true)
		fire(r.takeLocked(kindExist, ev.Path), true)
		fire(r.takeLocked(kindChild, ev.Path), true)
	case EventNodeChildrenChanged:
		fire(r.takeLocked(kindChild, ev.Path), true)
	default:
		return
	}
	fire(r.m[kindPersistent][ev.Path], false)
	fire(r.m[kindResume][ev.Path], false)
	if ev.Type != EventNodeChildrenChanged {
		for p := ev.Path; p != ""; p = parent(p) {
			fire(r.m[kindRecursive][p], false)
			fire(r.m[kindResumeRecursive][p], false)
		}
	}
}

// dispatchConfig delivers a notification on the server's ConfigNode to getConfig's watches.
func (r *registry) dispatchConfig(ev Event) {
	switch ev.Type {
	case EventNodeCreated, EventNodeDataChanged, EventNodeDeleted:
	default:
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.takeLocked(kindConfig, ConfigNode) {
		e.q.push(ev, true)
	}
}

// removeConfig ends getConfig's watches after a removeWatches of the server's ConfigNode
// removed them on the server.
func (r *registry) removeConfig() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.takeLocked(kindConfig, ConfigNode) {
		e.q.push(Event{Type: EventDataWatchRemoved, State: StateConnected, Path: ConfigNode}, true)
	}
}

// remove drops one entry (a Watcher being removed) and reports whether other entries of
// the same kind remain on its path.
func (r *registry) remove(e *watchEntry) (found, others bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	es := r.m[e.kind][e.path]
	i := slices.Index(es, e)
	if i < 0 {
		return false, len(es) > 0
	}
	es = slices.Delete(es, i, i+1)
	if len(es) == 0 {
		delete(r.m[e.kind], e.path)
	} else {
		r.m[e.kind][e.path] = es
	}
	return true, len(es) > 0
}

// removeType ends the watches a successful removeWatches(path, t) removed on the server,
// with the removal event Java's client gives them.
func (r *registry) removeType(path string, t WatcherType) {
	r.mu.Lock()
	defer r.mu.Unlock()
	end := func(k watchKind, typ EventType) {
		for _, e := range r.takeLocked(k, path) {
			e.q.push(Event{Type: typ, State: StateConnected, Path: path}, true)
		}
	}
	if t == WatcherData || t == WatcherAny {
		end(kindData, EventDataWatchRemoved)
		end(kindExist, EventDataWatchRemoved)
	}
	if t == WatcherChildren || t == WatcherAny {
		end(kindChild, EventChildWatchRemoved)
	}
	if t == WatcherPersistent || t == WatcherAny {
		end(kindPersistent, EventPersistentWatchRemoved)
		end(kindResume, EventPersistentWatchRemoved)
	}
	if t == WatcherPersistentRecursive || t == WatcherAny {
		end(kindRecursive, EventPersistentWatchRemoved)
		end(kindResumeRecursive, EventPersistentWatchRemoved)
	}
}

// has reports whether any client watch matches (path, t), for CheckWatches.
func (r *registry) has(path string, t WatcherType) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := func(k watchKind) bool { return len(r.m[k][path]) > 0 }
	switch t {
	case WatcherData:
		return n(kindData) || n(kindExist)
	case WatcherChildren:
		return n(kindChild)
	case WatcherPersistent:
		return n(kindPersistent)
	case WatcherPersistentRecursive:
		return n(kindRecursive)
	case WatcherAny:
		for k := range kindConfig {
			if n(k) {
				return true
			}
		}
	}
	return false
}

// terminate ends every watch with an EventNotWatching carrying err; the session is over.
func (r *registry) terminate(state State, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.m {
		for path, es := range r.m[k] {
			for _, e := range es {
				e.q.push(Event{Type: EventNotWatching, State: state, Path: path, Err: err}, true)
			}
		}
		r.m[k] = nil
	}
}

// paths returns the watched paths of each kind, sorted, for setWatches.
func (r *registry) paths() (lists [numKinds][]string, any bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.m {
		if watchKind(k) == kindResume || watchKind(k) == kindResumeRecursive {
			continue // the server dropped them with the connection; the application resumes them
		}
		for p := range r.m[k] {
			lists[k] = append(lists[k], p)
			any = true
		}
		slices.Sort(lists[k])
	}
	return lists, any
}

// setWatchesLimit bounds the paths' bytes in one setWatches packet; Java's client splits at
// 128 KiB so each packet stays far below jute.maxbuffer.
const setWatchesLimit = 128 << 10

// setWatchesPackets builds the setWatches (or, with persistent watches, setWatches2) records
// that re-register the client's watches after a reconnect, translated to server paths.
func setWatchesPackets(lists [numKinds][]string, relZxid int64, root chroot) []*jute.SetWatches {
	v2 := len(lists[kindPersistent]) > 0 || len(lists[kindRecursive]) > 0
	var out []*jute.SetWatches
	cur := &jute.SetWatches{RelativeZxid: relZxid, V2: v2}
	size := 0
	fields := func(sw *jute.SetWatches) [numKinds]*[]string {
		return [numKinds]*[]string{&sw.DataWatches, &sw.ExistWatches, &sw.ChildWatches,
			&sw.PersistentWatches, &sw.PersistentRecursiveWatches, &sw.DataWatches, nil, nil}
	}
	for k := range numKinds {
		for _, p := range lists[k] {
			sp := p
			if k != kindConfig {
				sp = root.join(p)
			}
			if size > 0 && size+len(sp) > setWatchesLimit {
				out = append(out, cur)
				cur = &jute.SetWatches{RelativeZxid: relZxid, V2: v2}
				size = 0
			}
			f := fields(cur)[k]
			*f = append(*f, sp)
			size += len(sp)
		}
	}
	if size > 0 {
		out = append(out, cur)
	}
	// jute writes nil lists as null; the server wants empty vectors.
	for _, sw := range out {
		for _, f := range fields(sw) {
			if f != nil && *f == nil {
				*f = []string{}
			}
		}
	}
	return out
}

// Watcher is a persistent or persistent-recursive watch (AddWatch). It stays registered until
// removed or the session ends, and is re-registered after every reconnect.
type Watcher struct {
	c     *Conn
	entry *watchEntry
	mode  AddWatchMode
}

// Events returns the watch's events. The channel is closed after the last one: an
// EventPersistentWatchRemoved after Remove, or an EventNotWatching when the session ends.
// Events that do not fit the channel's buffer wait in an unbounded queue, so a slow reader
// never stalls the connection; read the channel until it is closed, or call Stop.
func (w *Watcher) Events() <-chan Event { return w.entry.q.ch }

// Path is the watched path, relative to the chroot.
func (w *Watcher) Path() string { return w.entry.path }

// Mode is the watch's mode.
func (w *Watcher) Mode() AddWatchMode { return w.mode }

// Remove removes the watch: no event is delivered after the EventPersistentWatchRemoved that
// ends its channel. The server's registration is removed too unless another Watcher of the
// same mode on the same path still needs it. A connection loss during the call is not an
// error: the server drops a connection's watches with the connection, and the client does
// not re-register removed ones.
func (w *Watcher) Remove(ctx context.Context) error {
	found, others := w.c.watches.remove(w.entry)
	if !found {
		return nil
	}
	w.entry.q.push(Event{Type: EventPersistentWatchRemoved, State: w.c.State(), Path: w.entry.path}, true)
	if others {
		return nil
	}
	t := WatcherPersistent
	if w.mode == AddWatchPersistentRecursive {
		t = WatcherPersistentRecursive
	}
	err := w.c.watchesCall(ctx, jute.OpRemoveWatches, w.entry.path, t)
	if errors.Is(err, ErrMarshallingError) || errors.Is(err, ErrBadArguments) {
		// Servers before 3.9 know no persistent watcher types here (ZOOKEEPER-4472). Remove
		// all of the path's watches when the client holds no other, else leave the server's
		// registration: its notifications find no watcher, and it is not re-registered after
		// a reconnect.
		if w.c.watches.has(w.entry.path, WatcherAny) {
			return nil
		}
		err = w.c.watchesCall(ctx, jute.OpRemoveWatches, w.entry.path, WatcherAny)
	}
	if errors.Is(err, ErrNoWatcher) || errors.Is(err, ErrConnectionLoss) {
		return nil
	}
	return err
}

// Stop ends the watch on the client only, at once: undelivered events are discarded and the
// channel is closed. The server keeps its registration until the connection ends; its
// notifications are then ignored.
func (w *Watcher) Stop() {
	w.c.watches.remove(w.entry)
	w.entry.q.stop()
}
