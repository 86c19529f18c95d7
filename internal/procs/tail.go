package procs

import (
	"os"
	"strings"
	"sync"
)

// tailBytes is how much output a Process keeps in memory when it has a
// writer: enough for the lines a failure message shows.
const tailBytes = 64 << 10

// Tail is the last n lines of the process's output: of its log file when
// the child writes one itself, else of what it kept in memory.
func (p *Process) Tail(n int) string {
	if p.tail == nil {
		return Tail(p.LogPath, n)
	}
	return lastLines(p.tail.String(), n)
}

// Tail is the last n lines of a file.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return lastLines(string(data), n)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// tailBuffer keeps the last limit bytes written to it. It trims only
// when it holds twice that, so a chatty child (kwok on a large fleet)
// costs a copy per limit bytes written, not one per write.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	b     []byte
}

func newTailBuffer(limit int) *tailBuffer { return &tailBuffer{limit: limit} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.limit {
		t.b = append(t.b[:0], t.b[len(t.b)-t.limit:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b[max(len(t.b)-t.limit, 0):])
}
