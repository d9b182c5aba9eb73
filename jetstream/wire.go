package jetstream

import (
	"github.com/nats-io/nats.go"
)

// Header names and values of the wire format (see the package doc).
const (
	HeaderFormat   = "Sharedconfig-Format"
	HeaderKind     = "Sharedconfig-Kind"
	HeaderSnapshot = "Sharedconfig-Snapshot"
	HeaderChunk    = "Sharedconfig-Chunk"
	HeaderWriter   = "Sharedconfig-Writer"
	HeaderSpeaker  = "Sharedconfig-Speaker"

	FormatVersion     = "1"
	KindUpdate        = "update"
	KindSnapshot      = "snapshot"
	KindSnapshotChunk = "snapshot-chunk"
)

// headerRoom is what a message's headers may take of the max payload.
const headerRoom = 1024

func (l *Log) newMsg(kind string, data []byte) *nats.Msg {
	msg := nats.NewMsg(l.subject)
	msg.Data = data
	msg.Header.Set(HeaderFormat, FormatVersion)
	msg.Header.Set(HeaderKind, kind)
	if l.writer != "" {
		msg.Header.Set(HeaderWriter, l.writer)
	}
	return msg
}
