package audit

import (
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// LeafHash is record r's leaf in the Merkle tree: tlog.RecordHash (RFC 6962:
// SHA-256 of 0x00 and the data) of the 32 bytes of r.Hash. r.Hash covers
// every field, Seq and PrevHash (ComputeHash), so the leaf covers them too,
// and records written before the tree existed become leaves unchanged.
func LeafHash(r *Record) (tlog.Hash, error) {
	b, err := hex.DecodeString(r.Hash)
	if err != nil || len(b) != tlog.HashSize {
		return tlog.Hash{}, fmt.Errorf("record seq %d (key %q): hash %q is not 64 hex digits", r.Seq, r.Key, r.Hash)
	}
	return tlog.RecordHash(b), nil
}

// Tree is the Merkle tree over a store's records in Seq order (leaf i is
// record Seq i+1), kept in memory as tlog's stored hashes: about two hashes
// (64 bytes) per record. It checks the chain as records are added, so a
// tree is only ever built over a chain that verifies. Safe for concurrent use.
type Tree struct {
	mu     sync.RWMutex
	hashes []tlog.Hash
	size   int64
	chain  Verifier
}

// Add appends the next record. It fails, and the tree stays as it was,
// when r does not continue the chain (the Verifier's checks: Seq, PrevHash,
// the record's own hash).
func (t *Tree) Add(r *Record) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.chain.Add(r) {
		return fmt.Errorf("audit record %s", t.chain.report.FirstBad)
	}
	leaf, err := LeafHash(r)
	if err != nil {
		return err
	}
	hs, err := tlog.StoredHashesForRecordHash(t.size, leaf, t)
	if err != nil {
		return fmt.Errorf("hashing record seq %d into the tree: %w", r.Seq, err)
	}
	t.hashes = append(t.hashes, hs...)
	t.size++
	return nil
}

// ReadHashes implements tlog.HashReader; callers hold t.mu.
func (t *Tree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(t.hashes)) {
			return nil, fmt.Errorf("tree hash index %d out of range (%d stored)", x, len(t.hashes))
		}
		out[i] = t.hashes[x]
	}
	return out, nil
}

// Size is the number of records in the tree.
func (t *Tree) Size() int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.size
}

// Chain is the head of the hash chain the tree was built over.
func (t *Tree) Chain() Head {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.chain.report.Head
}

// Head is the tree's head at size n (0 < n ≤ Size, or 0 for the empty tree).
func (t *Tree) Head(n int64) (TreeHead, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if n < 0 || n > t.size {
		return TreeHead{}, fmt.Errorf("tree size %d requested, the tree has %d records", n, t.size)
	}
	if n == 0 {
		return TreeHead{Size: 0, Hash: EmptyTreeHash}, nil
	}
	h, err := tlog.TreeHash(n, t)
	if err != nil {
		return TreeHead{}, err
	}
	return TreeHead{Size: n, Hash: h}, nil
}

// ProveTree returns the consistency proof that the tree of size n is a
// prefix of the tree of size m (n ≤ m ≤ Size); check it with CheckTree.
func (t *Tree) ProveTree(n, m int64) (tlog.TreeProof, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if n < 1 || n > m || m > t.size {
		return nil, fmt.Errorf("consistency proof from size %d to %d: want 1 ≤ old ≤ new ≤ %d", n, m, t.size)
	}
	return tlog.ProveTree(m, n, t)
}

// ProveRecord returns the inclusion proof of record seq in the tree of size
// n (1 ≤ seq ≤ n ≤ Size); check it with CheckRecord.
func (t *Tree) ProveRecord(seq uint64, n int64) (tlog.RecordProof, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if seq < 1 || int64(seq) > n || n > t.size {
		return nil, fmt.Errorf("inclusion proof of seq %d in size %d: want 1 ≤ seq ≤ size ≤ %d", seq, n, t.size)
	}
	return tlog.ProveRecord(n, int64(seq)-1, t)
}

// CheckTree verifies that old is a prefix of new by proof p.
func CheckTree(p tlog.TreeProof, old, cur TreeHead) error {
	if old.Size == 0 {
		return nil // the empty tree is a prefix of every tree
	}
	if err := tlog.CheckTree(p, cur.Size, cur.Hash, old.Size, old.Hash); err != nil {
		return fmt.Errorf("tree of size %d is not a prefix of tree of size %d: %w", old.Size, cur.Size, err)
	}
	return nil
}

// CheckRecord verifies by proof p that r is leaf r.Seq of the tree head.
func CheckRecord(p tlog.RecordProof, head TreeHead, r *Record) error {
	leaf, err := LeafHash(r)
	if err != nil {
		return err
	}
	if r.Seq < 1 || int64(r.Seq) > head.Size {
		return fmt.Errorf("record seq %d is outside a tree of size %d", r.Seq, head.Size)
	}
	if err := tlog.CheckRecord(p, head.Size, head.Hash, int64(r.Seq)-1, leaf); err != nil {
		return fmt.Errorf("record seq %d (key %q) is not in the tree of size %d: %w", r.Seq, r.Key, head.Size, err)
	}
	return nil
}

// CheckHead reports whether the tree extends the signed head h: the store
// still holds at least h.Size records and its first h.Size records hash to
// h.Hash. The error says which attack the difference points to.
func (t *Tree) CheckHead(h TreeHead) error {
	n := t.Size()
	signed := fmt.Sprintf("the signed head of %s covers %d records", h.Time.Format(time.RFC3339), h.Size)
	switch {
	case h.Size == 0:
		return nil
	case n == 0:
		return fmt.Errorf("the log holds no records but %s: the store was wiped or replaced", signed)
	case n < h.Size:
		return fmt.Errorf("the log holds %d records but %s: %d records were removed (cut from its end, or dropped and the rest renumbered)", n, signed, h.Size-n)
	}
	got, err := t.Head(h.Size)
	if err != nil {
		return err
	}
	if got.Hash != h.Hash {
		return fmt.Errorf("the log's first %d records hash to %s, but %s with hash %s: a record at or before seq %d was rewritten, removed or inserted",
			h.Size, got.Hash, signed, h.Hash, h.Size)
	}
	return nil
}
