package result

import (
	"encoding/json"
	"testing"
	"time"
)

// summary.json embeds the SLA; files written before result owned the type
// must still decode, so the wire form is pinned here.
func TestSLAJSONWireForm(t *testing.T) {
	const want = `{"TTFT":{"Percentile":95,"Max":"2s"},"ITL":{"Percentile":95,"Max":"100ms"},` +
		`"TPOT":{"Percentile":95,"Max":"0s"},"E2E":{"Percentile":95,"Max":"0s"},"MaxErrorRate":0.01,"Scope":"per-profile"}`
	got, err := json.Marshal(DefaultSLA())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("SLA JSON\n got: %s\nwant: %s", got, want)
	}
	var back SLA
	if err := json.Unmarshal([]byte(want), &back); err != nil {
		t.Fatal(err)
	}
	if back != DefaultSLA() {
		t.Errorf("round trip: got %+v, want %+v", back, DefaultSLA())
	}
}

func TestLatencyClauseJSONErrors(t *testing.T) {
	for _, in := range []string{`{"Percentile":95,"Max":"two seconds"}`, `{"Percentile":"95"}`, `[1]`} {
		var c LatencyClause
		if err := json.Unmarshal([]byte(in), &c); err == nil {
			t.Errorf("%s decoded to %+v; want an error", in, c)
		}
	}
	var c LatencyClause
	if err := json.Unmarshal([]byte(`{"Percentile":99}`), &c); err != nil || c != (LatencyClause{Percentile: 99}) {
		t.Errorf("clause without max: %+v, %v; want p99 off", c, err)
	}
	if err := json.Unmarshal([]byte(`{"Percentile":50,"Max":"1m30s"}`), &c); err != nil || c.Max != 90*time.Second {
		t.Errorf("clause max 1m30s: %+v, %v", c, err)
	}
}
