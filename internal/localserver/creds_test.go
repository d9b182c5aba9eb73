package localserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// A server in operator mode takes only users with credentials signed by a
// trusted account: the --creds flag's case.
func TestCredentialsFile(t *testing.T) {
	url, credsFile, seed := operatorModeServer(t)
	nc, err := localserver.Connect(localserver.ConnectOptions{URLs: url, Creds: credsFile})
	if err != nil {
		t.Fatalf("with the credentials file: %v", err)
	}
	defer nc.Close()
	if _, err := jetstream.OpenLog(context.Background(), nc, "creds", "cfg", jetstream.LogOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = localserver.Connect(localserver.ConnectOptions{URLs: url})
	if err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		t.Fatalf("without credentials: %v", err)
	}
	if strings.Contains(err.Error(), string(seed)) {
		t.Fatal("the error shows the seed")
	}
}

// operatorModeServer starts a server in operator mode with an account that
// has JetStream, and writes a credentials file of a user of it; it returns
// the server's URL, the file and the user's seed.
func operatorModeServer(t *testing.T) (url, credsFile string, seed []byte) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	operator, _ := nkeys.CreateOperator()
	operatorPub, _ := operator.PublicKey()
	oc := jwt.NewOperatorClaims(operatorPub)
	oc.Name = "test"
	operatorJWT, err := oc.Encode(operator)
	must(err)
	opClaims, err := jwt.DecodeOperatorClaims(operatorJWT)
	must(err)

	// newAccount makes an account signed by the operator.
	newAccount := func(name string, jetStream bool) (nkeys.KeyPair, string, string) {
		t.Helper()
		key, _ := nkeys.CreateAccount()
		pub, _ := key.PublicKey()
		claims := jwt.NewAccountClaims(pub)
		claims.Name = name
		if jetStream {
			claims.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		token, err := claims.Encode(operator)
		must(err)
		return key, pub, token
	}
	account, accountPub, accountJWT := newAccount("app", true)

	user, _ := nkeys.CreateUser()
	userPub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(userPub)
	uc.Name = "alice"
	userJWT, err := uc.Encode(account)
	must(err)
	seed, _ = user.Seed()
	creds, err := jwt.FormatUserConfig(userJWT, seed)
	must(err)
	credsFile = filepath.Join(t.TempDir(), "alice.creds")
	must(os.WriteFile(credsFile, creds, 0o600))

	// Operator mode needs a system account.
	_, systemPub, systemJWT := newAccount("SYS", false)

	resolver := &server.MemAccResolver{}
	must(resolver.Store(accountPub, accountJWT))
	must(resolver.Store(systemPub, systemJWT))
	s := jstest.NATS(t, &server.Options{JetStream: true, TrustedOperators: []*jwt.OperatorClaims{opClaims}, AccountResolver: resolver, SystemAccount: systemPub})
	return s.ClientURL(), credsFile, seed
}
