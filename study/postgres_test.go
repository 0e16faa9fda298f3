package study

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/internal/testtool"
	"github.com/spoc-project/spoc/search"
	"github.com/spoc-project/spoc/search/nsga2"
)

// postgresURL returns the URL of a PostgreSQL server for the test:
// SPOC_TEST_POSTGRES_URL when set, otherwise a throwaway server started
// from the Debian postgresql binaries (initdb into a temporary directory,
// trust auth, a free loopback port), stopped at cleanup. Without the
// binaries the test skips, or fails under CI=true.
func postgresURL(t *testing.T) string {
	t.Helper()
	if u := os.Getenv("SPOC_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	bin := findPostgres()
	if bin == "" {
		testtool.Missing(t, "PostgreSQL server binaries (initdb, postgres)", "apt-get install -y postgresql")
	}
	dir, err := os.MkdirTemp("", "spoc-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// PostgreSQL refuses to run as root: run it as the postgres user then.
	var asUser []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root and no postgres user to run the server as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	data := filepath.Join(dir, "data")
	run := func(args ...string) *exec.Cmd {
		all := append(append([]string(nil), asUser...), args...)
		return exec.Command(all[0], all[1:]...)
	}
	if out, err := run(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := freePort(t)
	srv := run(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=50")
	logf, err := os.Create(filepath.Join(t.TempDir(), "postgres.log"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Stdout, srv.Stderr = logf, logf
	if err := srv.Start(); err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	t.Cleanup(func() {
		// pg_ctl reaches the server even when it runs under runuser.
		run(filepath.Join(bin, "pg_ctl"), "stop", "-D", data, "-m", "fast", "-w").Run()
		done := make(chan struct{})
		go func() { srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			srv.Process.Kill()
		}
	})
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		db, err := Open(context.Background(), url)
		if err == nil {
			db.Close()
			return url
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("postgres did not accept connections: %v\n%s", err, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func findPostgres() string {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	for i := len(matches) - 1; i >= 0; i-- {
		dir := filepath.Dir(matches[i])
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p)
		}
	}
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestPostgresFourWorkers: four workers, each with its own connection and
// its own NSGA-II sampler (as on four machines), share one study of 200
// trials after a dead worker left a RUNNING trial behind. The study must
// end with exactly 200 COMPLETE trials, the dead trial FAIL and re-run, no
// trial number duplicated, and consistent generations.
func TestPostgresFourWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	t0 := time.Now()
	url := postgresURL(t)
	t.Logf("postgres ready in %v", time.Since(t0))
	ctx := context.Background()
	cfg := testConfig("shared")
	cfg.Sampler = "nsga2"
	const pop, budget, workers = 10, 200, 4

	setup, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close()
	st, err := setup.CreateOrLoad(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	dead := &worker{opt: fastOptions(st, budget), id: "dead", log: discard()}
	dead.opt.Space = st.Space
	if c, err := dead.claimTrial(ctx); err != nil || c.trial == nil {
		t.Fatalf("dead worker claim: %v", err)
	}

	var wg sync.WaitGroup
	results := make([]Result, workers)
	errs := make([]error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := Open(ctx, url)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			wst, err := db.CreateOrLoad(ctx, cfg)
			if err != nil {
				errs[i] = err
				return
			}
			sampler, err := nsga2.New(nsga2.Options{PopulationSize: pop, Directions: twoMin, Seed: cfg.Seed})
			if err != nil {
				errs[i] = err
				return
			}
			results[i], errs[i] = Optimize(ctx, Options{
				Study: wst, Sampler: sampler, Trials: budget, Worker: fmt.Sprintf("worker-%d", i),
				HeartbeatInterval: 100 * time.Millisecond, StaleAfter: 2 * time.Second, PollInterval: 50 * time.Millisecond,
				Objective: func(ctx context.Context, tc *search.TrialContext) ([]float64, []float64, error) {
					time.Sleep(2 * time.Millisecond)
					return objective(ctx, tc)
				},
			})
		}()
	}
	wg.Wait()
	t.Logf("%d trials by %d workers in %v", budget, workers, time.Since(t0))
	ran := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
		ran += results[i].Complete
		t.Logf("worker %d: %+v", i, results[i])
	}
	if ran != budget {
		t.Fatalf("workers completed %d trials, want %d", ran, budget)
	}
	trials, err := st.Trials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if trials[0].State != search.StateFail || trials[0].SystemAttrs["requeued_as"] == nil {
		t.Fatalf("dead worker's trial: %+v", trials[0])
	}
	checkExactlyComplete(t, trials[1:], budget, false)
	checkGenerations(t, trials[1:], pop)
	gens := map[int]int{}
	for _, tr := range trials[1:] {
		gens[tr.Generation]++
	}
	t.Logf("trials per generation: %v", gens)
}
