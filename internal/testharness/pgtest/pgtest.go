// Package pgtest starts a throwaway PostgreSQL server for tests that need
// the real one (a study shared by several workers): SPOC_TEST_POSTGRES_URL
// when set, otherwise initdb into a temporary folder and postgres on a free
// loopback port from the Debian binaries, stopped at the test's cleanup.
// Without the binaries the test is skipped, or fails under CI=true with
// the install command (internal/testharness/testtool).
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

// Install is the command that provides the server binaries.
const Install = "apt-get install -y postgresql"

// URL returns the URL of a PostgreSQL server for t (trust auth, database
// postgres, sslmode disabled).
func URL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("SPOC_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	bin := find()
	if bin == "" {
		testtool.Missing(t, "PostgreSQL server binaries (initdb, postgres)", Install)
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
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
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
		err := ping(url)
		if err == nil {
			return url
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("postgres did not accept connections: %v\n%s", err, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func ping(url string) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// find returns the folder of the newest installed initdb and postgres.
func find() string {
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

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
