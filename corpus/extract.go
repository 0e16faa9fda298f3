package corpus

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// DefaultMinDocBytes is the shortest text Extract keeps as a document.
const DefaultMinDocBytes = 64

// Extract splits a trajectory into corpus documents by kind: the system
// prompt (system), the task and other user messages and the assistant's text
// (prose), tool results (tool, or diff when they are patches), code the
// assistant wrote through tool-call arguments (multi-line string values:
// file contents, edits) and the final patch (diff). Texts shorter than
// minBytes are dropped. Every document keeps the trajectory's licence.
func Extract(t *Trajectory, minBytes int) []Doc {
	var out []Doc
	add := func(k Kind, text, where string) {
		if len(strings.TrimSpace(text)) < minBytes {
			return
		}
		out = append(out, Doc{Kind: k, Text: text, Source: t.Source + ":" + t.ID + where, License: t.License})
	}
	for i, m := range t.Messages {
		where := "#" + strconv.Itoa(i)
		switch m.Role {
		case "system", "developer":
			add(KindSystem, m.Content, where)
		case "user":
			add(KindProse, m.Content, where)
		case "tool", "function":
			if looksLikeDiff(m.Content) {
				add(KindDiff, m.Content, where)
			} else {
				add(KindTool, m.Content, where)
			}
		case "assistant":
			add(KindProse, m.Content, where)
			for j, c := range m.ToolCalls {
				for _, s := range multilineStrings(c.Arguments) {
					add(KindCode, s, where+".call"+strconv.Itoa(j))
				}
			}
		}
	}
	add(KindDiff, t.Patch, "#patch")
	return out
}

func looksLikeDiff(s string) bool {
	return strings.HasPrefix(s, "diff --git") || strings.HasPrefix(s, "--- ") || strings.Contains(s, "\n@@ -")
}

// multilineStrings returns the string values of a JSON object with at least
// three lines (file contents and edits, not commands or paths).
func multilineStrings(args string) []string {
	var obj map[string]any
	if json.Unmarshal([]byte(args), &obj) != nil {
		return nil
	}
	var out []string
	for _, v := range obj {
		if s, ok := v.(string); ok && strings.Count(s, "\n") >= 2 {
			out = append(out, s)
		}
	}
	// map order is random: keep documents deterministic
	slices.Sort(out)
	return out
}
