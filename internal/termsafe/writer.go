package termsafe

import "io"

// Writer cleans everything written through it (Clean) before passing it
// on, for output made of outside text such as a table of conditions. A
// sequence split across two writes is still removed: Clean drops every ESC.
type Writer struct{ w io.Writer }

// NewWriter returns a Writer onto w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write cleans p and writes the result; it reports len(p) on success, as
// the caller's bytes were all consumed.
func (c *Writer) Write(p []byte) (int, error) {
	s := string(p)
	if clean := Clean(s); clean != s {
		if _, err := io.WriteString(c.w, clean); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.w.Write(p)
}
