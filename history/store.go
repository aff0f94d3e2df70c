package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	// The two database/sql drivers: PostgreSQL through pgx's stdlib adapter ("pgx") and the
	// pure-Go SQLite ("sqlite").
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

// Dialect is the SQL flavour of a store.
type Dialect string

// The supported dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Store is an open history database.
type Store struct {
	db      *sql.DB
	dialect Dialect
	// where says where the store is, for messages (a path, or a URL without its password).
	where string
}

// DefaultPath is where the SQLite store lives when no --db is given:
// $XDG_DATA_HOME/llmbench/history.db, else ~/.local/share/llmbench/history.db. getenv reads
// the environment.
func DefaultPath(getenv func(string) string) (string, error) {
	if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "llmbench", "history.db"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("history: neither $XDG_DATA_HOME nor $HOME is set; give the store with --db PATH or --db postgres://…")
	}
	return filepath.Join(home, ".local", "share", "llmbench", "history.db"), nil
}

// IsPostgres reports whether dsn names a PostgreSQL server (a postgres:// or postgresql://
// URL) rather than an SQLite file.
func IsPostgres(dsn string) bool {
	l := strings.ToLower(dsn)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// Open opens the store named by dsn (a postgres:// URL, or the path of an SQLite file, created
// with its directory when missing) and applies the schema migrations it lacks.
func Open(ctx context.Context, dsn string) (*Store, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, errors.New("history: empty store name; give --db PATH or --db postgres://…")
	}
	s := &Store{}
	var err error
	if IsPostgres(dsn) {
		s.dialect, s.where = Postgres, redactDSN(dsn)
		s.db, err = sql.Open("pgx", dsn)
		if err != nil {
			return nil, fmt.Errorf("history: open %s: %w", s.where, err)
		}
	} else {
		path := strings.TrimPrefix(dsn, "sqlite:")
		s.dialect, s.where = SQLite, path
		if dir := filepath.Dir(path); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("history: create the store's directory: %w", err)
			}
		}
		s.db, err = sql.Open("sqlite", path)
		if err != nil {
			return nil, fmt.Errorf("history: open %s: %w", path, err)
		}
		// One connection: SQLite serializes writers anyway, and the pragmas below are
		// per connection.
		s.db.SetMaxOpenConns(1)
		for _, p := range []string{"PRAGMA busy_timeout = 10000", "PRAGMA foreign_keys = ON", "PRAGMA journal_mode = WAL"} {
			if err := execRetryBusy(ctx, s.db, p, 10*time.Second); err != nil {
				s.db.Close()
				return nil, fmt.Errorf("history: %s is not a usable SQLite database (%s): %w", path, p, err)
			}
		}
	}
	if err := s.db.PingContext(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("history: connect to %s: %w", s.where, err)
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Dialect is the store's SQL flavour.
func (s *Store) Dialect() Dialect { return s.dialect }

// Where names the store for messages (a path, or the URL with its password hidden).
func (s *Store) Where() string { return s.where }

// q rewrites a query written with ? placeholders into the store's dialect ($1, $2, … for
// PostgreSQL). The queries of this package hold no literal question marks.
func (s *Store) q(query string) string {
	if s.dialect != Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// redactDSN hides the password of a postgres:// URL (in its userinfo or a password= query
// value).
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(a PostgreSQL URL that does not parse)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "***")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "***")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// execRetryBusy runs stmt, retrying for up to limit while SQLite answers SQLITE_BUSY.
// Switching a new database to WAL takes an exclusive lock for which SQLite does not wait on
// busy_timeout, so two jobs opening a new store at once would otherwise fail one of them.
func execRetryBusy(ctx context.Context, db *sql.DB, stmt string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	wait := 5 * time.Millisecond
	for {
		_, err := db.ExecContext(ctx, stmt)
		if err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}
