package words

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{Plural(1, "GPU"), "1 GPU"},
		{Plural(4, "GPU"), "4 GPUs"},
		{Plural(0, "replica"), "0 replicas"},
		{Count(1, "policy", "policies"), "1 policy"},
		{Count(3, "policy", "policies"), "3 policies"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
