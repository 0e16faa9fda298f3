package haproxy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

func TestRenderRefusesWhatSpocMustNotWrite(t *testing.T) {
	ok := Config{Bind: "127.0.0.1:9000", Balance: RoundRobin, Servers: []string{"127.0.0.1:9001"}}
	for name, tc := range map[string]struct {
		edit func(*Config)
		want string
	}{
		"bind beyond loopback":   {func(c *Config) { c.Bind = "0.0.0.0:9000" }, "not a loopback address"},
		"server beyond loopback": {func(c *Config) { c.Servers = append(c.Servers, "10.0.0.1:80") }, "server r2"},
		"unknown balance":        {func(c *Config) { c.Balance = "random" }, `unknown balance "random"`},
		"bad header":             {func(c *Config) { c.Balance, c.Header = Hash, "X Session" }, "not an HTTP header name"},
		"bad factor":             {func(c *Config) { c.Balance, c.Header, c.HashBalanceFactor = Hash, "X-Session-Id", 90 }, "above 100"},
		"no servers":             {func(c *Config) { c.Servers = nil }, "no servers"},
	} {
		c := ok
		tc.edit(&c)
		if _, err := c.Render(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Render error %v, want %q", name, err, tc.want)
		}
	}
}

// What Render writes is what HAProxy accepts, for every balance.
func TestRenderedConfigPassesHAProxysCheck(t *testing.T) {
	bin := testtool.Find(t, "apt-get install -y haproxy", "haproxy")
	for _, c := range []Config{
		{Bind: "127.0.0.1:9000", Balance: RoundRobin, Servers: []string{"127.0.0.1:9001", "127.0.0.1:9002"}},
		{Bind: "127.0.0.1:9000", Balance: LeastConn, Servers: []string{"127.0.0.1:9001"}},
		{Bind: "[::1]:9000", Balance: Hash, Header: "X-Session-Id", HashBalanceFactor: 150, Servers: []string{"127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"}},
	} {
		text, err := c.Render()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"option http-no-delay", "bind " + c.Bind, "server r1 127.0.0.1:9001"} {
			if !strings.Contains(string(text), want) {
				t.Errorf("config lacks %q:\n%s", want, text)
			}
		}
		file := filepath.Join(t.TempDir(), "haproxy.cfg")
		if err := os.WriteFile(file, text, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Check(context.Background(), bin, file); err != nil {
			t.Errorf("%s balance: %v\n%s", c.Balance, err, text)
		}
	}
}

func TestFindSaysHowToInstall(t *testing.T) {
	if _, err := Find("/nonexistent/haproxy"); err == nil || !strings.Contains(err.Error(), "apt-get install haproxy") {
		t.Errorf("Find = %v", err)
	}
}
