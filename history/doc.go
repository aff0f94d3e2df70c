// Package history keeps a nightly results history in a real database and finds the nights on
// which performance changed.
//
//   - Store (store.go, migrations.go): an SQLite file by default (modernc.org/sqlite, pure Go, so
//     the binary stays static) or PostgreSQL for a team (pgx through database/sql, so one code
//     path serves both). The schema is versioned; migrations are applied on Open, and a store
//     written by a newer llmbench is refused rather than misread.
//   - Add (add.go): records results directories: every scalar metric of summary.json (see
//     Scalars), the run's facts (llmbench version, revision, trace fingerprint, model, backend,
//     engine flags, server version, machine) and tags. A run is identified by the content hash
//     of its results, so adding the same directory twice records it once (backfill is safe).
//   - Series and change points (series.go, edivisive.go, check.go): one series per metric and
//     configuration (same trace fingerprint and tags) in run order, and change points found by
//     E-Divisive means (Matteson & James; the method Apache Otava and MongoDB use) with a
//     permutation significance test, a "weak" level, a minimum magnitude and, per change, the
//     configuration differences between the runs on either side.
//   - Trend report (report.go): the series as a self-contained HTML page rendered by package
//     reports, with the change points marked and every number in a table.
//
// The package reads results directories and talks to the database named by the caller; it
// never reads the environment or the clock itself (Options carry Now and the default path), and
// it never computes a per-run metric: those come from summary.json, written by package metrics.
package history
