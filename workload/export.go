package workload

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// Export writes the first session of users 0..sessions-1 as JSON lines, one
// Script per line (the same sessions Inspect looks at).
func Export(ctx context.Context, w io.Writer, src Source, sessions int) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	for u := 0; u < sessions; u++ {
		if u%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		s, err := src.Session(u, 0)
		if err != nil {
			return fmt.Errorf("export workload: %w", err)
		}
		if err := enc.Encode(s); err != nil {
			return fmt.Errorf("export workload session of user %d: %w", u, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export workload: %w", err)
	}
	return nil
}

// ReadScripts decodes JSON lines written by Export, calling fn for each
// script; name is used in error messages.
func ReadScripts(r io.Reader, name string, fn func(*Script) error) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	for line := 1; ; line++ {
		var s Script
		if err := dec.Decode(&s); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("read scripts %s (script %d): %w", name, line, err)
		}
		if err := fn(&s); err != nil {
			return err
		}
	}
}
