module github.com/toolcanon/toolcanon/ui

go 1.26.0

require (
	github.com/chromedp/cdproto v0.160.1
	github.com/chromedp/chromedp v0.23.1
	github.com/toolcanon/toolcanon v0.0.0-00010101000000-000000000000
)

require (
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/redis/rueidis v1.0.80 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
