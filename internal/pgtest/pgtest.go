// Package pgtest gives tests an empty schema on a real PostgreSQL server, for the history
// store's tests in history/ and cmd/llmbench. It is for tests only.
package pgtest

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// DSNEnv names the PostgreSQL server the tests use (.ci/run starts one and sets it).
const DSNEnv = "LLMBENCH_TEST_POSTGRES_DSN"

// DSN returns the URL of a fresh, empty schema on the server named by $LLMBENCH_TEST_POSTGRES_DSN
// (its search_path set to the schema), dropped when the test ends. Without the variable the
// test is skipped with a message, except under CI=true, where it fails: CI must not skip the
// PostgreSQL tests.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(DSNEnv)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set but CI=true: the PostgreSQL store tests must run in CI (.ci/run starts a server)", DSNEnv)
		}
		t.Skipf("no PostgreSQL server: set %s (e.g. postgres://postgres@127.0.0.1:55432/llmbench_test?sslmode=disable; .ci/run starts one)", DSNEnv)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", DSNEnv, err)
	}
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("open %s: %v", DSNEnv, err)
	}
	defer admin.Close()
	schema := fmt.Sprintf("llmbench_test_%d_%d", time.Now().UnixNano(), rand.Uint32())
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatalf("create a schema on %s (%s): %v", DSNEnv, u.Redacted(), err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("pgx", dsn); err == nil {
			db.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
			db.Close()
		}
	})
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
