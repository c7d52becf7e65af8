module github.com/toolcanon/toolcanon/audit/pgsink

go 1.26.0

require (
	github.com/jackc/pgx/v5 v5.13.0
	github.com/toolcanon/toolcanon v0.0.0-00010101000000-000000000000
	github.com/toolcanon/toolcanon/audit v0.0.0-00010101000000-000000000000
	github.com/toolcanon/toolcanon/internal/pgtest v0.0.0-00010101000000-000000000000
	golang.org/x/mod v0.43.0
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)
