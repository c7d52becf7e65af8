package redisconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
)

// Options checks s, reads its password (file or environment) and TLS
// files, and returns the options redisstore.New takes. The TLS
// configuration verifies the server (TLS 1.2 or later).
func (s Spec) Options() (redisstore.Options, error) {
	ep, err := s.check()
	if err != nil {
		return redisstore.Options{}, err
	}
	o := redisstore.Options{Addrs: ep.addrs, Username: ep.user, Prefix: s.Prefix, Standalone: s.Standalone,
		Cluster: s.Cluster, SentinelMaster: s.SentinelMaster, Durability: s.Durability, Timeout: s.Timeout}
	if o.Password, err = s.password(); err != nil {
		return redisstore.Options{}, err
	}
	if ep.tls {
		if o.TLS, err = s.tlsConfig(); err != nil {
			return redisstore.Options{}, err
		}
	}
	return o, nil
}

// password reads the password: from PasswordFile (one line; a trailing
// newline is dropped), else from PasswordEnv, else from EnvPassword ("" when
// that is unset: no password).
func (s Spec) password() (string, error) {
	if s.PasswordFile == "" {
		if s.PasswordEnv == "" {
			return os.Getenv(EnvPassword), nil
		}
		pw, ok := os.LookupEnv(s.PasswordEnv)
		if !ok || pw == "" {
			return "", fieldErr("password_env", "$%s is not set", s.PasswordEnv)
		}
		return pw, nil
	}
	b, err := readFile(s.PasswordFile, MaxPasswordFile)
	if err != nil {
		return "", fieldErr("password_file", "%v", err)
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if pw == "" || strings.ContainsAny(pw, "\r\n") {
		return "", fieldErr("password_file", "the file must hold the password on one line")
	}
	return pw, nil
}

// maxPEM bounds a certificate or key file.
const maxPEM = 1 << 20

func (s Spec) tlsConfig() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.ServerName}
	if s.CAFile != "" {
		pem, err := readFile(s.CAFile, maxPEM)
		if err != nil {
			return nil, fieldErr("tls_ca_file", "%v", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fieldErr("tls_ca_file", "%s holds no PEM certificate", s.CAFile)
		}
	}
	if s.CertFile != "" {
		cert, err := readFile(s.CertFile, maxPEM)
		if err != nil {
			return nil, fieldErr("tls_cert_file", "%v", err)
		}
		key, err := readFile(s.KeyFile, maxPEM)
		if err != nil {
			return nil, fieldErr("tls_key_file", "%v", err)
		}
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fieldErr("tls_cert_file", "it and {tls_key_file} are not a certificate and its key: %v", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// readFile reads at most max bytes of path, refusing a larger file.
func readFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v", path, rootCause(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v", path, rootCause(err))
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is over %d bytes", path, max)
	}
	return b, nil
}

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// Open connects to the Redis s names. A bad Spec is INVALID_ARGUMENT; no
// server answering is STORE_UNAVAILABLE, with a message that names the
// server and the cause.
func Open(s Spec) (*redisstore.Store, error) {
	o, err := s.Options()
	if err != nil {
		return nil, err
	}
	st, err := redisstore.New(o)
	if err != nil {
		if canonical.CodeOf(err) == canonical.CodeStoreUnavailable {
			return nil, canonical.Errorf(canonical.CodeStoreUnavailable, "cannot reach Redis at %s: %v", s, rootCause(err))
		}
		return nil, err
	}
	return st, nil
}
