package audit

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"time"
)

// hashDomain versions the canonical encoding: a new field means a new
// domain string, and old records keep verifying under the old one.
const hashDomain = "gpuheal.io/audit/v1\x00"

// ComputeHash returns the hex SHA-256 of r's canonical encoding: a domain
// string, then every field in a fixed order, strings and lists
// length-prefixed, numbers as fixed-width big-endian, Time as UTC Unix
// nanoseconds, and last PrevHash. Hash itself is not covered.
func ComputeHash(r *Record) string {
	h := sha256.New()
	e := encoder{h: h}
	e.str(hashDomain)
	e.u64(r.Seq)
	e.str(r.Key)
	e.i64(timeNanos(r.Time))
	e.str(r.Incident)
	e.str(r.Node)
	e.str(r.Policy)
	e.str(string(r.Kind))
	e.str(r.Phase)
	e.str(r.Action)
	e.str(r.Reason)
	e.str(r.Message)
	e.str(r.Provider)
	e.str(r.RequestID)
	e.str(r.Pod)
	e.i64(int64(r.Duration))
	e.u64(uint64(len(r.GPUs)))
	for _, g := range r.GPUs {
		e.str(g)
	}
	e.str(r.Severity)
	if r.DryRun {
		e.u64(1)
	} else {
		e.u64(0)
	}
	// Machine came after the first stores shipped: hashed only when set,
	// so every record written before it still verifies.
	if r.Machine != "" {
		e.str("machine")
		e.str(r.Machine)
	}
	e.str(r.PrevHash)
	return hex.EncodeToString(h.Sum(nil))
}

// timeNanos is the time as stored by every backend: Unix nanoseconds, with
// the zero Time as 0 so that it survives a round trip.
func timeNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// TimeFromNanos inverts the stored form of a time (UTC).
func TimeFromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

type encoder struct {
	h   hash.Hash
	buf [8]byte
}

func (e *encoder) u64(v uint64) {
	binary.BigEndian.PutUint64(e.buf[:], v)
	e.h.Write(e.buf[:])
}

func (e *encoder) i64(v int64) { e.u64(uint64(v)) }

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.h.Write([]byte(s))
}

// Head is the end of a chain: the last Seq and its Hash (0 and "" when the
// chain is empty).
type Head struct {
	Seq  uint64
	Hash string
}

// Seal appends r after h: it sets r.Seq, r.PrevHash and r.Hash and returns
// the new head. Stores call it with their head held under a lock.
func Seal(h Head, r *Record) Head {
	r.Seq = h.Seq + 1
	r.PrevHash = h.Hash
	r.Hash = ComputeHash(r)
	return Head{Seq: r.Seq, Hash: r.Hash}
}

// Report is what Verify found.
type Report struct {
	// Records is how many records were read.
	Records uint64
	// Head is the last good record's Seq and Hash.
	Head Head
	// OK is true when every record links to the one before, every Hash
	// matches its record and the store's own head (where it keeps one)
	// matches the last record.
	OK bool
	// FirstBad names the first record that breaks the chain; nil when OK.
	FirstBad *Break
}

// Break is the first record where a chain fails to verify.
type Break struct {
	// Seq and Key of the bad record as stored. Where records are missing
	// at the end, Seq is the first missing one and Key is empty.
	Seq uint64
	Key string
	// Problem says what is wrong, for people.
	Problem string
}

func (b *Break) String() string {
	return fmt.Sprintf("seq %d (key %q): %s", b.Seq, b.Key, b.Problem)
}

// String renders a Report for the CLI.
func (r Report) String() string {
	if r.OK {
		return fmt.Sprintf("OK: %d records, head seq %d hash %s", r.Records, r.Head.Seq, r.Head.Hash)
	}
	return fmt.Sprintf("BROKEN after %d good records: first bad record %s", r.Head.Seq, r.FirstBad)
}

// Verifier checks records in store order; backends feed it and keep their
// own I/O. The zero Verifier expects a chain starting at Seq 1.
type Verifier struct {
	report Report
	broken bool
}

// Add checks the next record and reports whether the chain still holds.
// After the first break it ignores further records.
func (v *Verifier) Add(r *Record) bool {
	if v.broken {
		return false
	}
	v.report.Records++
	want := v.report.Head.Seq + 1
	var problem string
	switch {
	case r.Seq != want && r.Seq > want:
		problem = fmt.Sprintf("expected seq %d, found %d: records %d..%d are missing or out of order", want, r.Seq, want, r.Seq-1)
	case r.Seq != want:
		problem = fmt.Sprintf("expected seq %d, found %d: records are out of order", want, r.Seq)
	case r.PrevHash != v.report.Head.Hash:
		problem = fmt.Sprintf("prevHash %s does not match the hash %s of seq %d: a record before it was removed, reordered or edited",
			short(r.PrevHash), short(v.report.Head.Hash), v.report.Head.Seq)
	default:
		if got := ComputeHash(r); got != r.Hash {
			problem = fmt.Sprintf("hash %s does not match its content (computed %s): the record was edited", short(r.Hash), short(got))
		}
	}
	if problem != "" {
		v.fail(&Break{Seq: r.Seq, Key: r.Key, Problem: problem})
		return false
	}
	v.report.Head = Head{Seq: r.Seq, Hash: r.Hash}
	return true
}

// Fail records a break found outside the chain (a parse error, say).
func (v *Verifier) Fail(b *Break) {
	if !v.broken {
		v.fail(b)
	}
}

func (v *Verifier) fail(b *Break) {
	v.broken = true
	v.report.FirstBad = b
}

// Finish checks the chain against the head a store keeps apart from the
// records (nil when it keeps none) and returns the report.
func (v *Verifier) Finish(stored *Head) Report {
	rep := v.report
	if !v.broken && stored != nil && *stored != rep.Head {
		switch {
		case stored.Seq > rep.Head.Seq:
			rep.FirstBad = &Break{Seq: rep.Head.Seq + 1, Problem: fmt.Sprintf(
				"the store's head is seq %d but the records end at seq %d: the last records were removed", stored.Seq, rep.Head.Seq)}
		default:
			rep.FirstBad = &Break{Seq: rep.Head.Seq, Problem: fmt.Sprintf(
				"the store's head (seq %d, hash %s) does not match the last record (seq %d, hash %s)",
				stored.Seq, short(stored.Hash), rep.Head.Seq, short(rep.Head.Hash))}
		}
	}
	rep.OK = rep.FirstBad == nil
	return rep
}

func short(h string) string {
	if h == "" {
		return `""`
	}
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
