module github.com/toolcanon/toolcanon/audit

go 1.26.0

require (
	github.com/toolcanon/toolcanon v0.0.0-00010101000000-000000000000
	golang.org/x/mod v0.43.0
)

require (
	github.com/redis/rueidis v1.0.80 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
