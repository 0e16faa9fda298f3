package cli

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// stderrLogger is the logger of spoc's own commands: a warning prints as
// every other line spoc writes to stderr does ("spoc: warning: …", its
// attributes after it in parentheses), not as slog's key=value text. A
// server's request log (spoc sim serve) keeps slog's format, as vLLM's does.
func stderrLogger(w io.Writer) *slog.Logger {
	return slog.New(&stderrHandler{mu: &sync.Mutex{}, w: w, level: slog.LevelWarn})
}

type stderrHandler struct {
	mu     *sync.Mutex
	w      io.Writer
	level  slog.Level
	attrs  []slog.Attr
	prefix string // the groups' names, each followed by "."
}

func (h *stderrHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *stderrHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("spoc: ")
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("warning: ")
	}
	b.WriteString(r.Message)
	attrs := h.attrs
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, slog.Attr{Key: h.prefix + a.Key, Value: a.Value})
		return true
	})
	for i, a := range attrs {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(a.Key + ": " + a.Value.Resolve().String())
	}
	if len(attrs) > 0 {
		b.WriteString(")")
	}
	b.WriteString("\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *stderrHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range as {
		c.attrs = append(c.attrs, slog.Attr{Key: h.prefix + a.Key, Value: a.Value})
	}
	return &c
}

func (h *stderrHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.prefix = h.prefix + name + "."
	return &c
}
