package localserver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
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
	// AsyncError, if set, hears the errors the server reports apart from
	// any request (a permission refused, a slow consumer), with the
	// subject of the subscription they concern if nats.go knows it;
	// unset, nats.go prints them on stderr.
	AsyncError func(subject string, err error)
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
// in the list. Requests in flight when it breaks fail with timeouts; those
// made while it is away fail at once (ErrNotConnected), unsent.
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
		// Nothing is kept to send once the connection is back: a write the
		// user was told had failed, or gave up on, must never land later.
		// Anything published while reconnecting fails at once instead.
		nats.ReconnectBufSize(-1),
	}, security...)
	if o.ReconnectFailed != nil {
		opts = append(opts, nats.ReconnectErrHandler(func(_ *nats.Conn, err error) { o.ReconnectFailed(err) }))
	}
	if o.AsyncError != nil {
		opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			o.AsyncError(subject, err)
		}))
	}
	if err := checkURLsWithSecrets(urls); err != nil {
		return nil, fmt.Errorf("cannot connect to %s: %v", RedactURLs(urls), err)
	}
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		hint := ""
		if errors.Is(err, nats.ErrNoServers) && o.LocalDataDir == "" {
			hint = " (is a NATS server running there?)" // every address refused the connection
		}
		err = fmt.Errorf("cannot connect to %s: %v%s", RedactURLs(urls), redact(err, o), hint)
		if o.LocalDataDir == "" {
			err = explainEOF(err, urls, timeout)
		}
		return nil, err
	}
	return nc, nil
}

// TLSFirstError: the connection ended before it began (EOF) because the
// server talks TLS from the first byte, as a private local server does
// (ServerOptions.Private), and waits for a TLS hello that a connection by
// address does not send.
type TLSFirstError struct {
	Addr string            // host:port
	Cert *x509.Certificate // the one the server showed
	Err  error
}

func (e *TLSFirstError) Error() string {
	return fmt.Sprintf("%v (the server at %s talks TLS from the first byte, as sharedconfig's private local server does)", e.Err, e.Addr)
}

func (e *TLSFirstError) Unwrap() error { return e.Err }

// explainEOF turns an EOF from the servers in urls into a TLSFirstError if
// one of them answers a TLS hello: the client sent nothing but waited for
// the server's INFO, and the server, waiting for a hello, gave up.
func explainEOF(err error, urls string, timeout time.Duration) error {
	if !errors.Is(err, io.EOF) && !strings.HasSuffix(err.Error(), ": EOF") {
		return err
	}
	for _, u := range strings.Split(urls, ",") {
		addr := hostPort(strings.TrimSpace(u))
		if cert := tlsFirstCert(addr, timeout); cert != nil {
			return &TLSFirstError{Addr: addr, Cert: cert, Err: err}
		}
	}
	return err
}

// hostPort is the address a NATS URL names, 4222 if it gives no port.
func hostPort(u string) string {
	if !strings.Contains(u, "://") {
		u = "nats://" + u
	}
	parsed, err := url.Parse(u)
	if err != nil || parsed.Hostname() == "" {
		return ""
	}
	port := parsed.Port()
	if port == "" {
		port = "4222"
	}
	return net.JoinHostPort(parsed.Hostname(), port)
}

// tlsFirstCert sends a TLS hello to addr and returns the certificate the
// server answers with, or nil if it does not answer as a TLS server. It
// sends nothing else: no credentials, no NATS protocol.
func tlsFirstCert(addr string, timeout time.Duration) *x509.Certificate {
	if addr == "" {
		return nil
	}
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	// Only to see which certificate it shows: the connection is closed
	// right after the handshake.
	tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		return nil
	}
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil
	}
	return certs[0]
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
// that it can be shown. It does not parse the URLs: nats.go takes forms
// Go's URL parser refuses (no scheme; a password holding # or a space), and
// those must not show either.
func RedactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if start, end, ok := userinfo(p); ok {
			parts[i] = p[:start] + "REDACTED" + p[end:]
		}
	}
	return strings.Join(parts, ",")
}

// userinfo finds the user information of one URL as nats.go reads it: after
// the scheme if there is one, up to the last @ (which may be part of a
// password only if it comes before another).
func userinfo(u string) (start, end int, ok bool) {
	start = len(u) - len(strings.TrimLeft(u, " \t"))
	if i := strings.Index(u, "://"); i >= 0 {
		start = i + len("://")
	}
	at := strings.LastIndex(u[start:], "@")
	if at < 0 {
		return 0, 0, false
	}
	return start, start + at, true
}

// checkURLsWithSecrets refuses a URL holding user information that Go's URL
// parser, which nats.go uses, cannot read: its error would quote the secret.
func checkURLsWithSecrets(urls string) error {
	for _, p := range strings.Split(urls, ",") {
		p = strings.TrimSpace(p)
		if _, _, ok := userinfo(p); !ok {
			continue
		}
		if !strings.Contains(p, "://") {
			p = "nats://" + p
		}
		if _, err := url.Parse(p); err != nil {
			return errors.New("a URL with a user or password that does not read as a URL (percent-encode characters such as #, %, / or a space in it, or give them with --user and --password)")
		}
	}
	return nil
}

// redact removes secrets from an error's text.
func redact(err error, o ConnectOptions) string {
	msg := err.Error()
	secrets := []string{o.Password, o.Token}
	for _, p := range strings.Split(o.ResolveURLs(), ",") {
		if start, end, ok := userinfo(p); ok {
			info := p[start:end]
			_, password, _ := strings.Cut(info, ":") // a user name alone is a token
			secrets = append(secrets, info, password)
		}
	}
	for _, secret := range secrets {
		if secret != "" {
			msg = strings.ReplaceAll(msg, secret, "***")
		}
	}
	return msg
}
