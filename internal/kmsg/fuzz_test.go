package kmsg

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var fuzzSeeds = []string{
	"6,3964,206764307,-;nvidia-nvswitch2: open (major=510)",
	`4,7,14387209961,-;NVRM: The NVIDIA GPU 0000:5d:00.0\x0aNVRM: (PCI ID: 10de:2330)`,
	"14,99,1000000,c,caller=T123;hello\n SUBSYSTEM=pci\n",
	"6,1,2,-;a\\x\\xf\\xff\\",
	"[12345.678901] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380",
	"[Sun Feb 23 16:24:18 2025] NVRM: GPU at PCI:0000:9b:00",
	"2025-02-23T16:24:18,123456+00:00 msg",
	"2025-02-23T16:24:18.5-07:30 host kernel: [ 1.0] msg",
	"kern  :warn  : 2025-01-21T04:41:44,283302+00:00 oom-kill:constraint=OTHER_CONSTRAINT",
	"authpriv:info  : [Mon Feb  3 06:04:08 2025] x",
	"Feb 23 16:24:18 host kernel: [12345.678901] msg",
	"Feb  3 16:24:18 host systemd[1]: msg",
	"<4>[  206.764307] x",
	"[  600.000123] first\n               second\n",
	"\xff\x00\x01garbage",
}

func FuzzParseRecord(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		rec, err := ParseRecord(line)
		if err != nil {
			if len(err.Error()) > 400 { // clip keeps 64 bytes, 4 each when quoted
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if !rec.HasSeq || rec.Priority < 0 || rec.Priority > 7 || rec.Facility < 0 || rec.Facility > 127 ||
			rec.Monotonic < 0 || !utf8.ValidString(rec.Message) || len(rec.Message) > 3*len(line) {
			t.Fatalf("ParseRecord(%q) = %+v", line, rec)
		}
	})
}

func FuzzParseTextLine(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	opts := Options{Location: time.UTC, Year: 2025}
	f.Fuzz(func(t *testing.T, line []byte) {
		rec, ok := ParseTextLine(line, opts)
		if !ok {
			return
		}
		if rec.Source == "" || rec.Priority < -1 || rec.Priority > 7 || rec.Monotonic < 0 ||
			!utf8.ValidString(rec.Message) || len(rec.Message) > 3*len(line) {
			t.Fatalf("ParseTextLine(%q) = %+v", line, rec)
		}
	})
}

func FuzzReader(f *testing.F) {
	f.Add([]byte(strings.Join(fuzzSeeds, "\n")))
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const maxLine = 64
		r := NewReader(bytes.NewReader(in), Options{MaxLineBytes: maxLine, Location: time.UTC, Year: 2025})
		n := 0
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			n++
			// Repair can grow a message (U+FFFD is 3 bytes), never more.
			if !utf8.ValidString(rec.Message) || len(rec.Message) > 3*maxLine {
				t.Fatalf("record %+v", rec)
			}
		}
		st := r.Stats()
		if st.Records != n || n > st.Lines || st.Lines > bytes.Count(in, []byte("\n"))+1 {
			t.Fatalf("%d records, stats %+v", n, st)
		}
	})
}
