package testhelp

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// SyncBuffer collects what many goroutines write (logs, a process's output)
// while a test reads it. Made with NewSyncBuffer, it also hands over every
// complete line on Lines (dropped when the channel is full).
type SyncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	partial []byte
	lines   chan string
}

// NewSyncBuffer returns a buffer whose Lines channel holds up to n lines.
func NewSyncBuffer(n int) *SyncBuffer { return &SyncBuffer{lines: make(chan string, n)} }

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.lines == nil {
		return len(p), nil
	}
	b.partial = append(b.partial, p...)
	for {
		i := bytes.IndexByte(b.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case b.lines <- string(b.partial[:i]):
		default:
		}
		b.partial = b.partial[i+1:]
	}
}

// WriteLine writes line and a newline.
func (b *SyncBuffer) WriteLine(line string) { _, _ = b.Write([]byte(line + "\n")) }

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines receives every complete line written; nil unless made by NewSyncBuffer.
func (b *SyncBuffer) Lines() <-chan string { return b.lines }

// Eventually calls f every poll until it returns nil, and fails the test
// with f's last error when timeout passes first.
func Eventually(t testing.TB, timeout, poll time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(poll)
	}
}
