package redistest

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
)

// The TLS server serves TLS with the generated files: a client that trusts
// the CA and presents the client certificate is served, one that trusts
// another CA is refused, and with --tls-auth-clients yes a client without
// a certificate is refused.
func TestTLSServer(t *testing.T) {
	files, err := NewTLSFiles(t.TempDir(), "redis.test")
	if err != nil {
		t.Fatal(err)
	}
	s, err := StartTLSServer(files, "--tls-auth-clients", "yes")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	pem, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	ping := func(c *tls.Config) (string, error) {
		conn, err := tls.Dial("tcp", s.TLSAddr, c)
		if err != nil {
			return "", err
		}
		defer conn.Close()
		if _, err := conn.Write([]byte("PING\r\n")); err != nil {
			return "", err
		}
		buf := make([]byte, 64)
		n, err := conn.Read(buf)
		return string(buf[:n]), err
	}
	if got, err := ping(&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}}); err != nil || got != "+PONG\r\n" {
		t.Fatalf("with the CA and a client certificate: %q, %v", got, err)
	}
	if got, err := ping(&tls.Config{RootCAs: roots, ServerName: "redis.test", Certificates: []tls.Certificate{cert}}); err != nil || got != "+PONG\r\n" {
		t.Fatalf("by the name redis.test: %q, %v", got, err)
	}
	if _, err := ping(&tls.Config{}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: %v", err)
	}
	if got, err := ping(&tls.Config{RootCAs: roots}); err == nil && got == "+PONG\r\n" {
		t.Fatal("served a client without a certificate under --tls-auth-clients yes")
	}
	if reply, err := Command(s.Addr, "PING"); err != nil || reply != "PONG" {
		t.Fatalf("plain port: %q, %v", reply, err)
	}
}
