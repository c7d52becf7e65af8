module github.com/toolcanon/toolcanon/adapters/openai

go 1.26.0

require (
	github.com/openai/openai-go/v3 v3.100.0
	github.com/tidwall/gjson v1.20.2
	github.com/toolcanon/toolcanon v0.0.0-00010101000000-000000000000
)

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/redis/rueidis v1.0.80 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.3.0 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
