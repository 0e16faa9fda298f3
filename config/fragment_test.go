package config

import (
	"bytes"
	"reflect"
	"testing"
)

// A written fragment loads back to the profiles it was written from.
func TestWriteProfilesLoadsBack(t *testing.T) {
	want := DefaultWorkload().Profiles[:1]
	want[0].Name, want[0].Weight = "fitted", 1
	var b bytes.Buffer
	if err := WriteProfiles(&b, want); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(&b, "fragment.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if !reflect.DeepEqual(cfg.Workload.Profiles, want) {
		t.Errorf("loaded %+v\nwant %+v", cfg.Workload.Profiles, want)
	}
}
