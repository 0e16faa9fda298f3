package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// MaxSSELine bounds one SSE line; a longer line is a stream error rather than
// unbounded memory.
const MaxSSELine = 8 << 20

// ErrSSELineTooLong is returned when a line exceeds MaxSSELine.
var ErrSSELineTooLong = errors.New("sse: line too long")

// Event is one server-sent event. Data is valid until the next call to Next.
type Event struct {
	// Data is the event's data field (several data lines joined by '\n').
	Data []byte
	// At is when the bytes of the event's last data line were read from the
	// connection: before any decoding, so JSON parsing never inflates latency.
	At time.Time
}

// SSEReader parses a text/event-stream. Every Read on the underlying reader
// is timestamped as it returns, and each event carries the timestamp of the
// Read that delivered the end of its last data line. Only the data field is
// kept (comments, event, id and retry fields are skipped), which is all the
// OpenAI streaming protocol uses.
type SSEReader struct {
	r        io.Reader
	buf      []byte
	start    int // unconsumed data is buf[start:end]
	end      int
	readAt   time.Time
	data     []byte
	dataAt   time.Time
	hasData  bool
	skipLF   bool // a '\r' ended the last line; a following '\n' belongs to it
	err      error
	now      func() time.Time
	onFirst  func(time.Time)
	readOnce bool
}

// NewSSEReader returns a reader of the event stream r.
func NewSSEReader(r io.Reader) *SSEReader {
	return &SSEReader{r: r, buf: make([]byte, sseBufSize), now: time.Now}
}

// sseBufSize is the reader's initial buffer: many events per read, and
// enough for any line short of a huge one.
const sseBufSize = 16 << 10

// Reset makes s read the new stream r, as a fresh reader would, keeping its
// buffers so that a client reading one stream after another does not
// allocate per stream (less garbage, fewer GC cycles disturbing timing). A
// buffer grown past the initial size by a long line is dropped, so one huge
// event does not pin memory for the rest of the run.
func (s *SSEReader) Reset(r io.Reader) {
	buf, data := s.buf, s.data[:0]
	if len(buf) != sseBufSize {
		buf = make([]byte, sseBufSize)
	}
	if cap(data) > sseBufSize {
		data = nil
	}
	*s = SSEReader{r: r, buf: buf, data: data, now: time.Now}
}

// OnFirstByte registers f to be called once, when the first bytes arrive.
func (s *SSEReader) OnFirstByte(f func(time.Time)) { s.onFirst = f }

// Next returns the next event. At the end of the stream it returns io.EOF
// (an event without its terminating blank line is discarded, as the SSE
// specification says); read errors are returned as they are.
func (s *SSEReader) Next() (Event, error) {
	for {
		line, at, err := s.line()
		if err != nil {
			return Event{}, err
		}
		if len(line) == 0 { // blank line: dispatch
			if !s.hasData {
				continue
			}
			s.hasData = false
			d := s.data
			if n := len(d); n > 0 && d[n-1] == '\n' {
				d = d[:n-1]
			}
			s.data = s.data[:0]
			return Event{Data: d, At: s.dataAt}, nil
		}
		if line[0] == ':' { // comment
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) == "data" {
			s.data = append(s.data, value...)
			s.data = append(s.data, '\n')
			s.hasData = true
			s.dataAt = at
		}
	}
}

// line returns the next line without its terminator, and the time of the
// read that delivered the terminator.
func (s *SSEReader) line() ([]byte, time.Time, error) {
	scanned := 0 // bytes after s.start known to hold no line end
	for {
		if s.skipLF && s.start < s.end {
			if s.buf[s.start] == '\n' {
				s.start++
			}
			s.skipLF = false
		}
		if i := indexLineEnd(s.buf[s.start+scanned : s.end]); i >= 0 {
			i += s.start + scanned
			line := s.buf[s.start:i]
			s.skipLF = s.buf[i] == '\r'
			s.start = i + 1
			return line, s.readAt, nil
		}
		scanned = s.end - s.start
		if s.err != nil {
			return nil, time.Time{}, s.err
		}
		if err := s.fill(); err != nil {
			// An unterminated last line is discarded, as the spec says.
			s.err = err
			s.start = s.end
			return nil, time.Time{}, err
		}
	}
}

// fill reads more bytes, compacting or growing the buffer as needed.
func (s *SSEReader) fill() error {
	if s.start > 0 {
		n := copy(s.buf, s.buf[s.start:s.end])
		s.start, s.end = 0, n
	}
	if s.end == len(s.buf) {
		if len(s.buf) >= MaxSSELine {
			return fmt.Errorf("%w (more than %d bytes)", ErrSSELineTooLong, MaxSSELine)
		}
		nb := make([]byte, min(2*len(s.buf), MaxSSELine))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	for range 100 { // io.Reader may return 0, nil; don't spin forever
		n, err := s.r.Read(s.buf[s.end:])
		if n > 0 {
			s.readAt = s.now()
			s.end += n
			if !s.readOnce {
				s.readOnce = true
				if s.onFirst != nil {
					s.onFirst(s.readAt)
				}
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}

func indexLineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		i = len(b)
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	if i == len(b) {
		return -1
	}
	return i
}
