package redact_test

import (
	"fmt"
	"github.com/toolcanon/toolcanon/canonical"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/projectors/internal/projtest"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

// Every example of REDACTION.md, with the exact expected output.
func TestRedactionExamples(t *testing.T) {
	cases := map[string]string{
		"AKIAIOSFODNN7EXAMPLE": "<SECRET>",
		"aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY":               "aws_secret_access_key=<SECRET>",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJl":                        "<SECRET>",
		"Authorization: Bearer abc123.def456-EXAMPLE":                                  "Authorization: Bearer <SECRET>",
		"Authorization: Basic dXNlcjpwYXNz":                                            "Authorization: Basic <SECRET>",
		"password=hunter2":                                                             "password=<SECRET>",
		`"api_key": "k-12345EXAMPLE"`:                                                  `"api_key": "<SECRET>"`,
		"DB_PASSWORD='s3cr3t!'":                                                        "DB_PASSWORD='<SECRET>'",
		"postgres://app:S3cret@db:5432/orders":                                         "postgres://<SECRET>@<HOST>:5432/orders",
		"Server=db01;User Id=sa;Password=P@ss;":                                        "Server=<HOST>;User Id=<USER>;Password=<SECRET>;",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----": "<PRIVATE_KEY>",
		"ghp_0123456789abcdefghijABCDEFGHIJ012345":                                     "<SECRET>",
		"glpat-0123456789abcdefABCD":                                                   "<SECRET>",
		"xoxb-123456789012-abcdefABCDEF":                                               "<SECRET>",
		"sk_live_0123456789abcdefABCD":                                                 "<SECRET>",
		"sk-ant-api03-0123456789abcdefABCD":                                            "<SECRET>",
		"npm_0123456789abcdefghijABCDEFGHIJ0123":                                       "<SECRET>",
		"X-Amz-Signature=0123abcd":                                                     "X-Amz-Signature=<SECRET>",
		"Cookie: sessionid=9f8e7d6c5b4a":                                               "Cookie: sessionid=<SECRET>",
		"/10.251.73.220:50010":                                                         "/<IP>",
		"[fe80::1%eth0]:8080":                                                          "<IP>",
		"10.0.0.0/8 and 2001:db8::1":                                                   "<IP> and <IP>",
		"00:1a:2b:3c:4d:5e":                                                            "<MAC>",
		"alice.smith+ops@example.com":                                                  "<EMAIL>",
		"checkout-api-7d9f8b6c5d-x2k4p":                                                "<POD>",
		"ip-10-0-12-34.ec2.internal":                                                   "<HOST>",
		"containerd://" + strings.Repeat("0123456789abcdef", 4):                        "containerd://<CONTAINER>",
		"orders.default.svc.cluster.local":                                             "<HOST>",
		"org.apache.hadoop.DataNode":                                                   "org.apache.hadoop.DataNode",
		"sshd[24200]: pid=1234 (pid: 5678)":                                            "sshd[<PID>]: pid=<PID> (pid: <PID>)",
		"WHERE email = 'alice@example.com' AND id = 42 OR x IN (1, 2, 3)":              "WHERE email = <STR> AND id = <NUM> OR x IN (<NUM>, <NUM>, <NUM>)",
		"Failed\n\tat com.example.Svc.place(Svc.java:42)\n\tat com.example.Main.main(Main.java:7)": "Failed <STACK>",
		"panic: boom\n\ngoroutine 1 [running]:\nmain.main()":                                       "panic: boom <STACK>",
		"Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\nValueError: x":  "Traceback (most recent call last): <STACK> ValueError: x",
		"user=alice":                         "user=<USER>",
		"/home/alice/.ssh":                   "/home/<USER>/.ssh",
		"4111 1111 1111 1111":                "<CARD>",
		"arn:aws:iam::123456789012:role/app": "arn:aws:iam::<ACCOUNT>:role/app",
		"Started DispatcherServlet in 3.2 seconds (JVM running for 4.1)": "Started DispatcherServlet in 3.2 seconds (JVM running for 4.1)",
	}
	for in, want := range cases {
		if got := redact.String(in); got != want {
			t.Errorf("%q:\n got  %q\n want %q", in, got, want)
		}
	}
}

func TestAppendRedactedAppends(t *testing.T) {
	dst := []byte("prefix:")
	out := redact.AppendRedacted(dst, []byte("ip 10.1.2.3"))
	if string(out) != "prefix:ip <IP>" {
		t.Fatalf("got %q", out)
	}
	r := redact.New()
	msg := []byte("token=abc123XYZ from 10.1.2.3")
	before := string(msg)
	_ = r.Append(nil, msg)
	if string(msg) != before {
		t.Fatal("input modified")
	}
}

// Secrets planted in fuzzed context, each between spaces so that the
// surrounding bytes cannot glue it into another word.
var fuzzSecrets = []string{
	"AKIAIOSFODNN7EXAMPLE", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJl",
	"ghp_0123456789abcdefghijABCDEFGHIJ012345", "10.20.30.40", "bob.jones@example.com",
	"4111 1111 1111 1111", "00:1a:2b:3c:4d:5e", "2001:db8:85a3::8a2e:370:7334",
	// Passwords by their composition, whatever stands around them.
	"Harbor?Oatmeal48", "superman123", "C0pp3r.Kettle9",
}

func FuzzRedact(f *testing.F) {
	f.Add([]byte("user=alice password=x"), []byte(" done"), uint8(0))
	f.Add([]byte("SELECT * FROM t WHERE a = '"), []byte("'"), uint8(3))
	f.Add([]byte("postgres://u:p@h/"), []byte("\n\tat x.Y(Z.java:1)"), uint8(5))
	f.Fuzz(func(t *testing.T, prefix, suffix []byte, k uint8) {
		secret := fuzzSecrets[int(k)%len(fuzzSecrets)]
		msg := make([]byte, 0, len(prefix)+len(secret)+len(suffix)+2)
		msg = append(msg, prefix...)
		msg = append(msg, ' ')
		msg = append(msg, secret...)
		msg = append(msg, ' ')
		msg = append(msg, suffix...)
		out := redact.AppendRedacted(nil, msg)
		if strings.Contains(string(out), secret) {
			t.Fatalf("secret %q survives:\n in:  %q\n out: %q", secret, msg, out)
		}
		// Arbitrary bytes alone must not panic and stay bounded.
		out = redact.AppendRedacted(nil, prefix)
		if len(out) > 16*len(prefix)+16 {
			t.Fatalf("output grew from %d to %d bytes", len(prefix), len(out))
		}
	})
}

func BenchmarkRedact(b *testing.B) {
	lines := [][]byte{
		[]byte("Receiving block blk_-1608999687919862906 src: /10.250.19.102:54106 dest: /10.250.19.102:50010"),
		[]byte("payment timeout after 3000ms for order 81723 on checkout-api"),
		[]byte("login failed password=hunter2 for user=alice@example.com from 10.0.4.17"),
		[]byte("GET /api/v1/orders/123 took 35ms status=200 bytes=1234"),
	}
	r := redact.New()
	var buf []byte
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			buf = r.Append(buf[:0], l)
		}
	}
}

func ExampleAppendRedacted() {
	msg := []byte(`login failed password=hunter2 for "alice@example.com" from 10.0.4.17:5432`)
	fmt.Println(string(redact.AppendRedacted(nil, msg)))
	// Output: login failed password=<SECRET> for "<EMAIL>" from <IP>
}

// Hostile repetitions that once took seconds to minutes on 256 KiB cost
// the same per byte at 64 KiB and at 1 MiB.
func TestRedactLinearTime(t *testing.T) {
	var cases []projtest.Hostile
	for _, unit := range []string{"a=", "1.1.1.", "x@", "1111 ", "::", "a.b.", "ghp_", "'", "user ", "-----BEGIN ",
		"\n\tat ", "[1]", "eyJ.", "%", "://a@", "a-b-", "0a:", `\"k\": `, "1:2:", "[::1]:", "pid=", "tid ", "user=1="} {
		cases = append(cases, projtest.Hostile{Name: fmt.Sprintf("%q", unit), Messages: func(size int) [][]byte {
			return [][]byte{[]byte(strings.Repeat(unit, size/len(unit)))}
		}})
	}
	projtest.CheckLinear(t, "redact", cases, nil, redactAll(redact.New()))
}

// A secret's value runs until whitespace or the next assignment: a comma,
// semicolon or ampersand inside it must not leave its tail behind.
func TestSecretValuesAreRedactedWhole(t *testing.T) {
	cases := []struct{ in, secret, keep string }{
		{"password=ab,cd;ef&gh done", "cd;ef&gh", "done"},
		{"login ok password=Tr0ub4dor&3x retry", "&3x", "retry"},
		{"GET /cb?code=1&token=abc,def&state=xyz", "def", "state=xyz"},
		{"Server=db01;Password=P@ss;w0rd;Database=orders", "w0rd", "Database=orders"},
		{"secret=one,two, next=1", "two", "next=1"},
		{"mysql --user=app --password s3cr3t-Val --host db", "s3cr3t-Val", "--host"},
		{"deploy --api-key AbC123xyz --region eu-west-1", "AbC123xyz", "eu-west-1"},
		{"vault login --token=hvs.CAESIabc --method=token", "hvs.CAESIabc", "--method"},
		{"client --token-file /etc/tok --verbose", "", "/etc/tok"},
		{"cmd --password --other", "", "--other"},
	}
	for _, c := range cases {
		got := redact.String(c.in)
		if c.secret != "" && strings.Contains(got, c.secret) {
			t.Errorf("%q -> %q: leaks %q", c.in, got, c.secret)
		}
		if !strings.Contains(got, c.keep) {
			t.Errorf("%q -> %q: lost %q", c.in, got, c.keep)
		}
	}
}

func TestFieldKind(t *testing.T) {
	for key, want := range map[string]canonical.Kind{
		"password": canonical.KindSecret, "DB_PASSWORD": canonical.KindSecret, "api_key": canonical.KindSecret, "Authorization": canonical.KindSecret,
		"set-cookie": canonical.KindSecret, "aws_secret_access_key": canonical.KindSecret, "admin_password": canonical.KindSecret,
		"username": canonical.KindUser, "pid": canonical.KindPID, "hostname": canonical.KindHost, "pod_name": canonical.KindPod,
		"container_id": canonical.KindContainer, "account_id": canonical.KindAccount,
		"title": "", "max_tokens": "", "token_count": "", "excerpt": "", "": "", "min_password_length": "",
	} {
		if got := redact.FieldKind([]byte(key)); got != want {
			t.Errorf("FieldKind(%q) = %q, want %q", key, got, want)
		}
	}
}

// counter is a Masker that gives each distinct value the next handle, as
// a run's Masker gives each value one.
type counter map[string]string

func (c counter) AppendMask(dst []byte, kind canonical.Kind, value []byte) []byte {
	id, ok := c[string(value)]
	if !ok {
		id = fmt.Sprintf("h%07d", len(c)+1)
		c[string(value)] = id
	}
	return canonical.AppendHandle(dst, kind, id)
}

func ExampleAppendMasked() {
	msg := []byte("login failed password=hunter2 for job 9f8e7d6c5b4a39281706f5e4d3c2b1a0; retried with password=hunter2")
	fmt.Println(string(redact.AppendMasked(nil, msg, counter{})))
	// Output: login failed password=<SECRET:h0000001> for job <ID:h0000002>; retried with password=<SECRET:h0000001>
}

// A handle passes unchanged, and proves nothing about what stands next to
// it: a secret glued to it is still masked.
func TestHandlesPassButProveNothing(t *testing.T) {
	for in, want := range map[string]string{
		"token <SECRET:AbCd_-12> reused":                        "token <SECRET:AbCd_-12> reused",
		"<ID:zZ09-_aB>ghp_0123456789abcdefghijABCDEFGHIJ012345": "<ID:zZ09-_aB><SECRET>",
		"password=<SECRET:AbCd_-12>hunter2x":                    "password=<SECRET:AbCd_-12><SECRET>",
		"<ID:short> 9f8e7d6c5b4a39281706f5e4d3c2b1a0":           "<ID:short> <ID>",
	} {
		if got := redact.String(in); got != want {
			t.Errorf("%q:\n got  %q\n want %q", in, got, want)
		}
	}
}

// A text cut right after a key and the start of its value, as a tool's
// output cut at a limit is, is redacted without a panic: "phone": " at
// the end of a text read the byte after the text.
func TestTextCutAfterAKey(t *testing.T) {
	keys := append(redact.Vocabulary()["keys"], "phone", "phoneNumber", "mobile", "password", "user")
	for _, k := range keys {
		for _, form := range []string{`%s: "`, `{"%s":"`, `%s="`, `%s=`, `%s:`, `%s: `, `"%s": '`, `-d '{"%s":"`} {
			msg := fmt.Sprintf(form, k)
			func() {
				defer func() {
					if e := recover(); e != nil {
						t.Errorf("%q: %v", msg, e)
					}
				}()
				redact.String(msg)
			}()
		}
	}
}
