package redact_test

import (
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/projectors/redact"
)

// One case per class of the second round, with the exact output: the
// secret in its credential-bearing position is replaced, the text around
// it, JSON punctuation included, stays.
func TestRedactionRound2Classes(t *testing.T) {
	cases := []struct{ class, in, want string }{
		{"netrc", "machine git.corp.internal login deploy password Zq9v!k2LmP", "machine <HOST> login <USER> password <SECRET>"},
		{"pgpass", "pg-main:5432:orders:reporter:Zq9v!k2LmP", "pg-main:5432:orders:<USER>:<SECRET>"},
		{"my.cnf", "[client] user=backup password=\"Zq9v!k2LmP\"", "[client] user=<USER> password=\"<SECRET>\""},
		{"npmrc", "//npm.example.com/:_authToken=Zq9vk2LmPx7Rw4Tn8Yb3", "//npm.example.com/:_authToken=<SECRET>"},
		{"pypirc", "[pypi] username = __token__ password = Zq9v!k2LmP", "[pypi] username = <USER> password = <SECRET>"},
		{"git-credentials", "https://builder:Zq9v!k2LmP@git.internal.example", "https://<SECRET>@<HOST>"},
		{"credentials INI", "[default] aws_access_key_id = ASIAQWERTYUIOP234567", "[default] aws_access_key_id = <SECRET>"},
		{"jdbc oracle", "jdbc:oracle:thin:scott/Zq9v!k2LmP@//ora:1521/ORCL", "jdbc:oracle:thin:<USER>/<SECRET>@//ora:1521/ORCL"},
		{"sqlplus", "sqlplus scott/Tiger2026x@PRODPDB", "sqlplus <USER>/<SECRET>@PRODPDB"},
		{"odbc", "DRIVER={ODBC Driver 18};SERVER=sql01;UID=etl;PWD=Zq9v!k2LmP;", "DRIVER={ODBC Driver 18};SERVER=<HOST>;UID=<USER>;PWD=<SECRET>;"},
		{"go dsn", `dsn "app:Zq9v!k2LmP@tcp(mysql:3306)/shop"`, `dsn "<SECRET>@tcp(mysql:3306)/shop"`},
		{"aws prefixes", "AGPAQWERTYUIOP234567 AIDAQWERTYUIOP234567 AROAQWERTYUIOP234567 ANPAQWERTYUIOP234567",
			"<SECRET> <SECRET> <SECRET> <SECRET>"},
		{"aws in a token", "read cache/ASIAQWERTYUIOP234567.json", "read cache/<SECRET>.json"},
		{"cookie json", `{"cookies":[{"name":"_ga","value":"GA1.2.3"},{"name":"sid","value":"k2LmPx7Rw4"}]}`,
			`{"cookies":[{"name":"_ga","value":"<SECRET>"},{"name":"sid","value":"<SECRET>"}]}`},
		{"set-cookie json", `{"set-cookie":["sid=k2LmPx7Rw4; Path=/"]}`, `{"set-cookie":["sid=<SECRET>; Path=/"]}`},
		{"name/value env", `{"name":"DB_PASSWORD","value":"Zq9v!k2LmP"},{"name":"LOG_LEVEL","value":"info"}`,
			`{"name":"DB_PASSWORD","value":"<SECRET>"},{"name":"LOG_LEVEL","value":"info"}`},
		{"kernel", "Out of memory: Killed process 48813 (java) total-vm:81234kB", "Out of memory: Killed process <PID> (java) total-vm:81234kB"},
		{"systemd", "nginx.service: Killing process 4411 (nginx) with signal SIGKILL.", "nginx.service: Killing process <PID> (nginx) with signal SIGKILL."},
		{"azure path", "/subscriptions/3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b/resourceGroups/rg", "/subscriptions/<ACCOUNT>/resourceGroups/rg"},
		{"tenant", `"tenantId": "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b"`, `"tenantId": "<ACCOUNT>"`},
		{"aws account", "aws account 123456789012 assumed", "aws account <ACCOUNT> assumed"},
		{"gcp project", "gcloud config set project shop-prod-284913", "gcloud config set project <ACCOUNT>"},
		{"directive", "requirepass Zq9vk2LmPx", "requirepass <SECRET>"},
		{"keyword", "ldap: BINDPW Zq9v%k2LmP", "ldap: BINDPW <SECRET>"},
		{"sql", "CREATE USER 'app'@'%' IDENTIFIED BY 'Zq9v!k2LmP';", "CREATE USER 'app'@'%' IDENTIFIED BY '<SECRET>';"},
		{"sql password", "ALTER ROLE app WITH LOGIN PASSWORD 'Zq9v!k2LmP'", "ALTER ROLE app WITH LOGIN PASSWORD '<SECRET>'"},
		{"xml", "<password>Zq9v!k2LmP</password>", "<password><SECRET></password>"},
		{"flag -P", "sqlcmd -S sql01 -U sa -P Zq9v!k2LmP", "sqlcmd -S sql01 -U sa -P <SECRET>"},
		{"bearer sentence", "Authorization: Bearer Zq9vk2LmPx7Rw4Tn was rejected by the upstream", "Authorization: Bearer <SECRET> was rejected by the upstream"},
		// Kept: references, and digests, fingerprints and public keys in the
		// positions that prove them public; ids are masked.
		{"reference", "password=${DB_PASSWORD} from the environment", "password=${DB_PASSWORD} from the environment"},
		{"getenv", `token := os.Getenv("GITHUB_TOKEN")`, `token := os.Getenv("GITHUB_TOKEN")`},
		{"helm", "password: {{ .Values.db.password }}", "password: {{ .Values.db.password }}"},
		{"python", "password=%(password)s", "password=%(password)s"},
		{"shell", "Authorization: Bearer $TOKEN", "Authorization: Bearer $TOKEN"},
		{"digest", "sha256:0d5c2ab4f3e8b1a9c7d6e5f40312a1b2c3d4e5f60718293a4b5c6d7e8f901234", "sha256:0d5c2ab4f3e8b1a9c7d6e5f40312a1b2c3d4e5f60718293a4b5c6d7e8f901234"},
		{"commit", "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a", "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a"},
		{"fingerprint", "SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8", "SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8"},
		{"integrity", "sha512-pKvURIxJVi2CgRXROh/M6pJ/UrTVRZKX+LQ+QtqJI4vBNibkPcs43bCCSIkn7JBPtCBXRDmD6IWFF51QVRr+Yg==", "sha512-pKvURIxJVi2CgRXROh/M6pJ/UrTVRZKX+LQ+QtqJI4vBNibkPcs43bCCSIkn7JBPtCBXRDmD6IWFF51QVRr+Yg=="},
		{"ssh key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq7Lm2vK9tR4xW1nB8yC3dF6hJ0sG5aE2uQ", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq7Lm2vK9tR4xW1nB8yC3dF6hJ0sG5aE2uQ"},
		{"public pem", "-----BEGIN PUBLIC KEY----- MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu7Lm2vK9tR4xW1nB8y -----END PUBLIC KEY-----",
			"-----BEGIN PUBLIC KEY----- MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu7Lm2vK9tR4xW1nB8y -----END PUBLIC KEY-----"},
		{"job id", "job 8f14e45f-ceea-467e-a8d2-3c6b1d2e4f50 completed", "job <ID> completed"},
		{"request id", "x-amz-id-2: Qm9vK9tR4xW1nB8yC3dF6hJ0sG5aE2uQ9pZ3kT7vX1mN6bY4cW8dF2hJ0s=", "x-amz-id-2: <ID>"},
		{"prose", "password must be at least 12 characters long", "password must be at least 12 characters long"},
		{"key value", "GET /v1/geo?key=5f2b8c0e9a7d4b1c3e6f8a9b0c1d2e3f4a5b6c7d&q=x", "GET /v1/geo?key=<SECRET>&q=x"},
		{"dotted key", "session.id=k2LmPx7Rw4 unit=session-7.scope: Killing", "session.id=<SECRET> unit=session-7.scope: Killing"},
		{"source key", "DATASOURCE_PASSWORD=Zq9v!k2LmP RESET_TOKEN=k2LmPx7Rw4", "DATASOURCE_PASSWORD=<SECRET> RESET_TOKEN=<SECRET>"},
		{"bare credential", "Authorization: dXNlcjpwYXNzd29yZA== rejected by the proxy", "Authorization: <SECRET> rejected by the proxy"},
		{"profile flag", "mvn -P prod-eu deploy; scp -P 2222 a b", "mvn -P prod-eu deploy; scp -P 2222 a b"},
		{"project name", "project checkout-v2 built; project=web-2 ok", "project checkout-v2 built; project=web-2 ok"},
		{"next assignment", "vault db-credentials api_token=Zq9vk2LmPx", "vault db-credentials api_token=<SECRET>"},
		{"key name", `<add key="ApiKey" value="Zq9vk2LmPx7Rw4Tn8Yb3"/>`, `<add key="ApiKey" value="<SECRET>"/>`},
		{"flag source", "docker login --username jdoe --password-stdin", "docker login --username <USER> --password-stdin"},
		{"count", "process 3 of 12 complete; process 12 files", "process 3 of 12 complete; process 12 files"},
	}
	for _, c := range cases {
		if got := redact.String(c.in); got != c.want {
			t.Errorf("%s: %q\n got  %q\n want %q", c.class, c.in, got, c.want)
		}
	}
}

// wordDetector finds one fixed word: a stand-in for a catalogue of token
// formats.
type wordDetector string

func (w wordDetector) Spans(dst [][2]int, msg []byte) [][2]int {
	for off := 0; ; {
		k := strings.Index(string(msg[off:]), string(w))
		if k < 0 {
			return dst
		}
		dst = append(dst, [2]int{off + k, off + k + len(w)})
		off += k + len(w)
	}
}

// An extra detector's finds are replaced before the redactor's own passes,
// which still run on the rest of the message.
func TestRedactorWithDetector(t *testing.T) {
	r := redact.New(wordDetector("vendortoken42"), wordDetector("other9"))
	got := string(r.Append(nil, []byte("sent other9 and vendortoken42 with password=hunter2 to vendortoken42")))
	want := "sent <SECRET> and <SECRET> with password=<SECRET> to <SECRET>"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := string(redact.New().Append(nil, []byte("vendortoken42"))); got != "vendortoken42" {
		t.Errorf("without the detector: %q", got)
	}
}

// What keeps a random-looking token (a public block, a digest label, a key
// type) keeps only that: a vendor token next to it is still replaced.
func TestKeptContextsKeepNoVendorToken(t *testing.T) {
	for _, in := range []string{
		"-----BEGIN PUBLIC KEY----- MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu7Lm2vK9tR4xW1nB8y AKIAIOSFODNN7EXAMPLE",
		"sha256: ghp_0123456789abcdefghijABCDEFGHIJ012345",
		"ssh-rsa eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJl",
		"x-amz-id-2: AKIAIOSFODNN7EXAMPLE",
	} {
		out := redact.String(in)
		for _, s := range []string{"AKIAIOSFODNN7EXAMPLE", "ghp_0123456789", "eyJhbGciOiJIUzI1NiJ9"} {
			if strings.Contains(out, s) {
				t.Errorf("%q -> %q: %s survives", in, out, s)
			}
		}
	}
}
