package chatmsg

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		``: "", `null`: "", `"hi"`: "hi", `[]`: "",
		`[{"type":"text","text":"a"},{"type":"text","text":"b"}]`: "ab",
	} {
		got, err := Text(json.RawMessage(in))
		if err != nil || got != want {
			t.Errorf("Text(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`3`, `{"text":"x"}`, `[1]`} {
		if _, err := Text(json.RawMessage(bad)); !errors.Is(err, ErrContent) {
			t.Errorf("Text(%s): err %v, want ErrContent", bad, err)
		}
	}
}
