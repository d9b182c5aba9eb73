package localserver_test

import (
	"strings"
	"testing"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
)

// Every URL form nats.go is given, parsable by Go's URL parser or not,
// shows with its user information hidden: in the list, and in what a
// failed connection says.
var urlsWithSecrets = []struct{ url, shown, secret string }{
	{"alice:S3cret@127.0.0.1:1", "REDACTED@127.0.0.1:1", "S3cret"},
	{"nats://alice:S3#cret@127.0.0.1:1", "nats://REDACTED@127.0.0.1:1", "S3"},
	{"nats://alice:S3 cret@127.0.0.1:1", "nats://REDACTED@127.0.0.1:1", "S3 cret"},
	{"nats://alice:S3%zzcret@127.0.0.1:1", "nats://REDACTED@127.0.0.1:1", "S3%zzcret"},
	{"nats://alice:S3cret@127.0.0.1:1", "nats://REDACTED@127.0.0.1:1", "S3cret"},
	{"nats://alice:p@ss@127.0.0.1:1", "nats://REDACTED@127.0.0.1:1", "p@ss"},
	{"tls://t0ken@127.0.0.1:1", "tls://REDACTED@127.0.0.1:1", "t0ken"},
	{"nats://127.0.0.1:1, alice:S3cret@127.0.0.1:2", "nats://127.0.0.1:1, REDACTED@127.0.0.1:2", "S3cret"},
}

func TestRedactURLs(t *testing.T) {
	for _, c := range urlsWithSecrets {
		if got := localserver.RedactURLs(c.url); got != c.shown {
			t.Errorf("RedactURLs(%q) = %q; want %q", c.url, got, c.shown)
		}
	}
	if got := localserver.RedactURLs("nats://127.0.0.1:4222,tls://h:1"); got != "nats://127.0.0.1:4222,tls://h:1" {
		t.Errorf("URLs without secrets changed: %q", got)
	}
}

func TestConnectErrorsShowNoSecret(t *testing.T) {
	for _, c := range urlsWithSecrets {
		_, err := localserver.Connect(localserver.ConnectOptions{URLs: c.url})
		if err == nil {
			t.Fatalf("connected to %q", c.url)
		}
		if strings.Contains(err.Error(), c.secret) || !strings.Contains(err.Error(), c.shown) {
			t.Errorf("Connect(%q): %v; want %q shown and %q nowhere", c.url, err, c.shown, c.secret)
		}
	}
}
