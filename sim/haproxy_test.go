package sim

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

// Known values of HAProxy's functions, computed by hand from their
// definitions (src/hash.c, tools.h) for short inputs: they pin the
// arithmetic independently of the HAProxy comparison below.
func TestHAProxyHashFunctions(t *testing.T) {
	// sdbm("a") = 97; sdbm("ab") = 98 + 97·(2^6 + 2^16 − 1) = 6363201
	if got := hashSDBM("ab"); got != 98+97*(64+65536-1) {
		t.Errorf("sdbm(ab) = %d", got)
	}
	// djb2("a") = 5381·33 + 97
	if got := hashDJB2("a"); got != 5381*33+97 {
		t.Errorf("djb2(a) = %d", got)
	}
	// crc32 is the IEEE CRC: "123456789" → 0xcbf43926
	if got := hashCRC32("123456789"); got != 0xcbf43926 {
		t.Errorf("crc32 = %#x", got)
	}
	if hashWT6("") != 0xa53c965a^0x5ca6953a {
		t.Error("wt6 of the empty string is not h0^h1")
	}
	if hashWT6("u1") == hashWT6("u2") || fullHash(1) == fullHash(2) {
		t.Error("collisions on tiny inputs")
	}
	if firstHeaderValue(" u7 , u8") != "u7" {
		t.Error("only the first value of a header is hashed")
	}
}

func TestHAProxyRingShape(t *testing.T) {
	r, err := NewHAProxyRing([]HAProxyServer{{}, {Weight: 3}, {ID: 2}}, HAProxyHash{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// ids: the explicit 2 first, then 1 and 3 by declaration order
	if r.ID(0) != 1 || r.ID(1) != 3 || r.ID(2) != 2 {
		t.Errorf("ids %d %d %d, want 1 3 2", r.ID(0), r.ID(1), r.ID(2))
	}
	if len(r.keys) != 16*(1+3+1) {
		t.Errorf("%d points, want 16 per unit of weight", len(r.keys))
	}
	for _, bad := range []struct {
		s []HAProxyServer
		f int
	}{{nil, 0}, {[]HAProxyServer{{ID: 1}, {ID: 1}}, 0}, {[]HAProxyServer{{Weight: 257}}, 0}, {[]HAProxyServer{{}}, 100}} {
		if _, err := NewHAProxyRing(bad.s, HAProxyHash{}, bad.f); err == nil {
			t.Errorf("%+v factor %d: no error", bad.s, bad.f)
		}
	}
	if _, err := NewHAProxyRing([]HAProxyServer{{}}, HAProxyHash{Function: "md5"}, 0); err == nil {
		t.Error("unknown hash function accepted")
	}
}

// haproxyCase is one backend of the comparison.
type haproxyCase struct {
	name    string
	hash    HAProxyHash
	servers []HAProxyServer
}

func (c haproxyCase) ring(t *testing.T) *HAProxyRing {
	r, err := NewHAProxyRing(c.servers, c.hash, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// haproxyFixture is a real HAProxy in front of tiny loopback backends that
// answer with their index.
type haproxyFixture struct {
	url      string
	backends []*httptest.Server
	hold     chan struct{} // closed to release held requests
	once     sync.Once
	arrived  chan int // a held request reached backend i
}

// release lets every held request finish.
func (f *haproxyFixture) release() { f.once.Do(func() { close(f.hold) }) }

// startHAProxy writes a configuration with one backend per case (selected
// by the X-Case header) and, with a factor, one bounded-load backend, runs
// it until the test ends and waits until it accepts connections.
func startHAProxy(t *testing.T, nBackends int, cases []haproxyCase, boundedServers, factor int) *haproxyFixture {
	t.Helper()
	bin := testtool.Find(t, "apt-get install -y haproxy", "haproxy")
	f := &haproxyFixture{hold: make(chan struct{}), arrived: make(chan int, 1024)}
	t.Cleanup(f.release)
	for i := range nBackends {
		i := i
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/hold" {
				f.arrived <- i
				<-f.hold
			}
			fmt.Fprint(w, i)
		}))
		t.Cleanup(srv.Close)
		f.backends = append(f.backends, srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "global\n    maxconn 4096\ndefaults\n    mode http\n    timeout connect 5s\n    timeout client 60s\n    timeout server 60s\n    option http-no-delay\n")
	fmt.Fprintf(&b, "frontend fe\n    bind 127.0.0.1:%d\n    use_backend %%[req.hdr(X-Case)]\n", port)
	server := func(i int, s HAProxyServer) {
		fmt.Fprintf(&b, "    server r%d %s", i+1, f.backends[i].Listener.Addr())
		if s.ID > 0 {
			fmt.Fprintf(&b, " id %d", s.ID)
		}
		if s.Weight > 0 {
			fmt.Fprintf(&b, " weight %d", s.Weight)
		}
		b.WriteString("\n")
	}
	for ci, c := range cases {
		fmt.Fprintf(&b, "backend c%d\n    balance hdr(X-Session-Id)\n    hash-type %s\n", ci, c.hash)
		for i, s := range c.servers {
			server(i, s)
		}
	}
	if boundedServers > 0 {
		fmt.Fprintf(&b, "backend bounded\n    balance hdr(X-Session-Id)\n    hash-type consistent\n    hash-balance-factor %d\n", factor)
		for i := range boundedServers {
			server(i, HAProxyServer{})
		}
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s\n%s", err, out, b.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-f", cfg, "-db")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy output:\n%s", logs.String())
		}
	})
	f.url = fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy does not accept connections: %v\n%s", err, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return f
}

// served asks HAProxy which backend serves a request with this session id.
func (f *haproxyFixture) served(t *testing.T, client *http.Client, backend, session string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.url+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Case", backend)
	req.Header.Set("X-Session-Id", session)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: status %d, %v: %s", backend, session, resp.StatusCode, err, body)
	}
	i, err := strconv.Atoi(string(body))
	if err != nil {
		t.Fatalf("answer %q", body)
	}
	return i
}

// TestHAProxyRingMatchesHAProxy is "agreement is not luck": for a few
// hundred session ids, spoc's ring and a real HAProxy 2.6 pick the same
// server, for every hash function, with weights and explicit ids, for 2 to
// 8 servers.
func TestHAProxyRingMatchesHAProxy(t *testing.T) {
	same := func(n int) []HAProxyServer { return make([]HAProxyServer, n) }
	cases := []haproxyCase{
		{"3 replicas, hash-type consistent", HAProxyHash{}, same(3)},
		{"2 replicas", HAProxyHash{}, same(2)},
		{"4 replicas", HAProxyHash{}, same(4)},
		{"8 replicas", HAProxyHash{}, same(8)},
		{"sdbm without avalanche", HAProxyHash{Function: HashSDBM}, same(3)},
		{"djb2", HAProxyHash{Function: HashDJB2}, same(4)},
		{"djb2 avalanche", HAProxyHash{Function: HashDJB2, Avalanche: true}, same(4)},
		{"wt6", HAProxyHash{Function: HashWT6}, same(4)},
		{"crc32", HAProxyHash{Function: HashCRC32}, same(4)},
		{"crc32 avalanche", HAProxyHash{Function: HashCRC32, Avalanche: true}, same(3)},
		{"weights 1 2 3", HAProxyHash{}, []HAProxyServer{{Weight: 1}, {Weight: 2}, {Weight: 3}}},
		{"weights 2 2 4 2", HAProxyHash{}, []HAProxyServer{{Weight: 2}, {Weight: 2}, {Weight: 4}, {Weight: 2}}},
		{"explicit ids", HAProxyHash{}, []HAProxyServer{{ID: 10}, {ID: 3}, {ID: 7}}},
		{"mixed ids", HAProxyHash{}, []HAProxyServer{{}, {ID: 1}, {}, {ID: 5}}},
	}
	f := startHAProxy(t, 8, cases, 0, 0)
	client := &http.Client{Timeout: 10 * time.Second}
	var keys []string
	for u := range 200 {
		keys = append(keys, SessionKey(SessionKeyUser, u, 0))
	}
	for u := range 100 {
		keys = append(keys, SessionKey(SessionKeySession, u, u%7))
	}
	for ci, c := range cases {
		ring := c.ring(t)
		counts := make([]int, len(c.servers))
		mismatches := 0
		for _, k := range keys {
			want := f.served(t, client, fmt.Sprintf("c%d", ci), k)
			got := ring.Pick(k, nil)
			counts[want]++
			if got != want {
				if mismatches++; mismatches <= 5 {
					t.Errorf("%s: session %q: ring picks server %d, HAProxy %d", c.name, k, got, want)
				}
			}
		}
		if mismatches > 0 {
			t.Errorf("%s: %d of %d sessions differ", c.name, mismatches, len(keys))
		}
		t.Logf("%s: %d sessions agree; HAProxy's spread %v", c.name, len(keys)-mismatches, counts)
	}
}

// TestHAProxyBoundedLoadMatchesHAProxy holds requests open so that servers
// fill up, and checks that with hash-balance-factor the ring skips full
// servers exactly as HAProxy does.
func TestHAProxyBoundedLoadMatchesHAProxy(t *testing.T) {
	const servers, factor, held = 4, 125, 40
	f := startHAProxy(t, servers, nil, servers, factor)
	ring, err := NewHAProxyRing(make([]HAProxyServer, servers), HAProxyHash{}, factor)
	if err != nil {
		t.Fatal(err)
	}
	served := make([]int, servers)
	var wg sync.WaitGroup
	defer func() {
		f.release()
		wg.Wait()
	}()
	client := &http.Client{Timeout: 30 * time.Second}
	skipped := 0
	for i := range held {
		// a few users send most requests, as hot sessions do
		key := SessionKey(SessionKeyUser, i%5, 0)
		want := ring.Pick(key, served)
		if want != ring.Pick(key, nil) {
			skipped++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodGet, f.url+"/hold", nil)
			req.Header.Set("X-Case", "bounded")
			req.Header.Set("X-Session-Id", key)
			resp, err := client.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		var got int
		select {
		case got = <-f.arrived:
		case <-time.After(10 * time.Second):
			t.Fatalf("request %d never reached a backend", i)
		}
		if got != want {
			t.Fatalf("request %d (session %s, loads %v): ring picks %d, HAProxy %d", i, key, served, want, got)
		}
		served[got]++
	}
	if skipped == 0 {
		t.Error("the balance factor never moved a request: the test does not exercise bounded loads")
	}
	t.Logf("%d held requests agree, %d moved off their ring server by the bound; final loads %v", held, skipped, served)
}
