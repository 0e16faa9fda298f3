package tune

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"github.com/spoc-project/spoc/engine"
)

// ErrSameFailures is the error of a study stopped because its trials kept
// failing the same way (Spec.StopAfterSameFailures).
var ErrSameFailures = errors.New("study stopped: the same failure whatever the flags")

// sameFailures counts the trials in a row, in the order they finish, that
// failed with the same engine failure. A trial that completes, or fails
// otherwise, resets the count.
type sameFailures struct {
	limit int

	mu     sync.Mutex
	key    string
	n      int
	reason engine.Reason
	detail string
	stop   error
}

// record counts one finished trial's error.
func (s *sameFailures) record(err error) {
	if s == nil || s.limit <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var f *engine.Failure
	if err == nil || !errors.As(err, &f) {
		s.key, s.n = "", 0
		return
	}
	detail := f.Detail
	if f.Reason == engine.ReasonOutOfMemory {
		// sizes differ from one attempt to the next; a rejected flag
		// value, on the other hand, is the flags' own and stays
		detail = withoutDigits(detail)
	}
	key := string(f.Reason) + "\x00" + detail
	if key != s.key {
		s.key, s.n = key, 0
	}
	s.n++
	s.reason, s.detail = f.Reason, f.Detail
	if s.n >= s.limit && s.stop == nil {
		s.stop = fmt.Errorf("%w: %d trials in a row failed to start their server with %s (%s): a failure that does not change with the flags comes from the server's setup (a leftover process holding GPU memory, the model path, the environment), not from the configuration; fix it and run the same command to resume the study, or raise search.stop_after_same_failures",
			ErrSameFailures, s.n, s.reason, s.detail)
	}
}

// err is the error that stops the study, nil while it goes on.
func (s *sameFailures) err() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stop
}

// withoutDigits is s with every run of digits replaced by one '#': two
// out-of-memory lines that differ only in the sizes they name are the
// same failure.
func withoutDigits(s string) string {
	var b strings.Builder
	digit := false
	for _, r := range s {
		if unicode.IsDigit(r) {
			if !digit {
				b.WriteByte('#')
			}
			digit = true
			continue
		}
		digit = false
		b.WriteRune(r)
	}
	return b.String()
}
