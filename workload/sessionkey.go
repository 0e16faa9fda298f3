package workload

import "strconv"

// Session keys: what the session header a request carries identifies.
const (
	// SessionKeyUser keeps a user on one replica across sessions.
	SessionKeyUser = "user"
	// SessionKeySession keys each of a user's sessions separately.
	SessionKeySession = "session"
)

// SessionKey is the session header's value for a user's n-th session:
// "u<user>" keyed by user, "u<user>-s<session>" keyed by session. It
// depends on the workload's schedule only (not on the run id), and both
// executors take it from here — the HTTP client sends it as a header, the
// simulator's session-affinity router hashes it — so a live fleet behind a
// consistent-hash router and the simulated one place each session alike.
func SessionKey(by string, user, session int) string {
	b := make([]byte, 0, 16)
	b = append(b, 'u')
	b = strconv.AppendInt(b, int64(user), 10)
	if by == SessionKeySession {
		b = append(b, "-s"...)
		b = strconv.AppendInt(b, int64(session), 10)
	}
	return string(b)
}
