// Package loadgen types the routes again: rejected.
package loadgen

import "strings"

func endpointURL(target string) string {
	return strings.TrimSuffix(target, "/v1") + "/v1/chat/completions"
}
