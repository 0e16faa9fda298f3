package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/perfmodel"
)

// NewDeployment resolves names with perfmodel.ResolveModel and ResolveGPU
// and labels each failure with the engine field a user fixes.
func TestNewDeploymentResolvesNames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*DeploymentSpec)
		want   string // error prefix; "" means it builds
	}{
		{"reference", func(*DeploymentSpec) {}, ""},
		{"catalog GPU", func(s *DeploymentSpec) { s.GPU, s.GPUCatalog = "L40S", "../perfmodel/testdata/gpus.yaml" }, ""},
		{"HF config", func(s *DeploymentSpec) { s.Model = "../perfmodel/testdata/gpt-oss-120b.config.json" }, ""},
		{"unknown model", func(s *DeploymentSpec) { s.Model = "gpt-oss-12b" }, "engine.model: "},
		{"missing HF config", func(s *DeploymentSpec) { s.Model = "missing.config.json" }, "engine.model: "},
		{"unknown GPU", func(s *DeploymentSpec) { s.GPU = "H100-SMX" }, "engine.gpu: "},
		{"missing catalog", func(s *DeploymentSpec) { s.GPUCatalog = "missing.yaml" }, "engine.gpu_catalog: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := ReferenceDeploymentSpec()
			tc.change(&spec)
			d, err := NewDeployment(spec)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if spec.GPUCatalog != "" && d.GPU.Name != spec.GPU {
					t.Errorf("GPU %q, want %q from the catalog", d.GPU.Name, spec.GPU)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want prefix %q", err, tc.want)
			}
			if strings.HasPrefix(tc.name, "unknown") != errors.Is(err, perfmodel.ErrUnknown) {
				t.Errorf("errors.Is(%v, perfmodel.ErrUnknown) wrong", err)
			}
		})
	}
}
