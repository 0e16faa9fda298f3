// Package haproxy writes and checks the configuration of the HAProxy spoc
// starts in front of a process fleet's replicas, and names the command that
// runs it. spoc writes no router of its own: HAProxy routes, and the
// simulator's session-affinity policy (sim.HAProxyRing) computes the same
// consistent-hash ring this configuration makes HAProxy build, so a live
// fleet and a simulated one send each session to the same replica.
//
// The engine package starts the command with its own process handling
// (process group, parent-death signal, log, stop with a grace period), as
// it does the replicas' servers.
package haproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Balance algorithms spoc configures (HAProxy's "balance" keyword).
const (
	// RoundRobin is "balance roundrobin": per request in HTTP mode.
	RoundRobin = "roundrobin"
	// LeastConn is "balance leastconn": the server with the fewest active
	// connections, requests in flight for a streaming API.
	LeastConn = "leastconn"
	// Hash is "balance hdr(<header>)" with "hash-type consistent": the
	// ring sim.HAProxyRing models (sdbm with avalanche, 16 points per unit
	// of weight, servers numbered 1, 2, … in declaration order).
	Hash = "hash"
)

// Balances lists the algorithms Config accepts.
var Balances = []string{RoundRobin, LeastConn, Hash}

// InstallHint is what an error about a missing HAProxy says to do.
const InstallHint = "apt-get install haproxy (Debian, Ubuntu), dnf install haproxy (Fedora, RHEL) or brew install haproxy"

// Config is one frontend on loopback and its backend of replicas.
type Config struct {
	// Bind is the frontend's address, host:port; the host must be a
	// loopback address (spoc opens nothing beyond the machine).
	Bind string
	// Balance is one of Balances.
	Balance string
	// Header is the hashed request header for Hash (X-Session-Id).
	Header string
	// HashBalanceFactor is hash-balance-factor for Hash: 0 off, else a
	// percentage above 100.
	HashBalanceFactor int
	// Servers are the replicas' addresses (host:port) in replica order:
	// server r<i+1> is replica i, with HAProxy's default id i+1 and
	// weight 1, as sim.HAProxyRing numbers them.
	Servers []string
	// Timeout bounds the client and server inactivity of a stream; zero
	// means 10 minutes (a long generation streams for minutes).
	Timeout time.Duration
}

// Render validates c and returns the configuration file's text.
func (c Config) Render() ([]byte, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ms := strconv.FormatInt(timeout.Milliseconds(), 10) + "ms"
	var b bytes.Buffer
	b.WriteString("# written by spoc: the router in front of the fleet's replicas (docs/fleet.md)\n")
	b.WriteString("global\n    maxconn 4096\n")
	b.WriteString("defaults\n    mode http\n    timeout connect 5s\n")
	fmt.Fprintf(&b, "    timeout client %s\n    timeout server %s\n", ms, ms)
	// Without it HAProxy batches a streamed response and inter-token
	// latency cannot be measured (the client sees bursts).
	b.WriteString("    option http-no-delay\n")
	b.WriteString("frontend fleet\n")
	fmt.Fprintf(&b, "    bind %s\n", c.Bind)
	b.WriteString("    default_backend replicas\n")
	b.WriteString("backend replicas\n")
	switch c.Balance {
	case Hash:
		fmt.Fprintf(&b, "    balance hdr(%s)\n", c.Header)
		b.WriteString("    hash-type consistent\n")
		if c.HashBalanceFactor > 0 {
			fmt.Fprintf(&b, "    hash-balance-factor %d\n", c.HashBalanceFactor)
		}
	default:
		fmt.Fprintf(&b, "    balance %s\n", c.Balance)
	}
	for i, s := range c.Servers {
		fmt.Fprintf(&b, "    server r%d %s\n", i+1, s)
	}
	return b.Bytes(), nil
}

func (c Config) validate() error {
	if err := loopback(c.Bind); err != nil {
		return fmt.Errorf("haproxy: bind: %w", err)
	}
	switch c.Balance {
	case RoundRobin, LeastConn:
	case Hash:
		if !token(c.Header) {
			return fmt.Errorf("haproxy: %q is not an HTTP header name", c.Header)
		}
		if c.HashBalanceFactor != 0 && c.HashBalanceFactor <= 100 {
			return fmt.Errorf("haproxy: hash-balance-factor must be 0 or above 100, got %d", c.HashBalanceFactor)
		}
	default:
		return fmt.Errorf("haproxy: unknown balance %q (one of %s)", c.Balance, strings.Join(Balances, ", "))
	}
	if len(c.Servers) == 0 {
		return errors.New("haproxy: no servers")
	}
	for i, s := range c.Servers {
		if err := loopback(s); err != nil {
			return fmt.Errorf("haproxy: server r%d: %w", i+1, err)
		}
	}
	return nil
}

// loopback checks that addr is host:port on a loopback address.
func loopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: bad port", addr)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q is not a loopback address", addr)
	}
	return nil
}

// token reports whether s is an HTTP field name (RFC 9110 token); it is
// also safe inside hdr(...).
func token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// Find returns the path of the HAProxy binary (a name looked up on PATH,
// or a path); missing, the error says how to install it.
func Find(binary string) (string, error) {
	if binary == "" {
		binary = "haproxy"
	}
	path, err := exec.LookPath(binary)
	if err != nil {
		return "", fmt.Errorf("haproxy: %q not found (%w); spoc starts HAProxy in front of a process fleet's replicas: install it with %s, or set fleet.haproxy to its path", binary, err, InstallHint)
	}
	return path, nil
}

// Check runs "haproxy -c -f file": HAProxy's own validation of the
// configuration, which names the line it refuses.
func Check(ctx context.Context, binary, file string) error {
	out, err := exec.CommandContext(ctx, binary, "-c", "-f", file).CombinedOutput()
	if err != nil {
		return fmt.Errorf("haproxy -c -f %s: %w: %s", file, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Command is the argv that runs HAProxy on file in the foreground, logging
// to stderr, until it is signalled (SIGTERM stops it at once; SIGUSR1
// lets streams in flight finish).
func Command(binary, file string) []string {
	return []string{binary, "-f", file, "-db"}
}
