package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// TLSFiles are PEM files for a server with TLS: a CA, a server certificate
// it signed for 127.0.0.1, ::1, localhost and more names, and a client
// certificate it signed, each with its key.
type TLSFiles struct {
	Dir                   string
	CA                    string // the CA's certificate
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// NewTLSFiles generates a CA and the certificates it signs into dir
// (ECDSA P-256, valid for a day). names are further DNS names of the
// server's certificate.
func NewTLSFiles(dir string, names ...string) (TLSFiles, error) {
	f := TLSFiles{Dir: dir, CA: filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client.key")}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "redistest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return f, err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return f, err
	}
	if err := writePEM(f.CA, "CERTIFICATE", caDER); err != nil {
		return f, err
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, dns []string, ips []net.IP, certPath, keyPath string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: dns, IPAddresses: ips,
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(keyPath, "PRIVATE KEY", kder)
	}
	if err := leaf(2, "redistest server", x509.ExtKeyUsageServerAuth, append([]string{"localhost"}, names...),
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, f.ServerCert, f.ServerKey); err != nil {
		return f, err
	}
	if err := leaf(3, "redistest client", x509.ExtKeyUsageClientAuth, nil, nil, f.ClientCert, f.ClientKey); err != nil {
		return f, err
	}
	return f, nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// StartTLSServer starts a standalone redis-server that serves TLS on
// TLSAddr with files, and plain TCP on Addr (for the harness's Command and
// a test's setup; the client under test uses TLSAddr). Clients may present
// a certificate (--tls-auth-clients optional); extra arguments come after
// the harness's own, e.g. "--tls-auth-clients", "yes". It is always Redis,
// whatever EnvServer says: the Valkey the harness builds has no TLS.
func StartTLSServer(files TLSFiles, extra ...string) (*Server, error) {
	bin, err := binary("redis-server")
	if err != nil {
		return nil, fmt.Errorf("a server with TLS needs redis-server (Debian's is built with TLS): %w", err)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort(false)
		if err != nil {
			return nil, err
		}
		tlsPort, err := freePort(false)
		if err != nil {
			return nil, err
		}
		if tlsPort == port {
			continue
		}
		dir, err := os.MkdirTemp("", "toolcanon-redis-tls-")
		if err != nil {
			return nil, err
		}
		s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, Kind: KindRedis, dir: dir, bin: bin,
			TLSAddr: "127.0.0.1:" + strconv.Itoa(tlsPort)}
		s.args = append([]string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no",
			"--logfile", filepath.Join(dir, "redis.log"),
			"--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", files.ServerCert, "--tls-key-file", files.ServerKey,
			"--tls-ca-cert-file", files.CA, "--tls-auth-clients", "optional",
		}, extra...)
		if err := s.run(); err != nil {
			lastErr = err
			os.RemoveAll(dir)
			continue
		}
		return s, nil
	}
	if lastErr == nil {
		lastErr = errors.New("no two free loopback ports")
	}
	return nil, lastErr
}
