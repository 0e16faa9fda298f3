package study

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite"
)

//go:embed migrations
var migrations embed.FS

// dialect is the SQL flavour of the open database.
type dialect int

const (
	sqliteDialect dialect = iota
	postgresDialect
)

func (d dialect) String() string {
	if d == postgresDialect {
		return "postgres"
	}
	return "sqlite"
}

// DB is an open study database. It is safe for concurrent use.
type DB struct {
	sql     *sql.DB
	dialect dialect
	url     string
}

// Open opens (creating if needed) the study database at rawURL and applies
// pending schema migrations. Accepted forms:
//
//	sqlite:PATH              SQLite file (created if missing)
//	sqlite:///abs/path.db    the same with a URL path
//	PATH                     a plain path is a SQLite file
//	postgres://user:pw@host:port/db?sslmode=disable   PostgreSQL (also postgresql://)
func Open(ctx context.Context, rawURL string) (*DB, error) {
	d, dsn, err := parseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open study database %q: %w", redact(rawURL), err)
	}
	driver := "sqlite"
	if d == postgresDialect {
		driver = "pgx"
	}
	sdb, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("open study database %q: %w", redact(rawURL), err)
	}
	if d == sqliteDialect {
		// Writers serialise on SQLite's lock anyway; a small pool keeps
		// readers concurrent under WAL without piling up busy waits.
		sdb.SetMaxOpenConns(4)
	}
	db := &DB{sql: sdb, dialect: d, url: rawURL}
	if err := sdb.PingContext(ctx); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open study database %q: %w", redact(rawURL), err)
	}
	if err := db.migrate(ctx); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("open study database %q: %w", redact(rawURL), err)
	}
	return db, nil
}

// Close closes the database.
func (db *DB) Close() error { return db.sql.Close() }

// Dialect returns "sqlite" or "postgres".
func (db *DB) Dialect() string { return db.dialect.String() }

func parseURL(raw string) (dialect, string, error) {
	switch {
	case raw == "":
		return 0, "", fmt.Errorf("empty storage URL")
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		return postgresDialect, raw, nil
	}
	p := raw
	if rest, ok := strings.CutPrefix(raw, "sqlite:"); ok {
		p = rest
		if strings.HasPrefix(p, "//") {
			u, err := url.Parse(raw)
			if err != nil {
				return 0, "", err
			}
			p = u.Path
		}
	} else if i := strings.Index(raw, "://"); i > 0 {
		return 0, "", fmt.Errorf("unsupported storage scheme %q (want sqlite: or postgres://)", raw[:i])
	}
	if p == "" {
		return 0, "", fmt.Errorf("sqlite URL has no path")
	}
	if strings.ContainsAny(p, "?#") {
		return 0, "", fmt.Errorf("sqlite path %q may not contain '?' or '#'", p)
	}
	// _txlock=immediate: every write transaction takes the write lock at
	// BEGIN, so read-then-write claims cannot deadlock on lock upgrade.
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(30000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	return sqliteDialect, "file:" + p + "?" + q.Encode(), nil
}

// redact hides a password in a PostgreSQL URL for error messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// rebind turns ? placeholders into $1, $2, … for PostgreSQL.
func (db *DB) rebind(q string) string {
	if db.dialect != postgresDialect {
		return q
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// migrate applies the embedded migrations not yet recorded in
// schema_migrations, each in its own transaction. On PostgreSQL an advisory
// lock keeps concurrently starting workers from racing.
func (db *DB) migrate(ctx context.Context) error {
	dir := "migrations/" + db.dialect.String()
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return fmt.Errorf("read embedded migrations: %w", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sql") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if db.dialect == postgresDialect {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7349120011)`); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("migrate: %w", err)
		}
		applied[v] = true
	}
	rows.Close()
	for _, name := range names {
		v, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migration %s: name must start with a version number", name)
		}
		if applied[v] {
			continue
		}
		body, err := migrations.ReadFile(path.Join(dir, name))
		if err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
		for _, stmt := range splitStatements(string(body)) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migration %s: %w", name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, db.rebind(`INSERT INTO schema_migrations (version, name) VALUES (?, ?)`), v, name); err != nil {
			return fmt.Errorf("migration %s: record: %w", name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}

// splitStatements splits a migration file on semicolons at line ends,
// dropping comment lines. Migrations are plain DDL without procedural code.
func splitStatements(body string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(body, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// DefaultURL is the storage used when none is configured: a SQLite file in
// the working directory.
const DefaultURL = "sqlite:spoc-studies.db"
