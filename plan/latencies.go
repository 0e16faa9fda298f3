package plan

import (
	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/result"
)

// ratio is a/b, 1 when either is not positive.
func ratio(a, b float64) float64 {
	if a > 0 && b > 0 {
		return a / b
	}
	return 1
}

func latencies(ev *capacity.Evaluation) Latencies {
	if ev == nil {
		return Latencies{}
	}
	return latenciesOf(ev.Summary)
}

// latenciesOf is the numbers a probe compares, from a run's result (an
// evaluation's summary, or a records file's); its verdict is the SLA's.
func latenciesOf(res *result.Result) Latencies {
	if res == nil {
		return Latencies{}
	}
	o := res.Overall
	return Latencies{TTFTP50Ms: o.TTFT.P50, ITLP50Ms: o.ITL.P50, TTFTP95Ms: o.TTFT.P95, ITLP95Ms: o.ITL.P95,
		OutputThroughput: o.OutputTokensPerSecond, Pass: res.SLA.Pass, Settling: res.Settling.Flagged, PrefixCacheHitRate: hitRate(o)}
}

// hitRate is the share of st's prompt tokens the server reported cached.
func hitRate(st result.Stats) float64 {
	if st.PromptTokens <= 0 {
		return 0
	}
	return float64(st.CachedTokens) / float64(st.PromptTokens)
}

// evaluationWord is ev's verdict in one word for a progress line: an
// evaluation with too few samples to judge a clause is neither a pass nor a
// FAIL, and says whether its measured values met the SLA.
func evaluationWord(ev *capacity.Evaluation) string {
	if ev.Verdict.Outcome() == result.VerdictInsufficient {
		if ev.Verdict.FewSamplesPass() {
			return "unjudged (too few samples; within the SLA as measured)"
		}
		return "unjudged (too few samples; over the SLA as measured)"
	}
	return verdictWord(ev.Pass)
}

func verdictWord(pass bool) string {
	if pass {
		return "pass"
	}
	return "FAIL"
}
