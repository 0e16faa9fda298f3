package config

import (
	"strconv"
	"strings"
)

// Trace points spoc plan at a kernel trace to analyse.
type Trace struct {
	File   string `yaml:"file,omitempty" doc:"nsys export --type sqlite file, or nsys stats cuda_gpu_kern_sum CSV; empty skips kernel analysis."`
	Window string `yaml:"window,omitempty" doc:"Time range START:END in seconds from the trace start; empty is the whole trace."`
	NVTX   string `yaml:"nvtx,omitempty" doc:"Restrict to the named NVTX range."`
	Rules  string `yaml:"rules,omitempty" doc:"YAML file of kernel categorisation rules replacing the built-in ones."`
}

func (t *Trace) validate(p string, errs *Errors) {
	if t.Window == "" {
		return
	}
	a, b, ok := strings.Cut(t.Window, ":")
	s, err1 := strconv.ParseFloat(a, 64)
	e, err2 := strconv.ParseFloat(b, 64)
	if !ok || err1 != nil || err2 != nil || s < 0 || e <= s {
		errs.Addf(p+".window", "want START:END in seconds with END > START, got %q", t.Window)
	}
}
