package config

// Report configures the rendered outputs.
type Report struct {
	Title   string   `yaml:"title" doc:"Report title."`
	Formats []string `yaml:"formats" doc:"Outputs: html (self-contained), md, json."`
}

// DefaultReport writes all three formats.
func DefaultReport() Report {
	return Report{Title: "spoc capacity plan", Formats: []string{"html", "md", "json"}}
}

func (r *Report) validate(p string, errs *Errors) {
	for _, f := range r.Formats {
		if !oneOf(f, []string{"html", "md", "json"}) {
			errs.Addf(p+".formats", "unknown format %q (one of \"html\", \"md\", \"json\")", f)
		}
	}
}
