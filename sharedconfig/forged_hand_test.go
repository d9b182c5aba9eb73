package sharedconfig_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// A forged hand whose op id or writer name the Sharedconfig-Carried header
// cannot hold (a comma or colon in the id, a name that is not UTF-8) does
// not spoil the header of the entry that carries it with other writers'
// calls: readers would find no call in it, so that a call it did carry
// could land again in another entry.
func TestForgedHandDoesNotHideTheCallsCarriedWithIt(t *testing.T) {
	for _, forged := range []struct{ name, id, writer string }{
		{"comma in the id", "bad,id", ""},
		{"colon in the id", "bad:id", ""},
		{"blank id", " ", ""},
		{"writer not UTF-8", "0000000000000bad", "\xff\xfe"},
	} {
		t.Run(forged.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			h := handsTo{t: t, e: e, a: e.open(sharedconfig.Options{Combining: true}), b: e.open(sharedconfig.Options{Combining: true})}
			nc := h.a.Log().(*jetstream.Log).Conn()
			put(t, h.b, "b", "1")
			_, _, bSpeaker := h.last()
			put(t, h.a, "a", "1")
			from, fromID, aSpeaker := h.last()
			if err := h.b.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			legit := h.hand(from, fromID, "0123456789abcdef", "x")
			// Both hands reach a before it carries them (1 ms later), so
			// one entry carries both.
			bad := nats.NewMsg(h.subject() + aSpeaker)
			bad.Data, bad.Reply = h.hand(from, fromID, forged.id, "y"), requestInbox()
			if forged.writer != "" {
				bad.Header.Set("Sharedconfig-Writer", forged.writer)
			}
			good := nats.NewMsg(h.subject() + aSpeaker)
			good.Data, good.Reply = legit, requestInbox()
			good.Header.Set("Sharedconfig-Writer", "h")
			answer := h.send(nc, bad, good)
			// The call is carried: b, having read that entry, must not
			// carry it again.
			if err := h.b.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			again, err := nc.Request(h.subject()+bSpeaker, legit, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Data) != 0 {
				t.Errorf("b carried the call again, at revision %s, after a carried it at %s", again.Data, answer)
			}
			h.putOnceByH("x")
		})
	}
}

// handsTo is the forged-hand test's config, open in a and b, and what it
// hands them by hand.
type handsTo struct {
	t    *testing.T
	e    *env
	a, b *sharedconfig.Config
}

func (h handsTo) subject() string { return "sharedconfig.test." + h.e.name + ".turns." }

// last is the config's last entry: its revision, ID and writer's speaker id.
func (h handsTo) last() (seq uint64, id, speaker string) {
	m, err := h.a.Log().(*jetstream.Log).Stream().GetLastMsgForSubject(context.Background(), "sharedconfig.test."+h.e.name)
	if err != nil {
		h.t.Fatal(err)
	}
	return m.Sequence, m.Header.Get("Nats-Msg-Id"), m.Header.Get("Sharedconfig-Speaker")
}

// hand is a hand of writer h's call id, a PUT of key, made on the entry
// at from.
func (h handsTo) hand(from uint64, fromID, id, key string) []byte {
	op, _ := json.Marshal(map[string]string{"call": "Put", "key": key, "value": "v"})
	data, _ := json.Marshal(map[string]any{"by": "h", "id": id, "from": from, "from_id": fromID, "until": from + 64, "op": op})
	return data
}

// requestInbox is a reply subject shaped as a request's, the one a
// writer answers a hand on.
func requestInbox() string { return nats.NewInbox() + ".1" }

// send publishes bad, then good, and returns the answer to good.
func (h handsTo) send(nc *nats.Conn, bad, good *nats.Msg) string {
	answers, err := nc.SubscribeSync(good.Reply)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := nc.PublishMsg(bad); err != nil {
		h.t.Fatal(err)
	}
	if err := nc.PublishMsg(good); err != nil {
		h.t.Fatal(err)
	}
	answer, err := answers.NextMsg(5 * time.Second)
	if err != nil || len(answer.Data) == 0 {
		h.t.Fatalf("a did not carry the call: %v", err)
	}
	return string(answer.Data)
}

// putOnceByH checks that key was put once, by a call of h's that the
// carrying entry names.
func (h handsTo) putOnceByH(key string) {
	changes, err := h.b.History(context.Background(), key, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	puts := 0
	for _, ch := range changes {
		for _, op := range ch.Ops {
			puts++
			if op.HandedBy != "h" {
				h.t.Errorf("the PUT of %s at revision %d says it was handed by %q, not h: its entry does not say it carried the call", key, ch.Revision, op.HandedBy)
			}
		}
	}
	if puts != 1 {
		h.t.Errorf("%s was put %d times by one call; want once", key, puts)
	}
}
