package schedule

import "slices"

// Lineage numbers the boards of every slot: board 0 is the slot's first
// machine, board k its k-th replacement.
//
// A node's name does not say its generation: the kwok provider names a
// replacement after its slot plus "-r" and six hex digits of the repair's
// token, replacing (not adding to) an earlier suffix, so the suffix tells
// only that a node is a replacement. The sim fleet therefore counts: it
// records every node it sees in a slot, in the order they appear, and
// keeps the record in its directory so that a restarted fleet goes on
// counting. A slot's own name is always board 0. A replacement whose
// predecessor (the provider's gpuheal.io/replaces annotation) was never
// seen, replaced again before the fleet listed it, is counted too, so the
// generation stays right; only a chain of two or more unseen machines
// would be undercounted.
type Lineage struct {
	// Slots lists each slot's node names by board generation.
	Slots map[string][]string `json:"slots"`
}

// SlotBoard is the node's slot and board generation; known is false for
// a replacement the lineage has not observed (its board is then unknown
// and returned as -1). A node named as its slot is board 0 whether
// observed or not.
func (l *Lineage) SlotBoard(node string) (slot string, board int, known bool) {
	slot = SlotOf(node)
	if node == slot {
		return slot, 0, true
	}
	if i := slices.Index(l.Slots[slot], node); i >= 0 {
		return slot, i, true
	}
	return slot, -1, false
}

// Observe records node, which replaces the node named replaces ("" when
// unknown or the first machine), and reports whether the lineage changed.
func (l *Lineage) Observe(node, replaces string) bool {
	slot := SlotOf(node)
	if l.Slots == nil {
		l.Slots = map[string][]string{}
	}
	list := l.Slots[slot]
	if len(list) == 0 {
		list = []string{slot}
	}
	changed := len(l.Slots[slot]) == 0
	if !slices.Contains(list, node) {
		if replaces != "" && SlotOf(replaces) == slot && !slices.Contains(list, replaces) {
			list = append(list, replaces)
		}
		list = append(list, node)
		changed = true
	}
	l.Slots[slot] = list
	return changed
}
