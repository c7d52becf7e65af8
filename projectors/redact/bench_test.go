package redact_test

import (
	"testing"

	"github.com/toolcanon/toolcanon/projectors/redact"
)

// benchLogs are realistic log messages: the eight shapes of the projection
// benchmark's generated responses first, then lines of common services.
// Most hold nothing to redact, as most log lines do.
var benchLogs = []string{
	"payment timeout after 3417ms for order 84211",
	"GET /api/v1/orders/52817 took 412ms status=200",
	"login failed password=pw481516X! for user=alice from 10.17.203.4",
	"connection to 10.88.12.201:5432 refused after 3 retries",
	"cache miss for session 9f2c4e1ab7d03865 on shard 41",
	"Receiving block blk_-4711238567390192833 src: /10.250.17.42:45121 dest: /10.250.17.42:50010",
	"slow query SELECT * FROM orders WHERE customer_id = 481516 took 5120ms",
	"user \"bob\" <bob@example.com> retried \u00e9tape 17\ttwice",
	"Accepted publickey for deploy from 192.168.7.21 port 52114 ssh2: RSA SHA256:3f9aQ1bXkz0pLm7",
	"Failed password for invalid user admin from 203.0.113.54 port 40022 ssh2",
	"pam_unix(sshd:session): session opened for user root by (uid=0)",
	"Started Session 412 of user postgres.",
	"kubelet: Pod checkout-api-7d9f8b6c5d-x2k4p in namespace shop was OOMKilled",
	"Successfully assigned shop/cart-5f6d8c9b7-qwz8r to gke-prod-pool-1-3c2a9e1f-k8x2",
	"upstream timed out (110: Connection timed out) while reading response header from upstream, client: 172.16.4.9",
	"worker 3 finished job 8812 in 1.42s",
	"HTTP/1.1 502 Bad Gateway served by edge-03 in 88ms",
	"Retrying request to https://api.internal.example.com/v2/items?page=3 (attempt 2/5)",
	"db connection pool exhausted: active=50 idle=0 waiting=12",
	"INFO  [main] o.s.b.w.embedded.tomcat.TomcatWebServer: Tomcat started on port(s): 8080 (http)",
	"java.lang.IllegalStateException: cart is empty at com.shop.cart.CartService.checkout(CartService.java:214)",
	"level=warn ts=2026-03-01T09:12:44.120Z caller=scrape.go:1297 msg=\"append failed\" err=\"out of order sample\"",
	"Authorization header rejected: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlMTIz",
	"disk usage on /var/lib/docker at 91% (threshold 90%)",
	"Deleted 1204 expired sessions in 35 ms",
	"redis: MOVED 3999 10.0.3.17:6379",
	"scheduled backup completed: 14.2 GiB written to s3://backups/nightly/2026-03-01",
	"card 4111 1111 1111 1111 declined by issuer",
}

// BenchmarkRedactLogs redacts a varied set of realistic log messages.
func BenchmarkRedactLogs(b *testing.B) { benchmarkLines(b, benchLogs) }

// BenchmarkRedactGeneratedLogs redacts the eight shapes of message that the
// projection benchmark generates, alone.
func BenchmarkRedactGeneratedLogs(b *testing.B) { benchmarkLines(b, benchLogs[:8]) }

func benchmarkLines(b *testing.B, msgs []string) {
	lines := make([][]byte, len(msgs))
	n := 0
	for i, l := range msgs {
		lines[i] = []byte(l)
		n += len(l)
	}
	r := redact.New()
	var buf []byte
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			buf = r.Append(buf[:0], l)
		}
	}
}
