package localserver

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// A private server and its clients share two secrets through the data
// directory, both readable by its owner only:
//
//   - the server's self-signed TLS certificate and key. The server talks TLS
//     from the first byte and clients trust that certificate alone, so a
//     client proves who it talks to before it sends anything; an impostor
//     listening on the port first gets a TLS hello and no data.
//   - the seed of the one NKey user the server admits. A client signs the
//     server's nonce with it; the seed itself never leaves the machine's
//     disk, and only after the server has proved itself does a client send
//     even the signature.
const (
	tlsKeyFile  = "local-tls.pem" // certificate and private key
	userKeyFile = "local-user.nk" // NKey user seed
)

type localKeys struct {
	cert  tls.Certificate
	roots *x509.CertPool
	user  nkeys.KeyPair
}

// loadLocalKeys reads the data directory's keys, creating them on first
// use. Several processes may do this at once: each writes a complete file
// under a temporary name and links it into place, and whoever loses the
// race reads the winner's.
func loadLocalKeys(dir string) (*localKeys, error) {
	certPEM, err := readOrCreateSecret(dir, tlsKeyFile, newTLSKeyPEM)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, certPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, tlsKeyFile), err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, tlsKeyFile), err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	seed, err := readOrCreateSecret(dir, userKeyFile, newUserSeed)
	if err != nil {
		return nil, err
	}
	user, err := nkeys.FromSeed(seed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, userKeyFile), err)
	}
	return &localKeys{cert: cert, roots: roots, user: user}, nil
}

// PrepareLocalKeys makes the keys of a private server's data directory if
// they are missing, and checks that they are sound and the user's own.
func PrepareLocalKeys(dir string) error {
	_, err := loadLocalKeys(dir)
	return err
}

// serverOptions make a server admit only holders of the keys.
func (k *localKeys) serverOptions(opts *server.Options) error {
	pub, err := k.user.PublicKey()
	if err != nil {
		return err
	}
	opts.TLS = true
	opts.TLSHandshakeFirst = true
	opts.TLSTimeout = 2
	opts.TLSConfig = &tls.Config{Certificates: []tls.Certificate{k.cert}, MinVersion: tls.VersionTLS13}
	opts.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	return nil
}

// clientOptions make a client talk only to the server holding the keys,
// and authenticate to it.
func (k *localKeys) clientOptions() ([]nats.Option, error) {
	pub, err := k.user.PublicKey()
	if err != nil {
		return nil, err
	}
	return []nats.Option{
		nats.Secure(&tls.Config{RootCAs: k.roots, MinVersion: tls.VersionTLS13}),
		nats.TLSHandshakeFirst(),
		nats.Nkey(pub, k.user.Sign),
	}, nil
}

// readOrCreateSecret reads dir/name, which must be the user's own and
// readable by no one else, creating it with make if it does not exist.
func readOrCreateSecret(dir, name string, make func() ([]byte, error)) ([]byte, error) {
	path := filepath.Join(dir, name)
	b, err := readSecret(path)
	if !errors.Is(err, os.ErrNotExist) {
		return b, err
	}
	content, err := make()
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, name+".*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(content)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("creating %s: %w", path, err)
	}
	return readSecret(path)
}

func readSecret(path string) ([]byte, error) {
	f, err := openOwned(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s can be read by others (mode %v; chmod 600 it, or delete it to make new keys): %w", path, fi.Mode().Perm(), ErrUnsafeDataDir)
	}
	return io.ReadAll(io.LimitReader(f, 1<<16))
}

func newUserSeed() ([]byte, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	return kp.Seed()
}

// newTLSKeyPEM makes a self-signed certificate for the loopback addresses,
// with its key, as PEM.
func newTLSKeyPEM() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "sharedconfig local server"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(30, 0, 0),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})...), nil
}

// IsLocalServerCert says whether cert is the certificate of the private
// server on data directory dir. It makes no keys: a directory without them
// has no server.
func IsLocalServerCert(dir string, cert *x509.Certificate) bool {
	certPEM, err := readSecret(filepath.Join(dir, tlsKeyFile))
	if err != nil {
		return false
	}
	pair, err := tls.X509KeyPair(certPEM, certPEM)
	return err == nil && cert != nil && bytes.Equal(pair.Certificate[0], cert.Raw)
}
