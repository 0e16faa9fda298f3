package kubenode

import (
	"reflect"
	"testing"
)

func TestMapPaths(t *testing.T) {
	mounts := map[string]string{"/records": "/node/claims/job/spoc-records", "/records/deep": "/node/pod/volumes/deep", "/data/": "/node/hostpath/data"}
	for _, tc := range []struct{ in, want []string }{
		{[]string{"spoc", "run", "--out", "/records/run.jsonl"}, []string{"spoc", "run", "--out", "/node/claims/job/spoc-records/run.jsonl"}},
		{[]string{"--out=/records/run.jsonl", "/records"}, []string{"--out=/node/claims/job/spoc-records/run.jsonl", "/node/claims/job/spoc-records"}},
		{[]string{"/records/deep/x"}, []string{"/node/pod/volumes/deep/x"}},          // the longer mount wins
		{[]string{"/recordsX/y", "records/y"}, []string{"/recordsX/y", "records/y"}}, // not under the mount
		{[]string{"/data/hf/model"}, []string{"/node/hostpath/data/hf/model"}},
		{[]string{"--target", "http://svc:8000/records"}, []string{"--target", "http://svc:8000/records"}},
	} {
		if got := mapPaths(tc.in, mounts); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("mapPaths(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := mapPaths([]string{"/records/x"}, nil); !reflect.DeepEqual(got, []string{"/records/x"}) {
		t.Errorf("without mounts: %q", got)
	}
}
