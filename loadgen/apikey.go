package loadgen

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// CheckKeyTransport says whether an API key may go to target: over https
// to any host, over plain http only to a loopback address (a server on this
// machine) unless allowPlainHTTP is set. A key sent over plain http to
// another machine can be read by anyone on the path; an in-cluster
// Kubernetes Service is such a case (plain http, not loopback), and the
// user who accepts that says so with the setting named in the error.
func CheckKeyTransport(target string, allowPlainHTTP bool) error {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("api key: target %q: %w", target, err)
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		return nil
	case allowPlainHTTP:
		return nil
	}
	return fmt.Errorf("api key: refusing to send it over %s to %s, which is not this machine (use https, or set run.api_key_plain_http: true to accept plain http, as for an in-cluster Service)", u.Scheme, u.Host)
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
