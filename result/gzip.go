package result

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
)

// GzipSuffix ends the name of a gzip-compressed records file
// (users-00162.jsonl.gz). The lines inside are the same JSON lines as an
// uncompressed .jsonl file; Reader detects the compression from the
// content, so every reader accepts both.
const GzipSuffix = ".gz"

// IsGzipName reports whether a records file name asks for compression.
func IsGzipName(name string) bool { return strings.HasSuffix(name, GzipSuffix) }

// GzipFile compresses what is written to it into an underlying file. Close
// ends the gzip stream, then closes the file; Abort, when the file has one
// (an atomic file), discards the file without ending the stream.
type GzipFile struct {
	gz  *gzip.Writer
	dst io.WriteCloser
}

// NewGzipFile returns a GzipFile writing to dst. Records compress about
// twentyfold (the per-token gaps of neighbouring requests repeat), so a
// plan's sweep keeps all of them in a few megabytes.
func NewGzipFile(dst io.WriteCloser) *GzipFile {
	return &GzipFile{gz: gzip.NewWriter(dst), dst: dst}
}

// Write compresses p.
func (g *GzipFile) Write(p []byte) (int, error) { return g.gz.Write(p) }

// Close ends the gzip stream and closes the underlying file.
func (g *GzipFile) Close() error {
	err := g.gz.Close()
	if cerr := g.dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("close compressed records: %w", err)
	}
	return nil
}

// Abort discards the underlying file when it can be discarded.
func (g *GzipFile) Abort() {
	if a, ok := g.dst.(interface{ Abort() }); ok {
		a.Abort()
		return
	}
	_ = g.dst.Close()
}

// gzipMagic opens every gzip stream (RFC 1952).
const gzipMagic = "\x1f\x8b"

// maybeGunzip returns a reader of the lines behind br: br itself, or a
// decompressor when the content starts with the gzip magic.
func maybeGunzip(br *bufio.Reader, name string) (*bufio.Reader, *gzip.Reader, error) {
	head, err := br.Peek(2)
	if err != nil || string(head) != gzipMagic {
		return br, nil, nil // too short to be gzip: plain (possibly empty) lines
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: open gzip stream: %w", name, err)
	}
	zr.Multistream(true)
	return bufio.NewReaderSize(zr, 256<<10), zr, nil
}

// truncatedGzip reports whether err is the end of a gzip stream cut short
// (a killed writer): the lines before it stand, like a truncated last line.
func truncatedGzip(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF)
}
