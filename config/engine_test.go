package config

import (
	"reflect"
	"testing"
	"time"

	"github.com/spoc-project/spoc/sim"
)

// The simulator's tests run on sim.ReferenceDeploymentSpec; it must stay the
// deployment that the default plan file describes.
func TestDefaultEngineIsSimReference(t *testing.T) {
	if got, want := DefaultEngine().SimDeployment(), sim.ReferenceDeploymentSpec(); !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultEngine().SimDeployment() = %+v\nwant sim.ReferenceDeploymentSpec() = %+v", got, want)
	}
}

func TestSimDeploymentCarriesSimSettings(t *testing.T) {
	e := DefaultEngine()
	e.ServedModelName = "openai/gpt-oss-120b"
	e.GPUCatalog = "gpus.yaml"
	e.Sim.Calibration = "cal.json"
	e.Sim.Throttle = []Throttle{{GPU: 2, ClockFactor: 0.5, Start: Duration(30 * time.Second), End: Duration(90 * time.Second)}}
	got := e.SimDeployment()
	if got.ServedModelName != "openai/gpt-oss-120b" || got.GPUCatalog != "gpus.yaml" || got.Calibration != "cal.json" {
		t.Errorf("names and files lost: %+v", got)
	}
	if want := []sim.Throttle{{GPU: 2, ClockFactor: 0.5, Start: 30, End: 90}}; !reflect.DeepEqual(got.Throttles, want) {
		t.Errorf("throttles = %+v, want %+v (seconds from the start)", got.Throttles, want)
	}
}
