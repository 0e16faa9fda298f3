package result

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func sampleRecord(user, turn int) *Record {
	s := t0.Add(time.Duration(turn) * time.Second)
	return &Record{
		RunID: "r1", User: user, Session: 0, Profile: "P0", Turn: turn, RequestID: "r1-0-0-0",
		Scheduled: s, Sent: s.Add(time.Millisecond), FirstToken: s.Add(100 * time.Millisecond),
		Done: s.Add(300 * time.Millisecond), TokenGapsUS: []int64{100000, 100000}, TokenCounts: []int{1, 2},
		PromptTokensTarget: 1000, PromptTokens: 1001, CachedTokens: 512, OutputTokens: 4, MaxTokens: 4,
		Status: StatusOK,
	}
}

type syncBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	syncs  int
	writes int
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}
func (b *syncBuffer) Sync() error { b.mu.Lock(); b.syncs++; b.mu.Unlock(); return nil }
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestWriterRoundTripAndSync(t *testing.T) {
	dst := &syncBuffer{}
	w := NewWriter(dst)
	want := []*Record{sampleRecord(0, 0), sampleRecord(1, 1), {User: 2, Status: StatusCancelled, Scheduled: t0}}
	for _, r := range want {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if dst.syncs != 1 {
		t.Fatalf("Close synced %d times, want 1", dst.syncs)
	}
	if err := w.Write(sampleRecord(0, 0)); err == nil {
		t.Fatal("write after Close succeeded")
	}
	var got []*Record
	trunc, err := ReadAll(strings.NewReader(dst.String()), "mem", func(r *Record) error { got = append(got, r); return nil })
	if err != nil || trunc {
		t.Fatalf("ReadAll: truncated=%v err=%v", trunc, err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Scheduled.Equal(want[i].Scheduled) || got[i].User != want[i].User || got[i].Status != want[i].Status ||
			len(got[i].TokenGapsUS) != len(want[i].TokenGapsUS) || got[i].RequestID != want[i].RequestID {
			t.Errorf("record %d: got %+v want %+v", i, got[i], want[i])
		}
	}
}

// Records streamed into a pipe (spoc run --out /dev/stdout | …) close
// cleanly: a pipe cannot be synced, which is not a failure.
func TestWriterIntoAPipe(t *testing.T) {
	r, wp, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int)
	go func() {
		n := 0
		ReadAll(r, "pipe", func(*Record) error { n++; return nil })
		got <- n
	}()
	w := NewWriter(wp)
	for i := range 3 {
		if err := w.Write(sampleRecord(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close on a pipe: %v", err)
	}
	wp.Close()
	if n := <-got; n != 3 {
		t.Fatalf("read %d records through the pipe, want 3", n)
	}
}

func TestWriterFlushesWithoutClose(t *testing.T) {
	dst := &syncBuffer{}
	w := NewWriterInterval(dst, 5*time.Millisecond)
	defer w.Close()
	if err := w.Write(sampleRecord(0, 0)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for dst.String() == "" {
		if time.Now().After(deadline) {
			t.Fatal("background flusher never flushed")
		}
		time.Sleep(time.Millisecond)
	}
	if !strings.HasSuffix(dst.String(), "}\n") {
		t.Fatalf("flushed partial line: %q", dst.String())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriterReportsWriteError(t *testing.T) {
	w := NewWriter(failWriter{})
	_ = w.Write(sampleRecord(0, 0))
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Close error = %v, want disk full", err)
	}
}

func TestReaderTruncatedTail(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := range 3 {
		_ = w.Write(sampleRecord(i, i))
	}
	_ = w.Close()
	full := buf.Bytes()
	lines := bytes.Count(full, []byte("\n"))
	// Cut at every byte: always a valid prefix, never an error.
	for cut := 0; cut <= len(full); cut++ {
		n := 0
		rd := NewReader(bytes.NewReader(full[:cut]), "cut")
		for {
			_, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("cut at %d: %v", cut, err)
			}
			n++
		}
		wantN := bytes.Count(full[:cut], []byte("\n"))
		// A cut just before a newline leaves a complete JSON object, which decodes.
		wholeObject := cut < len(full) && full[cut] == '\n'
		if n != wantN && !(n == wantN+1 && wholeObject) {
			t.Fatalf("cut at %d: %d records, want %d", cut, n, wantN)
		}
		partial := cut > 0 && full[cut-1] != '\n' && !wholeObject
		if rd.Truncated() != partial {
			t.Fatalf("cut at %d: Truncated=%v want %v", cut, rd.Truncated(), partial)
		}
	}
	if lines != 3 {
		t.Fatalf("wrote %d lines, want 3", lines)
	}
}

func TestReaderMalformedLineNamesIt(t *testing.T) {
	in := `{"user":1,"status":"ok"}` + "\n" + `{"user":` + "\n" + `{"user":2}` + "\n"
	_, err := ReadAll(strings.NewReader(in), "runs.jsonl", func(*Record) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "runs.jsonl:2") {
		t.Fatalf("error = %v, want one naming runs.jsonl:2", err)
	}
}

func FuzzReader(f *testing.F) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	_ = w.Write(sampleRecord(0, 0))
	_ = w.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("\n\n{}\n{\"token_gaps_us\":[1,2"))
	f.Add([]byte(`{"scheduled":"not a time"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		rd := NewReader(bytes.NewReader(in), "fuzz")
		for range 10000 {
			r, err := rd.Next()
			if err != nil {
				return
			}
			if r == nil {
				t.Fatal("nil record without error")
			}
		}
	})
}

// A tee only borrows records when every sink it writes to does: one sink
// that keeps them makes the producer hand over every record for good.
func TestTeeBorrowsOnlyWhenEverySinkDoes(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	defer w.Close()
	sum := NewSummary(DefaultSLA(), Window{})
	att := NewAttainment(DefaultSLA(), Window{Start: time.Unix(0, 0), End: time.Unix(3600, 0)}, 0)
	keep := SinkFunc(func(*Record) error { return nil })
	for _, tc := range []struct {
		name    string
		sink    Sink
		borrows bool
	}{
		{"writer", w, true},
		{"summary", sum, true},
		{"attainment", att, true},
		{"func", keep, false},
		{"tee of borrowers", Tee(sum, att, w), true},
		{"tee with a keeper", Tee(sum, keep, att), false},
		{"empty tee", Tee(), true},
	} {
		if got := Borrows(tc.sink); got != tc.borrows {
			t.Errorf("%s: Borrows = %v, want %v", tc.name, got, tc.borrows)
		}
	}
}
