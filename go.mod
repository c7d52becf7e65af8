module github.com/toolcanon/toolcanon

go 1.26.0

require (
	github.com/buger/jsonparser v1.6.1
	github.com/redis/rueidis v1.0.80
	github.com/tidwall/gjson v1.20.2
)

require (
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.3.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
