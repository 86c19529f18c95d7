package audit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	clocktesting "k8s.io/utils/clock/testing"
)

func testKeys(t testing.TB) (note.Signer, note.Verifier, string) {
	t.Helper()
	skey, vkey, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return s, v, vkey
}

func TestSignedHeadRoundTrip(t *testing.T) {
	s, v, _ := testKeys(t)
	tr := treeOf(t, records(t, 7))
	h, _ := tr.Head(7)
	h.Time = time.Date(2026, 12, 1, 12, 0, 0, 5, time.UTC)
	msg, err := SignHead(h, s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := OpenHead(msg, v)
	if err != nil {
		t.Fatal(err)
	}
	if got != h {
		t.Errorf("OpenHead = %+v, want %+v", got, h)
	}
	if !strings.HasPrefix(string(msg), "gpuheal.io/audit tree v1\n7\n") {
		t.Errorf("signed head text:\n%s", msg)
	}

	altered := strings.Replace(string(msg), "\n7\n", "\n6\n", 1)
	if _, err := OpenHead([]byte(altered), v); err == nil || !strings.Contains(err.Error(), "the head was altered") {
		t.Errorf("altered head: %v", err)
	}
	_, other, _ := testKeys(t)
	if _, err := OpenHead(msg, other); err == nil || !strings.Contains(err.Error(), "not by the key given") {
		t.Errorf("head under another key: %v", err)
	}
}

func TestParseHeadRejects(t *testing.T) {
	for _, bad := range []string{
		"", "go.sum database tree\n1\nAAAA\n",
		"gpuheal.io/audit tree v1\n-1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n2026-12-01T00:00:00Z\n",
		"gpuheal.io/audit tree v1\n01\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n2026-12-01T00:00:00Z\n",
		"gpuheal.io/audit tree v1\n1\nAAAA\n2026-12-01T00:00:00Z\n",
		"gpuheal.io/audit tree v1\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\nyesterday\n",
		"gpuheal.io/audit tree v1\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n2026-12-01T00:00:00Z",
		"gpuheal.io/audit tree v1\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n2026-12-01T00:00:00Z\nmore\n",
	} {
		if _, err := ParseHead([]byte(bad)); err == nil {
			t.Errorf("ParseHead(%q) accepted it", bad)
		}
	}
}

func TestCheckHeadNamesTheAttack(t *testing.T) {
	recs := records(t, 10)
	signed, _ := treeOf(t, recs).Head(10)
	resealed := func(rs []Record) []Record {
		var h Head
		out := make([]Record, len(rs))
		for i := range rs {
			out[i] = rs[i]
			h = Seal(h, &out[i])
		}
		return out
	}
	edited := append([]Record(nil), recs...)
	edited[3].Message = "nothing happened here"
	for name, tc := range map[string]struct {
		recs []Record
		want string
	}{
		"intact":          {recs, ""},
		"grown":           {append(recs, resealed(append(recs, Record{Key: "more", Kind: Held}))[10]), ""},
		"truncated":       {recs[:7], "3 records were removed"},
		"rewritten":       {resealed(edited), "a record at or before seq 10 was rewritten"},
		"first dropped":   {resealed(recs[3:]), "3 records were removed (cut from its end, or dropped and the rest renumbered)"},
		"wiped":           {nil, "the store was wiped or replaced"},
		"wiped, new life": {resealed(recs[:2]), "8 records were removed"},
	} {
		err := treeOf(t, tc.recs).CheckHead(signed)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error containing %q", name, err, tc.want)
		}
	}
}

type headSink struct {
	heads []TreeHead
	fail  error
}

func (p *headSink) PublishHead(_ context.Context, _ []byte, h TreeHead, _ *Tree) error {
	if p.fail != nil {
		return p.fail
	}
	p.heads = append(p.heads, h)
	return nil
}

func TestNotarySignsEachGrowthAndRetriesPublishers(t *testing.T) {
	ctx := context.Background()
	s, v, _ := testKeys(t)
	m := NewMemory()
	if err := m.Write(ctx, Record{Key: "a", Kind: Held}, Record{Key: "b", Kind: Held}); err != nil {
		t.Fatal(err)
	}
	pub := &headSink{}
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	n, err := NewNotary(ctx, m, NotaryOptions{Signer: s, Publishers: []Publisher{pub}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Write(ctx, Record{Key: "c", Kind: Held}); err != nil {
		t.Fatal(err)
	}
	pub.fail = errors.New("API server down")
	if err := n.Sync(ctx); err == nil || !strings.Contains(err.Error(), "API server down") {
		t.Fatalf("Sync with a failing publisher: %v", err)
	}
	pub.fail = nil
	if err := n.Sync(ctx); err != nil { // nothing new, but the head is owed
		t.Fatal(err)
	}
	if err := n.Sync(ctx); err != nil { // nothing new, nothing owed
		t.Fatal(err)
	}
	var sizes []int64
	for _, h := range pub.heads {
		sizes = append(sizes, h.Size)
	}
	if len(sizes) != 2 || sizes[0] != 2 || sizes[1] != 3 {
		t.Fatalf("published sizes %v, want [2 3]", sizes)
	}
	got, err := OpenHead(n.Signed(), v)
	if err != nil || got.Size != 3 || !got.Time.Equal(clk.Now()) {
		t.Fatalf("last signed head %+v, %v", got, err)
	}
}

func TestNotaryRefusesABrokenChain(t *testing.T) {
	ctx := context.Background()
	s, _, _ := testKeys(t)
	m := NewMemory()
	_ = m.Write(ctx, Record{Key: "a", Kind: Held}, Record{Key: "b", Kind: Held})
	m.recs[0].Message = "edited"
	if _, err := NewNotary(ctx, m, NotaryOptions{Signer: s}); err == nil || !strings.Contains(err.Error(), "the record was edited") {
		t.Fatalf("NewNotary over an edited record: %v", err)
	}
}
