package watch

// smallSet is a map that stores its first entry inline, so the overwhelmingly common
// single-entry case (one watcher on a path, one path per watcher) costs no allocation
// beyond the slot of the outer map. It is a value type: callers store it back after changes.
// Field order keeps it at 24 bytes for (uint64, uint8) and 32 for (string, struct{}).
type smallSet[K comparable, V any] struct {
	k    K
	more map[K]V
	v    V
	has  bool
}

func (s *smallSet[K, V]) get(k K) (V, bool) {
	if s.has && s.k == k {
		return s.v, true
	}
	v, ok := s.more[k]
	return v, ok
}

func (s *smallSet[K, V]) put(k K, v V) {
	if s.has && s.k == k {
		s.v = v
		return
	}
	if _, ok := s.more[k]; ok {
		s.more[k] = v
		return
	}
	if !s.has {
		s.k, s.v, s.has = k, v, true
		return
	}
	if s.more == nil {
		s.more = make(map[K]V, 1)
	}
	s.more[k] = v
}

func (s *smallSet[K, V]) remove(k K) {
	if s.has && s.k == k {
		var zk K
		var zv V
		s.k, s.v, s.has = zk, zv, false // drop the reference a string key holds
	} else {
		delete(s.more, k)
	}
	if len(s.more) == 0 {
		s.more = nil
	}
}

func (s *smallSet[K, V]) len() int {
	n := len(s.more)
	if s.has {
		n++
	}
	return n
}

// each calls f for every entry; f must not modify s.
func (s *smallSet[K, V]) each(f func(K, V)) {
	if s.has {
		f(s.k, s.v)
	}
	for k, v := range s.more {
		f(k, v)
	}
}
