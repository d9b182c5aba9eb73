package jetstream

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultURL is where sharedconfig looks for a server when given none.
const DefaultURL = "nats://127.0.0.1:4222"

// ConnectOptions say how to reach NATS servers and how to authenticate.
type ConnectOptions struct {
	// URLs is a comma-separated list of server URLs; empty means NATS_URL,
	// then DefaultURL.
	URLs string
	// Authentication: at most one of Creds, NKey, User/Password and Token.
	Creds    string // a credentials file (JWT and NKey seed)
	NKey     string // a file holding an NKey seed
	User     string
	Password string
	Token    string
	// TLS: a CA to trust, and a client certificate and key if the server
	// asks for one.
	CACert, Cert, Key string
	// Timeout bounds the first connection; 0 means 5s.
	Timeout time.Duration
	// Name is the client name servers show in their connection lists.
	Name string
	// LocalDataDir: the server must be the private server on this data
	// directory (ServerOptions.Private). The client trusts only the TLS
	// certificate kept there and signs in with the NKey kept there; it
	// excludes the other authentication and TLS options.
	LocalDataDir string
	// ReconnectFailed, if set, is called after each failed attempt to
	// reconnect, with its error, on the connection's callback goroutine.
	ReconnectFailed func(error)
}

// ResolveURLs returns the server list these options use.
func (o ConnectOptions) ResolveURLs() string {
	switch {
	case o.URLs != "":
		return o.URLs
	case os.Getenv("NATS_URL") != "":
		return os.Getenv("NATS_URL")
	default:
		return DefaultURL
	}
}

// Connect opens a connection that reconnects for ever, trying every server
// in the list; operations in flight while it is away fail with timeouts.
func Connect(o ConnectOptions) (*nats.Conn, error) {
	urls := o.ResolveURLs()
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	security, err := securityOptions(o)
	if err != nil {
		return nil, err
	}
	opts := append([]nats.Option{
		nats.Name(o.Name),
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
	}, security...)
	if o.ReconnectFailed != nil {
		opts = append(opts, nats.ReconnectErrHandler(func(_ *nats.Conn, err error) { o.ReconnectFailed(err) }))
	}
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to %s: %v", RedactURLs(urls), redact(err, o))
	}
	return nc, nil
}

// HasAuth says whether o names a way to authenticate.
func (o ConnectOptions) HasAuth() bool {
	return o.Creds != "" || o.NKey != "" || o.User != "" || o.Password != "" || o.Token != ""
}

// securityOptions are the authentication and TLS options o asks for: the
// local data directory's keys, or at most one way to authenticate and the
// TLS files given.
func securityOptions(o ConnectOptions) ([]nats.Option, error) {
	if o.LocalDataDir != "" {
		if o.HasAuth() || o.CACert != "" || o.Cert != "" || o.Key != "" {
			return nil, errors.New("the local server admits only its owner, by the keys in its data directory: give the authentication and TLS options with the server's address")
		}
		keys, err := loadLocalKeys(o.LocalDataDir)
		if err != nil {
			return nil, err
		}
		return keys.clientOptions()
	}
	var opts []nats.Option
	auth := 0
	if o.Creds != "" {
		auth++
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	if o.NKey != "" {
		auth++
		opt, err := nats.NkeyOptionFromSeed(o.NKey)
		if err != nil {
			return nil, fmt.Errorf("NKey seed file %s: %v", o.NKey, err)
		}
		opts = append(opts, opt)
	}
	if o.User != "" || o.Password != "" {
		auth++
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.Token != "" {
		auth++
		opts = append(opts, nats.Token(o.Token))
	}
	if auth > 1 {
		return nil, errors.New("give only one of a credentials file, an NKey seed file, a user and password, or a token")
	}
	if o.CACert != "" {
		opts = append(opts, nats.RootCAs(o.CACert))
	}
	if (o.Cert == "") != (o.Key == "") {
		return nil, errors.New("a client certificate needs both a certificate file and a key file")
	}
	if o.Cert != "" {
		opts = append(opts, nats.ClientCert(o.Cert, o.Key))
	}
	return opts, nil
}

// RedactURLs hides passwords and tokens in a comma-separated URL list, so
// that it can be shown.
func RedactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		if err != nil || u.User == nil {
			continue
		}
		u.User = url.User("REDACTED")
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}

// redact removes secrets from an error's text.
func redact(err error, o ConnectOptions) string {
	msg := err.Error()
	for _, secret := range []string{o.Password, o.Token} {
		if secret != "" {
			msg = strings.ReplaceAll(msg, secret, "***")
		}
	}
	return msg
}
