// Package audittest runs the attacks a verifiable audit log must detect
// against any store: truncation, a rewrite of one record, dropped first
// records and a wiped store, each given a head signed before the attack.
package audittest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuheal/gpuheal/internal/audit"
)

// Store is what an attack needs of a store under test.
type Store interface {
	audit.Store
	audit.Tailer
}

// Tamper replaces everything the store holds with recs, as someone with
// write access to the store itself (not through gpuheal) would, and
// returns a reader of the result, opened as the CLI would open it.
type Tamper func(t *testing.T, recs []audit.Record) audit.Reader

// Open returns a new, empty store and how to tamper with it.
type Open func(t *testing.T) (Store, Tamper)

// reseal renumbers recs from 1 and recomputes the chain: what an attacker
// who can write the store does so that the chain verifies again.
func reseal(recs []audit.Record) []audit.Record {
	var h audit.Head
	out := make([]audit.Record, len(recs))
	for i := range recs {
		out[i] = recs[i]
		h = audit.Seal(h, &out[i])
	}
	return out
}

// Attack is one way of changing the log after its head was signed.
type Attack struct {
	Name string
	// Change makes the tampered log from the 10 records written.
	Change func(recs []audit.Record) []audit.Record
	// ChainHolds says the store's own Verify (the bare chain) reports OK
	// after the attack: only the signed head finds it.
	ChainHolds bool
	// Want is part of VerifySince's error.
	Want string
}

// Attacks are the four attacks, each in its strongest form (the chain
// recomputed) and, where it differs, the naive one.
var Attacks = []Attack{
	{Name: "truncated", Change: func(r []audit.Record) []audit.Record { return r[:7] }, ChainHolds: true,
		Want: "the log holds 7 records but the signed head of 2026-12-01T10:00:00Z covers 10 records: 3 records were removed"},
	{Name: "rewritten", Change: func(r []audit.Record) []audit.Record {
		r[3].Message = "nothing happened"
		return reseal(r)
	}, ChainHolds: true, Want: "a record at or before seq 10 was rewritten, removed or inserted"},
	{Name: "rewritten without resealing", Change: func(r []audit.Record) []audit.Record {
		r[3].Message = "nothing happened"
		return r
	}, Want: "the log breaks after 3 good records: line 4: audit record seq 4"},
	{Name: "machine moved without resealing", Change: func(r []audit.Record) []audit.Record {
		// Blaming another board (the lemon rule counts by machine).
		r[3].Machine = "another-board"
		return r
	}, Want: "the log breaks after 3 good records: line 4: audit record seq 4"},
	{Name: "first records dropped", Change: func(r []audit.Record) []audit.Record { return r[3:] },
		Want: "the log breaks after 0 good records: line 1: audit record seq 4 (key \"gpu-a-inc/step/3\"): expected seq 1, found 4: records 1..3 are missing"},
	{Name: "first records dropped and renumbered", Change: func(r []audit.Record) []audit.Record { return reseal(r[3:]) },
		ChainHolds: true, Want: "3 records were removed (cut from its end, or dropped and the rest renumbered)"},
	{Name: "wiped", Change: func([]audit.Record) []audit.Record { return nil }, ChainHolds: true,
		Want: "the log holds no records but the signed head of 2026-12-01T10:00:00Z covers 10 records: the store was wiped or replaced"},
}

// Base is the time of the first record and of the signed head.
var Base = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// Run writes 10 records to a new store for each attack, signs the head
// the Notary makes of it, applies the attack and checks that VerifySince
// fails naming it, while an untouched log passes.
func Run(t *testing.T, open Open) {
	skey, vkey, err := audit.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := audit.NewSigner(skey)
	verifier, _ := audit.NewVerifier(vkey)
	for _, a := range append([]Attack{{Name: "untouched", Change: func(r []audit.Record) []audit.Record { return r }, ChainHolds: true}}, Attacks...) {
		t.Run(a.Name, func(t *testing.T) {
			ctx := context.Background()
			s, tamper := open(t)
			for i := range 10 {
				r := audit.Record{Key: audit.Key("gpu-a-inc", "step", i), Kind: audit.Evicted, Node: "gpu-a",
					Incident: "gpu-a-inc", Pod: fmt.Sprintf("ns/p%d", i), Time: Base.Add(time.Duration(i) * time.Second)}
				if err := s.Write(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			n, err := audit.NewNotary(ctx, s, audit.NotaryOptions{Signer: signer, Clock: clocktesting.NewFakeClock(Base)})
			if err != nil {
				t.Fatal(err)
			}
			signed := n.Signed()
			var recs []audit.Record
			if err := s.Since(ctx, 0, func(r *audit.Record) error { recs = append(recs, *r); return nil }); err != nil {
				t.Fatal(err)
			}
			r := tamper(t, a.Change(recs))

			rep, err := r.Verify(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK != a.ChainHolds {
				t.Errorf("the store's own Verify = %v, want OK=%v", rep, a.ChainHolds)
			}
			head, err := audit.VerifySince(ctx, r, signed, verifier)
			var since *audit.SinceHeadError
			switch {
			case a.Want == "" && err != nil:
				t.Fatalf("VerifySince of an untouched log: %v", err)
			case a.Want == "" && head.Size != 10:
				t.Fatalf("VerifySince head %+v, want size 10", head)
			case a.Want != "" && (!errors.As(err, &since) || !strings.Contains(err.Error(), a.Want)):
				t.Fatalf("VerifySince = %v\nwant a SinceHeadError containing %q", err, a.Want)
			}
		})
	}
}
