package workload

import (
	"fmt"
)

// Workload is a source of session scripts that can also render their text:
// a Generator, or an importer replaying a trace.
type Workload interface {
	Source
	Renderer
}

// Open returns the workload cfg describes: the importer of cfg.Import when
// set, otherwise a Generator over the profiles. maxModelLen is the served
// model's context limit.
func Open(cfg Spec, maxModelLen int, opts ...Option) (Workload, error) {
	if cfg.Import == nil {
		return New(cfg, maxModelLen, opts...)
	}
	w, err := OpenImport(cfg.Import.Format, cfg.Import.Path, cfg.Tokenizer, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("workload.import: %w", err)
	}
	return w, nil
}
