package jetstream

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	statesync "github.com/sharedconfig/sharedconfig/sync"
)

// Header names and values of the wire format (see the package doc).
const (
	HeaderFormat   = "Sharedconfig-Format"
	HeaderKind     = "Sharedconfig-Kind"
	HeaderSnapshot = "Sharedconfig-Snapshot"
	HeaderChunk    = "Sharedconfig-Chunk"
	HeaderWriter   = "Sharedconfig-Writer"
	HeaderSpeaker  = "Sharedconfig-Speaker"
	HeaderCarried  = "Sharedconfig-Carried"
	HeaderPurged   = "Sharedconfig-Purged"
	// HeaderUnconditional marks an update appended with no condition.
	HeaderUnconditional = "Sharedconfig-Unconditional"

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

// carriedHeader is the value of HeaderCarried for an entry carrying
// carried: "id:start:end" for each call, comma-separated, and ":" and the
// base64 (URL alphabet, unpadded) of the name its writer goes by, if any.
func carriedHeader(carried []statesync.Carried) string {
	b := make([]byte, 0, 32*len(carried))
	for i, c := range carried {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(b, c.ID...), ':')
		b = append(strconv.AppendInt(b, int64(c.Start), 10), ':')
		b = strconv.AppendInt(b, int64(c.End), 10)
		if c.Writer != "" {
			b = base64.RawURLEncoding.AppendEncode(append(b, ':'), []byte(c.Writer))
		}
	}
	return string(b)
}

// maxCarriedRead bounds the calls a read takes from an entry's header,
// and maxCarriedWriter the name of the writer each names: anyone can write
// one.
const (
	maxCarriedRead   = 64
	maxCarriedWriter = 1024
)

// parseCarried reads a HeaderCarried value; nil if it is not one.
func parseCarried(v string) []statesync.Carried {
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	if len(parts) > maxCarriedRead {
		return nil
	}
	carried := make([]statesync.Carried, 0, len(parts))
	for _, p := range parts {
		f := strings.Split(p, ":")
		if len(f) != 3 && len(f) != 4 || f[0] == "" || len(f[0]) > 32 {
			return nil
		}
		var writer []byte
		if len(f) == 4 {
			var err error
			if writer, err = base64.RawURLEncoding.DecodeString(f[3]); err != nil || len(writer) > maxCarriedWriter || !utf8.Valid(writer) {
				return nil
			}
		}
		start, err1 := strconv.ParseUint(f[1], 10, 31)
		end, err2 := strconv.ParseUint(f[2], 10, 31)
		if err1 != nil || err2 != nil || start > end {
			return nil
		}
		carried = append(carried, statesync.Carried{ID: f[0], Start: int(start), End: int(end), Writer: string(writer)})
	}
	return carried
}
