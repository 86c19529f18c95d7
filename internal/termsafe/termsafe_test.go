package termsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "NVRM: Xid (PCI:0000:05:00): 79, GPU has fallen off the bus.", "NVRM: Xid (PCI:0000:05:00): 79, GPU has fallen off the bus."},
		{"unicode kept", "GPU 3 … ok — 温度", "GPU 3 … ok — 温度"},
		{"tab and newline kept", "a\tb\nc", "a\tb\nc"},
		{"colour", "\x1b[31mred\x1b[0m text", "red text"},
		{"clear screen and home", "\x1b[2J\x1b[Hfake prompt", "fake prompt"},
		{"window title (OSC, BEL)", "\x1b]0;owned\x07title", "title"},
		{"hyperlink (OSC, ST)", "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"DCS", "\x1bPq#0;2;0;0;0\x1b\\after", "after"},
		{"two-byte escape", "\x1bcreset", "reset"},
		{"unterminated CSI", "ok\x1b[31", "ok"},
		{"unterminated OSC", "ok\x1b]0;title", "ok"},
		{"lone ESC at end", "ok\x1b", "ok"},
		{"carriage return overwrite", "evil\rgood", "evilgood"},
		{"backspace and bell", "a\bb\x07c", "abc"},
		{"DEL", "a\x7fb", "ab"},
		{"C1 CSI", "a\u009b31mb", "a31mb"},
		{"bidi override", "abc\u202edcba", "abcdcba"},
		{"invalid UTF-8", "a\xffb", "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Clean(tt.in); got != tt.want {
				t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestLine(t *testing.T) {
	if got, want := Line("a\tb\nc\x1b[1m"), "a b c"; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
}

func TestCleanTextAllocatesNothing(t *testing.T) {
	s := "NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
	if n := testing.AllocsPerRun(100, func() { _ = Clean(s) }); n != 0 {
		t.Errorf("Clean of clean text allocates %v times", n)
	}
}

// FuzzClean: whatever the input, the output holds no ESC, no control
// character but tab and newline, no C1 control or bidi override, is valid
// UTF-8, and cleaning it again changes nothing.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[31mred", "\x1b]0;t\x07", "\x1bP\x1b\\", "\u009b", "\u202e", "\xff\xfe", "a\rb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Clean(in)
		if !utf8.ValidString(out) {
			t.Fatalf("Clean(%q) = %q: invalid UTF-8", in, out)
		}
		for _, r := range out {
			if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f || isBidi(r) {
				t.Fatalf("Clean(%q) = %q keeps %U", in, out, r)
			}
		}
		if again := Clean(out); again != out {
			t.Fatalf("Clean not idempotent: %q → %q → %q", in, out, again)
		}
		if l := Line(in); strings.ContainsAny(l, "\t\n") {
			t.Fatalf("Line(%q) = %q keeps a tab or newline", in, l)
		}
	})
}

func TestWriterCleansAcrossWrites(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	for _, p := range []string{"ok \x1b", "[2J", " done\x1b]0;t", "\x07\n"} {
		if n, err := w.Write([]byte(p)); err != nil || n != len(p) {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if got, want := b.String(), "ok [2J done\n"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}
