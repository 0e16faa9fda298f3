package capacity

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/vllm"
)

// Sources of a number.
const (
	// SourceLive: measured on a server over HTTP, in real time.
	SourceLive = "live"
	// SourceSimulated: computed by the built-in simulator in virtual time.
	SourceSimulated = "simulated"
	// SourceCalibrated: computed by the simulator with a correction fitted
	// to live runs of this deployment (a multi-fidelity plan).
	SourceCalibrated = "simulated-calibrated"
)

// Calibrated is implemented by a simulator launcher whose cost model was
// corrected to live measurements: its numbers are SourceCalibrated.
type Calibrated interface {
	Calibrated() bool
}

// Provenance says where a measured number came from: live or simulated,
// which engine, what it launched, where it answered and which version it
// said it was. Every evaluation carries one, and so does every number of a
// plan's summary built from evaluations.
type Provenance struct {
	// Source is SourceLive or SourceSimulated.
	Source string `json:"source"`
	// Engine is the launcher's kind: sim, process, external, kubernetes.
	Engine string `json:"engine"`
	// Launch is what the launcher starts (its command template, image and
	// namespace, simulated deployment, or the external server's address).
	Launch string `json:"launch,omitempty"`
	// Endpoint is the server's base URL (live runs).
	Endpoint string `json:"endpoint,omitempty"`
	// Version is what the server answered on GET /version, when it did.
	Version string `json:"engine_version,omitempty"`
}

// String says where the number came from in one phrase, the same
// wherever spoc prints it (the CLI's "source:" lines, summary.md, the
// report): "live on the process engine at http://127.0.0.1:41000, server
// version 0.11.2 (vllm serve …)". An external server's launch is its
// address, printed once; an empty provenance is "not recorded".
func (p Provenance) String() string {
	if p.Source == "" {
		return "not recorded"
	}
	s := p.Source
	if p.Engine != "" {
		s += " on the " + p.Engine + " engine"
	}
	if p.Endpoint != "" {
		s += " at " + p.Endpoint
	}
	if p.Version != "" {
		s += ", server version " + p.Version
	}
	if p.Launch != "" && p.Launch != p.Endpoint {
		s += " (" + p.Launch + ")"
	}
	return s
}

// launcherProvenance describes l without a server; virtual is set when
// evaluations run in the simulator's virtual time.
func launcherProvenance(l engine.Launcher, virtual bool) Provenance {
	p := Provenance{Source: SourceLive}
	if virtual {
		p.Source = SourceSimulated
		if c, ok := l.(Calibrated); ok && c.Calibrated() {
			p.Source = SourceCalibrated
		}
	}
	if n, ok := l.(engine.Namer); ok {
		p.Engine = n.Kind()
	}
	if d, ok := l.(engine.Describer); ok {
		p.Launch = d.Describe()
	}
	return p
}

// serverVersion asks base for its version (vLLM: GET /version answers
// {"version": "0.11.2"}); "" when it does not say.
func serverVersion(ctx context.Context, base string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+vllm.PathVersion, nil)
	if err != nil {
		return ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	var v struct {
		Version string `json:"version"`
	}
	if json.NewDecoder(resp.Body).Decode(&v) != nil {
		return ""
	}
	return v.Version
}

// Provenance is where the sweep's runs happened: the first evaluation's
// (a sweep runs on one launcher); zero when no level kept its evaluation.
func (r *SweepResult) Provenance() Provenance {
	for _, l := range r.Levels {
		for _, rep := range l.Repeats {
			if ev, ok := rep.Detail.(*Evaluation); ok {
				return ev.Provenance
			}
		}
	}
	return Provenance{}
}
