package localserver_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

func TestUserPassword(t *testing.T) {
	s := jstest.NATS(t, &server.Options{JetStream: true, Username: "alice", Password: "s3cret-pw"})
	nc, err := localserver.Connect(localserver.ConnectOptions{URLs: s.ClientURL(), User: "alice", Password: "s3cret-pw"})
	if err != nil {
		t.Fatalf("with the right password: %v", err)
	}
	defer nc.Close()
	if _, err := jetstream.OpenLog(context.Background(), nc, "auth", "cfg", jetstream.LogOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = localserver.Connect(localserver.ConnectOptions{URLs: s.ClientURL(), User: "alice", Password: "wrong-pw"})
	if err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		t.Fatalf("with a wrong password: %v", err)
	}
	if strings.Contains(err.Error(), "wrong-pw") {
		t.Fatalf("the error shows the password: %v", err)
	}
	if _, err := localserver.Connect(localserver.ConnectOptions{URLs: s.ClientURL()}); err == nil {
		t.Fatal("connected without credentials")
	}
}

func TestToken(t *testing.T) {
	s := jstest.NATS(t, &server.Options{JetStream: true, Authorization: "t0ken-value"})
	nc, err := localserver.Connect(localserver.ConnectOptions{URLs: s.ClientURL(), Token: "t0ken-value"})
	if err != nil {
		t.Fatalf("with the right token: %v", err)
	}
	nc.Close()
	_, err = localserver.Connect(localserver.ConnectOptions{URLs: s.ClientURL(), Token: "other-t0ken"})
	if err == nil || strings.Contains(err.Error(), "other-t0ken") {
		t.Fatalf("with a wrong token: %v", err)
	}
}

func TestOneAuthenticationAtATime(t *testing.T) {
	_, err := localserver.Connect(localserver.ConnectOptions{URLs: "nats://127.0.0.1:1", Token: "x", User: "u", Password: "p"})
	if err == nil || !strings.Contains(err.Error(), "only one of") {
		t.Fatalf("token and password together: %v", err)
	}
}

// writeCerts makes a CA and a certificate for 127.0.0.1 signed by it.
func writeCerts(t *testing.T) (caFile, certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	write := func(name, kind string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("cert.pem", "CERTIFICATE", leafDER), write("key.pem", "EC PRIVATE KEY", keyDER)
}

func TestTLSWithACA(t *testing.T) {
	caFile, certFile, keyFile := writeCerts(t)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	s := jstest.NATS(t, &server.Options{JetStream: true, TLS: true, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	url := s.ClientURL() // tls://...
	nc, err := localserver.Connect(localserver.ConnectOptions{URLs: url, CACert: caFile})
	if err != nil {
		t.Fatalf("trusting the CA: %v", err)
	}
	defer nc.Close()
	if !nc.TLSRequired() {
		t.Fatal("the connection is not TLS")
	}
	if _, err := jetstream.OpenLog(context.Background(), nc, "tls", "cfg", jetstream.LogOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := localserver.Connect(localserver.ConnectOptions{URLs: url}); err == nil {
		t.Fatal("connected without trusting the server's CA")
	}
}
