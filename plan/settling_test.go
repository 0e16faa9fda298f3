package plan

import (
	"strings"
	"testing"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/result"
)

// The summary notes a window still settling at the two counts that decide
// the ceiling, and says nothing of a settling level elsewhere in the sweep
// or when neither settled; the sweep point carries the flag to the report.
func TestSettlingNote(t *testing.T) {
	settling := result.SettlingReport{Judged: true, Flagged: true, Ratio: 0.07,
		FirstHalf: result.Half{Requests: 14, TTFTMeanMs: 2109}, SecondHalf: result.Half{Requests: 215, TTFTMeanMs: 158}}
	ev := func(st result.SettlingReport) *capacity.Evaluation {
		return &capacity.Evaluation{Summary: &result.Result{Settling: st}}
	}
	res := &capacity.SweepResult{Ceiling: 80, FirstFailing: 88}
	levels := map[int]*capacity.Evaluation{8: ev(settling), 80: ev(result.SettlingReport{Judged: true}), 88: ev(settling)}
	note := settlingNote(res, levels)
	for _, want := range []string{"88 users (the first failing count): 14 requests in the window's first half, 215 in its second, mean TTFT 2109 ms then 158 ms", "under 70 %", "Lengthen sweep.warmup"} {
		if !strings.Contains(note, want) {
			t.Errorf("note lacks %q:\n%s", want, note)
		}
	}
	if strings.Contains(note, "80 users") || strings.Contains(note, " 8 users") {
		t.Errorf("note names a level that did not settle or does not decide the ceiling:\n%s", note)
	}
	levels[88] = ev(result.SettlingReport{Judged: true})
	if note := settlingNote(res, levels); note != "" {
		t.Errorf("a note with no deciding level settling: %s", note)
	}
	sp := sweepPoint(capacity.Level{Users: 88}, ev(settling))
	if !sp.Settling || sp.SettlingRatio != 0.07 || !strings.Contains(sp.Verdict(), "fail: ") || !strings.Contains(sp.Verdict(), "still settling: the window's first half held 7 %") {
		t.Errorf("sweep point: settling %v ratio %v verdict %q", sp.Settling, sp.SettlingRatio, sp.Verdict())
	}
}
