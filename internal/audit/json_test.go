package audit

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sealed() Record {
	r := Record{Key: Key("gpu-a-1a2b", "evict/ns/p", 0), Time: time.Date(2026, 11, 30, 1, 2, 3, 4, time.UTC),
		Incident: "gpu-a-1a2b", Node: "gpu-a", Kind: Evicted, Pod: "ns/p", Duration: 1500 * time.Millisecond,
		GPUs: []string{"GPU-1"}, DryRun: true, Machine: "ec2d5d8e-1c2a-4f7e-9b1a-000000000042", Message: "ünïcode \x00 and \"quotes\""}
	Seal(Head{Seq: 6, Hash: "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"}, &r)
	return r
}

func TestJSONRoundTrip(t *testing.T) {
	r := sealed()
	b, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseLine(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if ComputeHash(&got) != r.Hash {
		t.Error("hash changed in the round trip")
	}
	for _, bad := range []string{
		`{"seq":1,"key":"k","kind":"Held","hash":"` + r.Hash + `","prevHash":"","time":"yesterday"}`,
		`{"seq":1,"key":"k","kind":"Held","hash":"XYZ","prevHash":""}`,
		`{"seq":1,"key":"k","kind":"Held","hash":"` + r.Hash + `","prevHash":"","duration":"long"}`,
		`{"seq":0,"key":"k","kind":"Held","hash":"` + r.Hash + `","prevHash":""}`,
		`{"seq":1,"key":"","kind":"Held","hash":"` + r.Hash + `","prevHash":""}`,
		`{"seq":1,"key":"k","kind":"Held","hash":"` + r.Hash + `","prevHash":""} {}`,
	} {
		if _, err := ParseLine([]byte(bad)); err == nil {
			t.Errorf("ParseLine(%s) succeeded", bad)
		}
	}
}

func TestPrepareSanitizesAndCopies(t *testing.T) {
	gpus := []string{"GPU-\xff"}
	in := []Record{{Key: "k\xfe", Kind: Held, GPUs: gpus}}
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.FixedZone("x", 3600))
	out, err := Prepare(in, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Key != "k\uFFFD" || out[0].GPUs[0] != "GPU-\uFFFD" || gpus[0] != "GPU-\xff" || !out[0].Time.Equal(now) || out[0].Time.Location() != time.UTC {
		t.Errorf("Prepare = %+v (caller's gpus %q)", out[0], gpus)
	}
	if _, err := Prepare([]Record{{Kind: Held}}, time.Now); err == nil {
		t.Error("a record without a key was accepted")
	}
}

// FuzzParseLine: ParseLine never panics, and what it accepts encodes back
// to a line that parses to the same record.
func FuzzParseLine(f *testing.F) {
	r := sealed()
	b, _ := r.MarshalJSON()
	f.Add(b)
	f.Add([]byte(`{"seq":1,"key":"k","kind":"Held","hash":"` + r.Hash + `","prevHash":""}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, line []byte) {
		got, err := ParseLine(line)
		if err != nil {
			return
		}
		b, err := got.MarshalJSON()
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", got, err)
		}
		again, err := ParseLine(b)
		if err != nil {
			t.Fatalf("re-parsing %s: %v", b, err)
		}
		if diff := cmp.Diff(got, again); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
		if ComputeHash(&got) != ComputeHash(&again) {
			t.Fatal("hash differs after a round trip")
		}
	})
}
