package perfmodel

import (
	"fmt"
	"os"
	"strings"
)

// UnknownNameError reports a model or GPU name found in no catalog. It
// wraps ErrUnknown and lists the names that would have been accepted, so a
// caller can print them or suggest the closest one.
type UnknownNameError struct {
	// Kind is "model" or "gpu".
	Kind string
	// Name is the name as written.
	Name string
	// Known are the accepted names: built-in catalog entries and, for GPUs,
	// the ones a catalog file defines.
	Known []string
}

func (e *UnknownNameError) Error() string {
	return fmt.Sprintf("%s %q: %v (known: %s)", e.Kind, e.Name, ErrUnknown, strings.Join(e.Known, ", "))
}

// Unwrap returns ErrUnknown.
func (e *UnknownNameError) Unwrap() error { return ErrUnknown }

// ResolveModel finds the model a deployment names: a name ending in ".json"
// is a Hugging Face config.json path (ReadHFConfig), anything else a catalog
// entry (LookupModel, which fails with an *UnknownNameError). It is the one
// place this rule lives: the simulator builds deployments with it and
// config validation checks engine.model with it.
func ResolveModel(name string) (Model, error) {
	if !strings.HasSuffix(name, ".json") {
		return LookupModel(name)
	}
	f, err := os.Open(name)
	if err != nil {
		return Model{}, err
	}
	defer f.Close()
	return ReadHFConfig(f, name)
}

// ReadGPUCatalogFile reads the extra GPU definitions of a catalog file
// (ReadGPUs); an empty path means no catalog and no GPUs.
func ReadGPUCatalogFile(path string) ([]GPU, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadGPUs(f, path)
}

// ResolveGPU finds the GPU a deployment names: first among extra (the GPUs
// of a catalog file, ReadGPUCatalogFile), by exact name up to case, so a
// catalog can redefine a built-in GPU; then in the built-in catalog
// (LookupGPU, aliases included). An unknown name fails with an
// *UnknownNameError whose Known lists both. Like ResolveModel it is the one
// place this rule lives.
func ResolveGPU(name string, extra []GPU) (GPU, error) {
	for _, g := range extra {
		if strings.EqualFold(g.Name, name) {
			return g, nil
		}
	}
	g, err := LookupGPU(name)
	if err == nil || len(extra) == 0 {
		return g, err
	}
	known := make([]string, 0, len(extra))
	for _, g := range extra {
		known = append(known, g.Name)
	}
	return GPU{}, &UnknownNameError{Kind: "gpu", Name: name, Known: append(known, GPUNames()...)}
}
