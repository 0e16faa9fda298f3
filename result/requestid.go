package result

import "strconv"

// RequestID is the id of a request in records and in the request sent to the
// server: run-user-session-turn (run omitted when empty). The load runner and
// the simulator both use it, so records of the same script line up.
func RequestID(run string, user, session, turn int) string {
	b := make([]byte, 0, len(run)+24)
	if run != "" {
		b = append(b, run...)
		b = append(b, '-')
	}
	b = strconv.AppendInt(b, int64(user), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(session), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(turn), 10)
	return string(b)
}
