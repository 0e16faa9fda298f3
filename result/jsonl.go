package result

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"
)

// DefaultFlushInterval is how often a Writer pushes buffered records to its
// underlying writer when records keep arriving or the run goes quiet, so that
// a killed process loses at most about this much of its tail.
const DefaultFlushInterval = time.Second

// Writer streams records as JSON lines. Writes are buffered and flushed at
// least every FlushInterval by a background goroutine; Close flushes, calls
// Sync on the underlying writer when it has one (an *os.File does), and stops
// the flusher. Every line is written whole, so a reader of a file cut at any
// point sees a valid prefix plus at most one truncated line. Writer is safe
// for concurrent use.
type Writer struct {
	mu     sync.Mutex
	dst    io.Writer
	buf    *bufio.Writer
	line   bytes.Buffer
	enc    *json.Encoder
	err    error // first write error; sticky
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

// NewWriter returns a Writer on w flushing every DefaultFlushInterval.
func NewWriter(w io.Writer) *Writer { return NewWriterInterval(w, DefaultFlushInterval) }

// NewWriterInterval returns a Writer on w flushing every interval (at least 1 ms).
func NewWriterInterval(w io.Writer, interval time.Duration) *Writer {
	if interval < time.Millisecond {
		interval = time.Millisecond
	}
	rw := &Writer{
		dst:  w,
		buf:  bufio.NewWriterSize(w, 256<<10),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	rw.enc = json.NewEncoder(&rw.line)
	rw.enc.SetEscapeHTML(false)
	go rw.flushLoop(interval)
	return rw
}

func (w *Writer) flushLoop(interval time.Duration) {
	defer close(w.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			_ = w.Flush()
		}
	}
}

// BorrowsRecords says a Writer keeps nothing of a record once written: it
// is encoded at once (Borrower).
func (w *Writer) BorrowsRecords() {}

// Write encodes r as one line. The line goes to the buffer only after it was
// encoded completely, so an encoding error never leaves half a line.
func (w *Writer) Write(r *Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("write record: writer is closed")
	}
	if w.err != nil {
		return w.err
	}
	w.line.Reset()
	if err := w.enc.Encode(r); err != nil { // Encode appends the newline
		return fmt.Errorf("encode record (user %d, turn %d): %w", r.User, r.Turn, err)
	}
	if _, err := w.buf.Write(w.line.Bytes()); err != nil {
		w.err = fmt.Errorf("write record: %w", err)
		return w.err
	}
	return nil
}

// Flush pushes buffered lines to the underlying writer.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

func (w *Writer) flushLocked() error {
	if w.err != nil {
		return w.err
	}
	if err := w.buf.Flush(); err != nil {
		w.err = fmt.Errorf("flush records: %w", err)
	}
	return w.err
}

// Close flushes, syncs the underlying writer to stable storage when it
// supports Sync, and stops the background flusher. It does not close the
// underlying writer, which belongs to the caller. Close is idempotent.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.err
	}
	w.closed = true
	close(w.stop)
	err := w.flushLocked()
	if s, ok := w.dst.(interface{ Sync() error }); ok && err == nil {
		// a pipe or a terminal cannot be synced (EINVAL): nothing to flush
		if serr := s.Sync(); serr != nil && !errors.Is(serr, syscall.EINVAL) && !errors.Is(serr, syscall.ENOTSUP) {
			err = fmt.Errorf("sync records: %w", serr)
			w.err = err
		}
	}
	w.mu.Unlock()
	<-w.done
	return err
}

// Reader decodes records written by Writer, plain or gzip-compressed (a
// .jsonl.gz file: the compression is detected from the content). A last line
// without its newline that does not decode (the tail of a killed process),
// or a gzip stream cut short, ends the stream like io.EOF and sets
// Truncated; a malformed complete line is an error naming its line number.
type Reader struct {
	br        *bufio.Reader
	name      string
	line      int
	truncated bool
	opened    bool
	err       error
}

// NewReader reads records from r; name (a file name) prefixes error messages.
func NewReader(r io.Reader, name string) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 256<<10), name: name}
}

// open switches to decompression when the input is gzip.
func (r *Reader) open() error {
	if !r.opened {
		r.opened = true
		r.br, _, r.err = maybeGunzip(r.br, r.name)
	}
	return r.err
}

// Truncated reports whether the input ended in a partial line that was skipped.
func (r *Reader) Truncated() bool { return r.truncated }

// Next returns the next record, or io.EOF at the end of the input.
func (r *Reader) Next() (*Record, error) {
	if err := r.open(); err != nil {
		return nil, err
	}
	for {
		b, err := r.br.ReadBytes('\n')
		if err != nil && truncatedGzip(err) {
			// the compressed stream was cut short (a killed writer): the
			// lines before the cut stand, the partial one is judged below
			// like the last line of a plain file
			r.truncated = true
			err = io.EOF
		}
		if len(b) == 0 && err != nil {
			if err == io.EOF {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("%s: read line %d: %w", r.name, r.line+1, err)
		}
		r.line++
		complete := err == nil
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s: read line %d: %w", r.name, r.line, err)
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			if !complete {
				return nil, io.EOF
			}
			continue
		}
		rec := new(Record)
		if derr := json.Unmarshal(b, rec); derr != nil {
			if !complete {
				r.truncated = true
				return nil, io.EOF
			}
			return nil, fmt.Errorf("%s:%d: decode record: %w", r.name, r.line, derr)
		}
		return rec, nil
	}
}

// ReadAll calls fn for every record of r until the end or the first error.
// It returns whether the input ended in a truncated line.
func ReadAll(r io.Reader, name string, fn func(*Record) error) (truncated bool, err error) {
	rd := NewReader(r, name)
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return rd.Truncated(), nil
		}
		if err != nil {
			return false, err
		}
		if err := fn(rec); err != nil {
			return false, err
		}
	}
}

// Tee returns a Sink writing every record to each sink in order, stopping
// at the first error. It is a Borrower when each of sinks is.
func Tee(sinks ...Sink) Sink {
	t := tee(sinks)
	for _, s := range sinks {
		if !Borrows(s) {
			return t
		}
	}
	return borrowingTee{t}
}

type tee []Sink

func (t tee) Write(r *Record) error {
	for _, s := range t {
		if err := s.Write(r); err != nil {
			return err
		}
	}
	return nil
}

type borrowingTee struct{ tee }

func (borrowingTee) BorrowsRecords() {}
