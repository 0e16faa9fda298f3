package config

// Config is one capacity plan: what to serve, with which workload, under which
// SLA, and how to search, run, sweep, observe and report.
type Config struct {
	Engine    Engine    `yaml:"engine" doc:"The inference server under test and how spoc starts it."`
	Workload  Workload  `yaml:"workload" doc:"Stateful multi-turn sessions from user profiles on a shared prefix geometry."`
	SLA       SLA       `yaml:"sla" doc:"Service-level objectives a run must meet; the capacity ceiling is the largest user count that meets them."`
	Search    Search    `yaml:"search" doc:"The study over engine flags (spoc tune): TPE up to 100 trials, NSGA-II beyond."`
	Run       Run       `yaml:"run" doc:"One load run: users, windows and client behaviour."`
	Sweep     Sweep     `yaml:"sweep" doc:"Capacity sweep over user counts (spoc sweep, spoc plan)."`
	Telemetry Telemetry `yaml:"telemetry" doc:"Engine and GPU metrics collected during every run."`
	Trace     Trace     `yaml:"trace" doc:"Nsight Systems kernel trace analysed by spoc plan when given."`
	Report    Report    `yaml:"report" doc:"What the report contains."`
	Plan      Plan      `yaml:"plan" doc:"The buyer's question: peak users, headroom and GPU prices, turned into deployments, GPUs and cost."`
	Day       *Day      `yaml:"day,omitempty" doc:"Load over time for spoc plan: a session arrival rate or users per time of day, simulated on the chosen configuration's replicas under autoscaling policies (static, target tracking, the Kubernetes HPA): replicas over time, SLA attainment and GPU-hours per policy. docs/day.md."`
	Fleet     Fleet     `yaml:"fleet" doc:"The router in front of the deployment's replicas (engine.gpus / engine.tensor_parallel_size of them): simulated, started by spoc (HAProxy for process) or described (external, kubernetes). docs/fleet.md."`

	// written holds the path of every key and list item the file set
	// (sla.ttft, workload.profiles[0]), so that Assumptions lists only
	// what spoc assumed, not what the user decided. Nil for Default().
	written map[string]bool
	// notes says what applying settings changed besides their keys (Notes).
	notes []string
}

// Default returns the reference case of DESIGN.md: gpt-oss-120b on 4× H100
// in the simulator, the P0/P1/P2 coding-assistant workload on a
// partial-common-ground monorepo, and the documented SLA assumptions.
func Default() *Config {
	return &Config{
		Engine:    DefaultEngine(),
		Workload:  DefaultWorkload(),
		SLA:       DefaultSLA(),
		Search:    DefaultSearch(),
		Run:       DefaultRun(),
		Sweep:     DefaultSweep(),
		Telemetry: DefaultTelemetry(),
		Trace:     Trace{},
		Report:    DefaultReport(),
		Plan:      DefaultPlan(),
		Fleet:     DefaultFleet(),
	}
}

// Validate checks every section and cross-section rule and returns *Errors
// listing all problems, or nil.
func (c *Config) Validate() error {
	errs := &Errors{}
	c.Engine.validate("engine", errs)
	c.Engine.validateFlavor("engine", c.Search.Space, errs)
	validateWorkload(&c.Workload, "workload", errs, c.Engine.MaxModelLen)
	c.SLA.validate("sla", errs)
	c.Search.validate("search", errs)
	c.Search.validateParallel("search", c.Engine, errs)
	c.Run.validate("run", c.Workload.Import != nil, errs)
	if c.Run.Clients > 1 && c.Engine.Kind == EngineSim && c.Run.Target == "" {
		errs.Addf("run.clients", "%d client processes need a live engine: the simulator (engine.kind sim) runs in virtual time and has no client to split; set 1, or measure a live engine", c.Run.Clients)
	}
	if c.Run.Kubernetes != nil {
		c.Run.Kubernetes.validate("run.kubernetes", c, errs)
	}
	c.Sweep.validate("sweep", errs)
	c.Telemetry.validate("telemetry", errs)
	c.Trace.validate("trace", errs)
	c.Report.validate("report", errs)
	c.Plan.validate("plan", errs)
	c.Fleet.validate("fleet", c.Engine, errs)
	if c.Day != nil {
		c.Day.validate("day", errs)
	}
	profiles := make([]string, 0, len(c.Workload.Profiles))
	for _, pr := range c.Workload.Profiles {
		profiles = append(profiles, pr.Name)
	}
	c.Plan.validatePeak("plan", profiles, errs)
	return errs.Err()
}

func oneOf(v string, allowed []string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}
