package result

import (
	"bytes"
	"io"
	"testing"
)

type closeBuffer struct {
	bytes.Buffer
	closed, aborted bool
}

func (b *closeBuffer) Close() error { b.closed = true; return nil }
func (b *closeBuffer) Abort()       { b.aborted = true }

// writeGzipRecords writes n records through a Writer into a GzipFile.
func writeGzipRecords(t *testing.T, n int) *closeBuffer {
	t.Helper()
	var dst closeBuffer
	gz := NewGzipFile(&dst)
	w := NewWriter(gz)
	for i := 0; i < n; i++ {
		if err := w.Write(sampleRecord(i, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	if !dst.closed {
		t.Error("GzipFile.Close did not close the file")
	}
	return &dst
}

// A compressed records file reads back as the same records, through the
// same Reader a plain file goes through, and is smaller than the lines.
func TestGzipRecordsRoundTrip(t *testing.T) {
	const n = 200
	dst := writeGzipRecords(t, n)
	var plain bytes.Buffer
	pw := NewWriter(&plain)
	for i := 0; i < n; i++ {
		_ = pw.Write(sampleRecord(i, i))
	}
	_ = pw.Close()
	if dst.Len()*5 > plain.Len() {
		t.Errorf("compressed %d bytes for %d plain: less than fivefold", dst.Len(), plain.Len())
	}
	for name, in := range map[string][]byte{"gz": dst.Bytes(), "plain": plain.Bytes()} {
		got := 0
		truncated, err := ReadAll(bytes.NewReader(in), name, func(r *Record) error {
			if r.User != got || r.Turn != got {
				t.Errorf("%s: record %d is user %d turn %d", name, got, r.User, r.Turn)
			}
			got++
			return nil
		})
		if err != nil || truncated || got != n {
			t.Errorf("%s: read %d records, truncated %v, err %v; want %d", name, got, truncated, err, n)
		}
	}
}

// A compressed file cut short (a killed writer) reads its complete lines
// and says it was truncated, like a plain file with a partial last line.
func TestGzipRecordsCutShort(t *testing.T) {
	full := writeGzipRecords(t, 200).Bytes()
	cut := full[:len(full)*2/3]
	got := 0
	truncated, err := ReadAll(bytes.NewReader(cut), "cut.jsonl.gz", func(*Record) error { got++; return nil })
	if err != nil || !truncated || got == 0 || got >= 200 {
		t.Errorf("cut stream: %d records, truncated %v, err %v; want some records, truncated", got, truncated, err)
	}
	// a stream whose header is damaged is an error, not an empty file
	bad := append([]byte(nil), full...)
	bad[2] = 0 // compression method
	if _, err := ReadAll(bytes.NewReader(bad), "bad.jsonl.gz", func(*Record) error { return nil }); err == nil {
		t.Error("damaged gzip header read without error")
	}
}

func TestGzipFileAbortDiscards(t *testing.T) {
	var dst closeBuffer
	g := NewGzipFile(&dst)
	_, _ = io.WriteString(g, "{}\n")
	g.Abort()
	if !dst.aborted || dst.closed {
		t.Errorf("Abort: aborted %v closed %v; want the atomic file aborted", dst.aborted, dst.closed)
	}
}
