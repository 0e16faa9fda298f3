package loadgen

import (
	"strings"
	"testing"
)

func TestCheckKeyTransport(t *testing.T) {
	for _, tc := range []struct {
		target string
		allow  bool
		ok     bool
	}{
		{"https://api.example.com", false, true},
		{"https://10.0.0.5:8443", false, true},
		{"http://127.0.0.1:8000", false, true},
		{"http://127.0.0.2:8000", false, true},
		{"http://[::1]:8000", false, true},
		{"http://localhost:8000", false, true},
		{"http://10.0.0.5:8000", false, false},
		{"http://spoc-default-s1.spoc.svc:8000", false, false},
		{"http://spoc-default-s1.spoc.svc:8000", true, true},
		{"http://localhost.example.com:8000", false, false},
	} {
		err := CheckKeyTransport(tc.target, tc.allow)
		if (err == nil) != tc.ok {
			t.Errorf("CheckKeyTransport(%q, %v) = %v, want ok=%v", tc.target, tc.allow, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "run.api_key_plain_http") {
			t.Errorf("error %q does not name the setting that allows plain http", err)
		}
	}
	if _, err := New(Options{Target: "http://10.0.0.5:8000", Users: 1, Duration: 1, APIKey: "sk-x"}); err == nil || !strings.Contains(err.Error(), "api key") || strings.Contains(err.Error(), "sk-x") {
		t.Errorf("New with a key over plain http to another machine = %v, want an error without the key", err)
	}
}
