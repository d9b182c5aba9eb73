package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// losingStreamSettings: each changes (or, after, updates) a stream that
// would otherwise do, in a way that could lose, drop, refuse or mix entries;
// want is what the refusal names.
var losingStreamSettings = []struct {
	name   string
	change func(c *natsjs.StreamConfig)
	after  func(c *natsjs.StreamConfig) // applied by an update after creation
	want   string
}{
	{"memory", func(c *natsjs.StreamConfig) { c.Storage = natsjs.MemoryStorage }, nil, "storage memory"},
	{"async persist", func(c *natsjs.StreamConfig) { c.PersistMode = natsjs.AsyncPersistMode }, nil, "persist mode async"},
	{"no ack", func(c *natsjs.StreamConfig) { c.NoAck = true }, nil, "no-ack"},
	{"interest", func(c *natsjs.StreamConfig) { c.Retention = natsjs.InterestPolicy }, nil, "retention interest"},
	{"work queue", func(c *natsjs.StreamConfig) { c.Retention = natsjs.WorkQueuePolicy }, nil, "retention workqueue"},
	{"max msgs", func(c *natsjs.StreamConfig) { c.MaxMsgs = 100 }, nil, "max messages 100 (drops the oldest entries"},
	{"max msgs, discard new", func(c *natsjs.StreamConfig) { c.MaxMsgs, c.Discard = 100, natsjs.DiscardNew }, nil, "max messages 100 (refuses writes once reached"},
	{"max bytes", func(c *natsjs.StreamConfig) { c.MaxBytes = 1 << 20 }, nil, "max bytes 1048576"},
	{"max age", func(c *natsjs.StreamConfig) { c.MaxAge = time.Hour }, nil, "max age 1h0m0s"},
	{"max per subject", func(c *natsjs.StreamConfig) { c.MaxMsgsPerSubject = 5 }, nil, "max messages per subject 5"},
	{"max msg size", func(c *natsjs.StreamConfig) { c.MaxMsgSize = 1000 }, nil, "max message size 1000 bytes"},
	{"no rollups", func(c *natsjs.StreamConfig) { c.AllowRollup = false }, nil, "rollups not allowed"},
	{"deny purge", func(c *natsjs.StreamConfig) { c.AllowRollup, c.DenyPurge = false, true }, nil, "deny purge"},
	{"sealed", nil, func(c *natsjs.StreamConfig) { c.Sealed = true }, "sealed"},
	{"mirror", func(c *natsjs.StreamConfig) {
		c.Subjects, c.AllowRollup, c.DenyDelete, c.AllowDirect = nil, false, false, false
		c.Mirror = &natsjs.StreamSource{Name: "ORIGIN"}
	}, nil, "a mirror of stream ORIGIN"},
	{"sources", func(c *natsjs.StreamConfig) { c.Sources = []*natsjs.StreamSource{{Name: "ORIGIN"}} }, nil, "sources"},
	{"counters", func(c *natsjs.StreamConfig) { c.AllowMsgCounter = true }, nil, "message counters"},
	{"delete markers", func(c *natsjs.StreamConfig) { c.AllowMsgTTL, c.SubjectDeleteMarkerTTL = true, time.Minute }, nil, "subject delete markers"},
	{"short dedup window", func(c *natsjs.StreamConfig) { c.Duplicates = time.Second }, nil, "duplicate window 1s"},
	{"other subjects", func(c *natsjs.StreamConfig) { c.Subjects = append(c.Subjects, "more") }, nil, "subjects ["},
}

// A stream that exists with a setting under which entries could be lost,
// dropped, refused or mixed with others is refused, naming the setting.
// (Issue 11: a memory stream was accepted and every write vanished on
// restart.)
func TestStreamSettingsThatLoseEntries(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	js, _ := natsjs.New(nc)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, natsjs.StreamConfig{Name: "ORIGIN", Subjects: []string{"origin"}}); err != nil {
		t.Fatal(err)
	}
	for i, c := range losingStreamSettings {
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprint("bad", i)
			cfg := natsjs.StreamConfig{
				Name:        jetstream.StreamName("test", name),
				Subjects:    []string{jetstream.Subject("test", name)},
				Storage:     natsjs.FileStorage,
				DenyDelete:  true,
				AllowRollup: true,
				Duplicates:  2 * time.Minute,
				AllowDirect: true,
			}
			if c.change != nil {
				c.change(&cfg)
			}
			if _, err := js.CreateStream(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			if c.after != nil {
				c.after(&cfg)
				if _, err := js.UpdateStream(ctx, cfg); err != nil {
					t.Fatal(err)
				}
			}
			_, err := jetstream.OpenLog(ctx, nc, "test", name, jetstream.LogOptions{})
			if err == nil || !strings.Contains(err.Error(), "exists with settings sharedconfig cannot use") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("OpenLog = %v; want it refused for %q", err, c.want)
			}
			t.Log(err)
		})
	}
	// The settings OpenLog itself uses are accepted.
	cfg := natsjs.StreamConfig{
		Name: jetstream.StreamName("test", "good"), Subjects: []string{jetstream.Subject("test", "good")},
		AllowRollup: true, MaxMsgSize: int32(nc.MaxPayload()), AllowMsgTTL: true,
	}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := jetstream.OpenLog(ctx, nc, "test", "good", jetstream.LogOptions{}); err != nil {
		t.Fatalf("OpenLog on a usable stream: %v", err)
	}
}

// A stream named like a config's but on another subject is someone else's:
// destroy refuses it, naming why, and leaves it and its messages alone.
// (Issue 19.11: it was deleted.)
func TestDeleteConfigRefusesAStreamThatIsNotAConfig(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	js, _ := natsjs.New(nc)
	ctx := context.Background()
	stream := jetstream.StreamName("a", "b")
	if _, err := js.CreateStream(ctx, natsjs.StreamConfig{Name: stream, Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "orders.1", []byte("an order")); err != nil {
		t.Fatal(err)
	}
	err := jetstream.DeleteConfig(ctx, nc, "a", "b")
	if err == nil || !strings.Contains(err.Error(), "stream SC_1_a_b is not one sharedconfig can use as a/b, so it is not deleted: subjects [orders.>] (want [sharedconfig.a.b])") ||
		!strings.Contains(err.Error(), "(if it is yours to delete, 'nats stream rm SC_1_a_b' does)") {
		t.Fatalf("DeleteConfig of a stream on orders.>: %v, want a refusal naming the subjects", err)
	}
	s, err := js.Stream(ctx, stream)
	if err != nil || s.CachedInfo().State.Msgs != 1 {
		t.Fatalf("the stream after the refusal: %v; want it there with its message", err)
	}
}

func TestServerWithoutJetStream(t *testing.T) {
	s := jstest.NATS(t, &server.Options{})
	nc, err := localserver.Connect(localserver.ConnectOptions{URLs: s.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = jetstream.OpenLog(ctx, nc, "x", "y", jetstream.LogOptions{})
	if !errors.Is(err, jetstream.ErrNoJetStream) || !strings.Contains(err.Error(), "does not have JetStream enabled") {
		t.Fatalf("OpenLog on a server without JetStream: %v", err)
	}
	// What to do about it is the command line's to say, not the log's.
	if strings.Contains(err.Error(), "nats-server") {
		t.Fatalf("the log's error gives a user advice: %v", err)
	}
}

// A stream of another program that takes the config's subject (a wildcard
// over sharedconfig.grab.>, say) makes the config impossible to create: the
// error names that stream, not only the server's "subjects overlap".
func TestSubjectTakenByAnotherStream(t *testing.T) {
	srv := jstest.Server(t)
	nc := jstest.Connect(t, srv)
	js, _ := natsjs.New(nc)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, natsjs.StreamConfig{Name: "GRAB", Subjects: []string{"sharedconfig.grab.>"}}); err != nil {
		t.Fatal(err)
	}
	_, err := jetstream.OpenLog(ctx, nc, "grab", "someConfig", jetstream.LogOptions{})
	if err == nil || !strings.Contains(err.Error(), "stream GRAB") || !strings.Contains(err.Error(), "sharedconfig.grab.someConfig") {
		t.Fatalf("OpenLog = %v; want it to name stream GRAB and the subject it takes", err)
	}
}
