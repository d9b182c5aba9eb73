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
			a := e.open(sharedconfig.Options{Combining: true})
			b := e.open(sharedconfig.Options{Combining: true})
			nc := a.Log().(*jetstream.Log).Conn()
			subject := "sharedconfig.test." + e.name + ".turns."
			last := func() (seq uint64, id, speaker string) {
				m, err := a.Log().(*jetstream.Log).Stream().GetLastMsgForSubject(ctx, "sharedconfig.test."+e.name)
				if err != nil {
					t.Fatal(err)
				}
				return m.Sequence, m.Header.Get("Nats-Msg-Id"), m.Header.Get("Sharedconfig-Speaker")
			}
			put(t, b, "b", "1")
			_, _, bSpeaker := last()
			put(t, a, "a", "1")
			from, fromID, aSpeaker := last()
			if err := b.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			hand := func(id, key string) []byte {
				op, _ := json.Marshal(map[string]string{"call": "Put", "key": key, "value": "v"})
				data, _ := json.Marshal(map[string]any{"by": "h", "id": id, "from": from, "from_id": fromID, "until": from + 64, "op": op})
				return data
			}
			legit := hand("0123456789abcdef", "x")
			// Both hands reach a before it carries them (1 ms later), so
			// one entry carries both.
			bad := nats.NewMsg(subject + aSpeaker)
			bad.Data, bad.Reply = hand(forged.id, "y"), nats.NewInbox()
			if forged.writer != "" {
				bad.Header.Set("Sharedconfig-Writer", forged.writer)
			}
			good := nats.NewMsg(subject + aSpeaker)
			good.Data, good.Reply = legit, nats.NewInbox()
			good.Header.Set("Sharedconfig-Writer", "h")
			answers, err := nc.SubscribeSync(good.Reply)
			if err != nil {
				t.Fatal(err)
			}
			if err := nc.PublishMsg(bad); err != nil {
				t.Fatal(err)
			}
			if err := nc.PublishMsg(good); err != nil {
				t.Fatal(err)
			}
			answer, err := answers.NextMsg(5 * time.Second)
			if err != nil || len(answer.Data) == 0 {
				t.Fatalf("a did not carry the call: %v", err)
			}
			// The call is carried: b, having read that entry, must not
			// carry it again.
			if err := b.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			again, err := nc.Request(subject+bSpeaker, legit, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Data) != 0 {
				t.Errorf("b carried the call again, at revision %s, after a carried it at %s", again.Data, answer.Data)
			}
			changes, err := b.History(ctx, "x", 0)
			if err != nil {
				t.Fatal(err)
			}
			puts := 0
			for _, ch := range changes {
				for _, op := range ch.Ops {
					puts++
					if op.HandedBy != "h" {
						t.Errorf("the PUT of x at revision %d says it was handed by %q, not h: its entry does not say it carried the call", ch.Revision, op.HandedBy)
					}
				}
			}
			if puts != 1 {
				t.Errorf("x was put %d times by one call; want once", puts)
			}
		})
	}
}
