package datatree

// ChildRange copies the child names at positions [from, to) of the node's list (clamped to
// its length), in the list's order (no particular one), so a reader can copy a long list a
// slice at a time, between which the list may change.
func (n *Node) ChildRange(from, to int) []string {
	if n.t == nil || from >= to || from >= n.NumChildren() {
		return nil
	}
	return n.t.childNames(n.i, from, to)
}
