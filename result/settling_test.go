package result

import (
	"strings"
	"testing"
	"time"
)

// A window whose first half holds under SettlingRatio of its second half's
// requests was still settling; a steady window and an overloaded one (the
// same rate in both halves, TTFT rising) are not flagged; an inferred
// window, or one with too few requests, is not judged. The live runner
// learns its window only after the run, so the window is set last.
func TestSettling(t *testing.T) {
	w := Window{Start: t0, End: t0.Add(12 * time.Second)}
	// run adds n1 requests spread over the first half and n2 over the
	// second, with TTFT ttft(i) for the i-th of all.
	run := func(n1, n2 int, ttft func(i int) time.Duration, window Window) SettlingReport {
		s := NewSummary(DefaultSLA(), Window{})
		i := 0
		for h, n := range []int{n1, n2} {
			for k := range n {
				at := time.Duration(h)*6*time.Second + time.Duration(k)*6*time.Second/time.Duration(n)
				s.Add(rec("P0", at, ttft(i), 20*time.Millisecond, 11))
				i++
			}
		}
		s.SetWindow(window)
		return s.Result().Settling
	}
	flat := func(int) time.Duration { return 80 * time.Millisecond }

	steady := run(250, 260, flat, w)
	if !steady.Judged || steady.Flagged || steady.FirstHalf.Requests != 250 || steady.SecondHalf.Requests != 260 {
		t.Fatalf("steady window: %+v", steady)
	}
	if steady.FirstHalf.TTFTMeanMs != 80 || steady.SecondHalf.TTFTMeanMs != 80 {
		t.Fatalf("mean TTFT per half: %+v", steady)
	}

	// the queue grows through an overloaded window: TTFT rises, the
	// saturated server completes as many requests in each half
	overloaded := run(300, 300, func(i int) time.Duration { return time.Duration(100+5*i) * time.Millisecond }, w)
	if !overloaded.Judged || overloaded.Flagged {
		t.Fatalf("overloaded window flagged as settling: %+v", overloaded)
	}

	// a start-up storm: users wait seconds for their first answers
	storm := run(14, 215, func(i int) time.Duration {
		if i < 14 {
			return 2 * time.Second
		}
		return 150 * time.Millisecond
	}, w)
	if !storm.Judged || !storm.Flagged || len(storm.Reasons) != 1 {
		t.Fatalf("storm not flagged: %+v", storm)
	}
	for _, want := range []string{"first half held 14 requests and its second 215", "still settling", "warm-up"} {
		if !strings.Contains(storm.Reasons[0], want) {
			t.Errorf("reason %q lacks %q", storm.Reasons[0], want)
		}
	}
	// the boundary: 70 % is not settling, 69 % is, when the difference
	// is beyond noise (3 standard deviations): 69 of 100 is not
	if r := run(700, 1000, flat, w); r.Flagged {
		t.Errorf("700 of 1000 flagged: %+v", r)
	}
	if r := run(690, 1000, flat, w); !r.Flagged {
		t.Errorf("690 of 1000 not flagged: %+v", r)
	}
	if r := run(69, 100, flat, w); r.Flagged || !r.Judged {
		t.Errorf("69 of 100 (31 fewer, 3σ = 39) flagged: %+v", r)
	}
	if r := run(60, 100, flat, w); !r.Flagged {
		t.Errorf("60 of 100 (40 fewer, 3σ = 38) not flagged: %+v", r)
	}

	if r := run(0, SettlingMinRequests-1, flat, w); r.Judged || r.Flagged {
		t.Errorf("second half of %d requests judged: %+v", SettlingMinRequests-1, r)
	}
	if r := run(14, 215, flat, Window{}); r.Judged || r.Flagged {
		t.Errorf("inferred window judged: %+v", r)
	}
}

// The text report warns about a window that was still settling.
func TestSettlingWarning(t *testing.T) {
	s := NewSummary(DefaultSLA(), Window{Start: t0, End: t0.Add(10 * time.Second)})
	for k := range 100 {
		s.Add(rec("P0", 5*time.Second+time.Duration(k)*50*time.Millisecond, 50*time.Millisecond, 20*time.Millisecond, 11))
	}
	var b strings.Builder
	if err := WriteText(&b, s.Result()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "WARNING: the measured window's first half held 0 requests and its second 100") {
		t.Fatalf("no settling warning in:\n%s", b.String())
	}
}
