// Package termsafe makes text from outside (kernel-log lines, messages
// other components wrote to the API) safe to show on a terminal: a kernel
// log line can carry any byte (raw /dev/kmsg records decode \xHH escapes),
// and an ESC sequence that reaches a terminal can recolour, hide or
// rewrite what an operator reads, retitle the window or, on some
// terminals, answer back into the shell.
package termsafe

import (
	"strings"
	"unicode/utf8"
)

// Clean returns s without terminal control sequences and control
// characters: ESC sequences (CSI, OSC, DCS and the two-byte ones) are
// removed whole, other C0 controls but tab and newline, DEL, C1 controls
// and the bidirectional overrides (which reorder what is shown) are
// dropped, and invalid UTF-8 becomes U+FFFD. Text without any of them is
// returned as is, without allocating.
func Clean(s string) string {
	if !needsCleaning(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			i += escapeLen(s[i:])
			continue
		case r == '\t' || r == '\n':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || isBidi(r):
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// needsCleaning is the fast path: a byte scan for anything Clean may
// change (0xc2 leads the C1 controls, 0xe2 the bidi controls).
func needsCleaning(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' && c != '\n' || c == 0x7f || c == 0xc2 || c == 0xe2 {
			return true
		}
	}
	return !utf8.ValidString(s)
}

// escapeLen is the length of the escape sequence at the start of s (which
// starts with ESC), up to the end of s when it is unterminated.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[': // CSI: parameters and intermediates, then a final byte
		for i := 2; i < len(s); i++ {
			if s[i] >= 0x40 && s[i] <= 0x7e {
				return i + 1
			}
			if s[i] < 0x20 || s[i] > 0x3f && s[i] < 0x40 {
				return i
			}
		}
		return len(s)
	case ']', 'P', 'X', '^', '_': // strings ended by BEL or ESC \
		for i := 2; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b {
				if i+1 < len(s) && s[i+1] == '\\' {
					return i + 2
				}
				return i
			}
		}
		return len(s)
	}
	_, n := utf8.DecodeRuneInString(s[1:])
	return 1 + n
}

func isBidi(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// Line is Clean for one table cell or line: newlines and tabs become
// spaces, so a message cannot start a line of its own or shift columns.
func Line(s string) string {
	s = Clean(s)
	if !strings.ContainsAny(s, "\t\n") {
		return s
	}
	return strings.NewReplacer("\t", " ", "\n", " ").Replace(s)
}
