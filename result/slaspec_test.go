package result

import (
	"encoding/json"
	"testing"
	"time"
)

// summary.json embeds the SLA in snake_case; files written before it was
// snake_case must still decode, so both wire forms are pinned here.
func TestSLAJSONWireForm(t *testing.T) {
	const want = `{"ttft":{"percentile":95,"max":"2s"},"itl":{"percentile":95,"max":"100ms"},` +
		`"tpot":{"percentile":95,"max":"0s"},"e2e":{"percentile":95,"max":"0s"},"max_error_rate":0.01,"scope":"per-profile"}`
	const legacy = `{"TTFT":{"Percentile":95,"Max":"2s"},"ITL":{"Percentile":95,"Max":"100ms"},` +
		`"TPOT":{"Percentile":95,"Max":"0s"},"E2E":{"Percentile":95,"Max":"0s"},"MaxErrorRate":0.01,"Scope":"per-profile"}`
	got, err := json.Marshal(DefaultSLA())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("SLA JSON\n got: %s\nwant: %s", got, want)
	}
	for _, in := range []string{want, legacy} {
		var back SLA
		if err := json.Unmarshal([]byte(in), &back); err != nil {
			t.Fatal(err)
		}
		if back != DefaultSLA() {
			t.Errorf("decode %s: got %+v, want %+v", in, back, DefaultSLA())
		}
	}
	var bad SLA
	if err := json.Unmarshal([]byte(`{"max_error_rate":"1%"}`), &bad); err == nil {
		t.Errorf("a string error rate decoded to %+v; want an error", bad)
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
