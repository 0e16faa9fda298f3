package capacity

import "testing"

// One wording wherever spoc says where a number came from (the CLI's
// "source:" lines, summary.md, the report); an external server's launch is
// its address, which summary.md once printed twice ("external engine
// (http://h:8000) at http://h:8000").
func TestProvenanceString(t *testing.T) {
	for _, c := range []struct {
		p    Provenance
		want string
	}{
		{Provenance{Source: SourceLive, Engine: "external", Launch: "http://127.0.0.1:8000", Endpoint: "http://127.0.0.1:8000", Version: "0.11.2"},
			"live on the external engine at http://127.0.0.1:8000, server version 0.11.2"},
		{Provenance{Source: SourceLive, Engine: "process", Launch: "vllm serve m --port {{.Port}}", Endpoint: "http://127.0.0.1:41000"},
			"live on the process engine at http://127.0.0.1:41000 (vllm serve m --port {{.Port}})"},
		{Provenance{Source: SourceSimulated, Engine: "sim"}, "simulated on the sim engine"},
		{Provenance{}, "not recorded"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("%#v.String() = %q, want %q", c.p, got, c.want)
		}
	}
}
