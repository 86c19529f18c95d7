package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// records writes n records to a Memory store and returns them sealed.
func records(t testing.TB, n int) []Record {
	t.Helper()
	m := NewMemory()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range n {
		if err := m.Write(context.Background(), Record{Key: Key("inc", "step", i), Kind: Evicted,
			Node: "gpu-a", Time: base.Add(time.Duration(i) * time.Second), Message: fmt.Sprint("record ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	return m.Records()
}

func treeOf(t testing.TB, recs []Record) *Tree {
	t.Helper()
	tr := &Tree{}
	for i := range recs {
		if err := tr.Add(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// rfc6962 is RFC 6962 section 2.1's MTH, written out independently of tlog.
func rfc6962(leaves [][]byte) tlog.Hash {
	switch len(leaves) {
	case 0:
		return sha256.Sum256(nil)
	case 1:
		return sha256.Sum256(append([]byte{0}, leaves[0]...))
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	l, r := rfc6962(leaves[:k]), rfc6962(leaves[k:])
	return sha256.Sum256(append(append([]byte{1}, l[:]...), r[:]...))
}

func TestTreeHashIsRFC6962OverRecordHashes(t *testing.T) {
	recs := records(t, 13)
	tr := treeOf(t, recs)
	var leaves [][]byte
	for n := int64(0); n <= 13; n++ {
		h, err := tr.Head(n)
		if err != nil {
			t.Fatal(err)
		}
		if want := rfc6962(leaves); h.Hash != want {
			t.Errorf("size %d: root %s, RFC 6962 gives %s", n, h.Hash, want)
		}
		if n < 13 {
			b, _ := hex.DecodeString(recs[n].Hash)
			leaves = append(leaves, b)
		}
	}
}

// TestLeafHashIsStable pins what is hashed: a change to ComputeHash or
// LeafHash breaks every published head, so it must come with a new format.
// The leaf is SHA-256(0x00 ‖ the 32 bytes of Record.Hash).
func TestLeafHashIsStable(t *testing.T) {
	r := Record{Key: "inc/Detected/0", Kind: Detected, Node: "gpu-a", Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	Seal(Head{}, &r)
	leaf, err := LeafHash(&r)
	if err != nil {
		t.Fatal(err)
	}
	const want = "042f8dfe5a4b7e0db8e5bb9fa3c428eb33835754c81b13b46ea26e7e25e5f274 6+1/qxOfpf6j7Y+OsP54a22BhEVz+rtbsDdHgp8muP0="
	if got := r.Hash + " " + leaf.String(); got != want {
		t.Errorf("record hash and leaf = %s, want %s", got, want)
	}
}

// The machine is hashed when set: editing it breaks the record's hash.
func TestMachineIsHashedWhenSet(t *testing.T) {
	r := Record{Key: "inc/Detected/0", Kind: Detected, Node: "gpu-a", Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	without := ComputeHash(&r)
	r.Machine = "i-0abc"
	with := ComputeHash(&r)
	r.Machine = "i-0abd"
	if with == without || ComputeHash(&r) == with {
		t.Error("the machine does not change the record's hash")
	}
}

func TestProofs(t *testing.T) {
	recs := records(t, 17)
	tr := treeOf(t, recs)
	for m := int64(1); m <= 17; m++ {
		newHead, _ := tr.Head(m)
		for n := int64(1); n <= m; n++ {
			oldHead, _ := tr.Head(n)
			p, err := tr.ProveTree(n, m)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckTree(p, oldHead, newHead); err != nil {
				t.Errorf("consistency %d→%d: %v", n, m, err)
			}
			other := oldHead
			other.Hash[0] ^= 1
			if CheckTree(p, other, newHead) == nil {
				t.Errorf("consistency %d→%d accepted a wrong old head", n, m)
			}
		}
		for i := range m {
			r := recs[i]
			p, err := tr.ProveRecord(r.Seq, m)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckRecord(p, newHead, &r); err != nil {
				t.Errorf("inclusion of seq %d in %d: %v", r.Seq, m, err)
			}
			r.Message = "edited"
			r.Hash = ComputeHash(&r)
			if err := CheckRecord(p, newHead, &r); err == nil || !strings.Contains(err.Error(), "is not in the tree") {
				t.Errorf("inclusion of an edited seq %d: %v", r.Seq, err)
			}
		}
	}
	if _, err := tr.ProveTree(5, 18); err == nil {
		t.Error("a proof past the tree's size was made")
	}
}

func TestTreeRefusesABrokenChain(t *testing.T) {
	recs := records(t, 5)
	recs[2].Message = "edited"
	tr := &Tree{}
	var err error
	for i := range recs {
		if err = tr.Add(&recs[i]); err != nil {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "seq 3") || tr.Size() != 2 {
		t.Fatalf("tree size %d, err %v; want a stop at seq 3", tr.Size(), err)
	}
}
