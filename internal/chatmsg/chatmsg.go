// Package chatmsg reads OpenAI chat message content, shared by the corpus
// importer and the simulator's API.
package chatmsg

import (
	"encoding/json"
	"errors"
	"strings"
)

// ErrContent is the error for content that is neither a string nor a list
// of text parts.
var ErrContent = errors.New("content is neither a string nor a list of text parts")

// Text returns a message's content: a string, null (empty), or a list of
// {"type": "text", "text": ...} parts, concatenated.
func Text(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", ErrContent
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}
