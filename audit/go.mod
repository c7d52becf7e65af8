module github.com/toolcanon/toolcanon/audit

go 1.26.0

require (
	github.com/toolcanon/toolcanon v0.0.0-00010101000000-000000000000
	golang.org/x/mod v0.43.0
)
