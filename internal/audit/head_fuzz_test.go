package audit

import (
	"testing"
	"time"
)

// FuzzOpenHead feeds OpenHead what a --since-head file or a ConfigMap may
// hold: it must never panic, and a head it accepts must round-trip.
func FuzzOpenHead(f *testing.F) {
	s, v, _ := testKeys(f)
	msg, err := SignHead(TreeHead{Size: 3, Hash: EmptyTreeHash, Time: time.Unix(1, 0)}, s)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(msg)
	f.Add([]byte("gpuheal.io/audit tree v1\n1\nAAAA\n\n— x y\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := OpenHead(b, v)
		if err != nil {
			return
		}
		if got, err := ParseHead(FormatHead(h)); err != nil || got != h {
			t.Fatalf("accepted head %+v does not round-trip: %+v, %v", h, got, err)
		}
	})
}

// FuzzParseHead checks the text parser alone (no signature in the way).
func FuzzParseHead(f *testing.F) {
	f.Add(FormatHead(TreeHead{Size: 9, Hash: EmptyTreeHash, Time: time.Unix(5, 7)}))
	f.Add([]byte("gpuheal.io/audit tree v1\n\n\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHead(b)
		if err != nil {
			return
		}
		if got, err := ParseHead(FormatHead(h)); err != nil || got != h {
			t.Fatalf("accepted head %+v does not round-trip: %+v, %v", h, got, err)
		}
	})
}
