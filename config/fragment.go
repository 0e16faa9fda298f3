package config

import (
	"io"

	"go.yaml.in/yaml/v3"
)

// WriteProfiles writes profiles as a configuration fragment whose
// workload.profiles replace the defaults when loaded (spoc workload fit
// --out): YAML only config writes.
func WriteProfiles(w io.Writer, profiles []Profile) error {
	var doc struct {
		Workload struct {
			Profiles []Profile `yaml:"profiles"`
		} `yaml:"workload"`
	}
	doc.Workload.Profiles = profiles
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	return enc.Close()
}
