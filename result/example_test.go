package result_test

import (
	"fmt"
	"time"

	"github.com/spoc-project/spoc/result"
)

// A summary of two profiles judged per profile: the verdict names the
// violated clause, which is what a capacity sweep reports.
func ExampleSummary() {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	sum := result.NewSummary(result.DefaultSLA(), result.Window{Start: start, End: start.Add(time.Minute)})
	for i := range 20 {
		s := start.Add(time.Duration(i) * time.Second)
		for _, p := range []struct {
			name string
			ttft time.Duration
		}{{"P0", 800 * time.Millisecond}, {"P2", 2410 * time.Millisecond}} {
			sum.Add(&result.Record{Profile: p.name, Scheduled: s, Sent: s, FirstToken: s.Add(p.ttft),
				Done: s.Add(p.ttft + time.Second), TokenGapsUS: []int64{50000, 50000}, OutputTokens: 3, Status: result.StatusOK})
		}
	}
	res := sum.Result()
	fmt.Println(res.Overall.Requests, res.Overall.OK)
	fmt.Println(res.SLA.Pass, res.SLA.First())
	// Output:
	// 40 40
	// false P2 ttft p95 2.41s > 2s
}
