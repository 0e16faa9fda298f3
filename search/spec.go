package search

// ParamSpec declares one dimension of a search space as a user writes it in
// a plan file (the search.space list): a flag, its type, its range or
// choices and why it matters. Package tune turns a list of them into a
// Space; package config decodes them from YAML, so the struct tags are the
// schema.
type ParamSpec struct {
	Name    string  `json:"name" yaml:"name" doc:"Engine flag name as vLLM spells it (max-num-batched-tokens)."`
	Type    string  `json:"type" yaml:"type" doc:"int, float, bool or categorical."`
	Low     float64 `json:"low,omitempty" yaml:"low,omitempty" doc:"Lower bound (int, float)."`
	High    float64 `json:"high,omitempty" yaml:"high,omitempty" doc:"Upper bound (int, float)."`
	Log     bool    `json:"log,omitempty" yaml:"log,omitempty" doc:"Sample on a log scale."`
	Step    float64 `json:"step,omitempty" yaml:"step,omitempty" doc:"Grid step (int, float); 0 for none."`
	Choices []any   `json:"choices,omitempty" yaml:"choices,omitempty" doc:"Values of a categorical parameter."`
	Doc     string  `json:"doc,omitempty" yaml:"doc,omitempty" doc:"Why the parameter matters; shown in reports."`
}

// ObjectiveSpec names one metric a study optimises and its direction
// ("maximize" or "minimize", see ParseDirection), as written in the
// search.objectives list of a plan file.
type ObjectiveSpec struct {
	Metric    string `yaml:"metric" doc:"output_throughput, total_throughput, request_throughput, goodput, ttft_p95, itl_p95, ... or capacity (max users under SLA by a short inner search)."`
	Direction string `yaml:"direction" doc:"maximize or minimize."`
}
