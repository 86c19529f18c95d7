package validation

import (
	"strings"
	"unicode/utf8"
)

// excerpt joins lines into at most limit bytes, keeping whole lines from
// the front; a line that alone is too long is cut. The caller orders the
// lines by importance.
func excerpt(lines []string, limit int) string {
	var b strings.Builder
	for _, l := range lines {
		need := len(l)
		if b.Len() > 0 {
			need++
		}
		if b.Len()+need > limit {
			if b.Len() == 0 {
				b.WriteString(cut(l, limit))
			}
			break
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
	return b.String()
}

// tail is the last limit bytes of s, from a line start where one is near.
func tail(s string, limit int) string {
	s = strings.TrimRight(s, "\n")
	if len(s) <= limit {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	s = s[len(s)-limit:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < limit/2 {
		s = s[i+1:]
	}
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// cut shortens s to at most n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	const mark = "…"
	i := n - len(mark)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + mark
}

// splitLines splits output into lines without their line ends (\r\n too).
func splitLines(output []byte) []string {
	lines := strings.Split(string(output), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}
