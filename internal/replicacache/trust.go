package replicacache

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Trust is what a writer's processes learned of other writers' words about
// their slow tries (turns.Trust), kept beside the config's cache file so
// that the next process starts from it: made-up words then cost each
// process less, not the whole grace anew.
type Trust struct {
	MostMS int64     `json:"most_ms"`
	At     time.Time `json:"at"`
	// MadeUp names the writers whose claims came to nothing lately: the
	// evidence, when there are several, that the words were made up.
	MadeUp []string `json:"made_up,omitempty"`
}

// maxMadeUp bounds the names a trust file holds.
const maxMadeUp = 32

// TrustPath is the trust file that goes with the cache file at path.
func TrustPath(path string) string { return strings.TrimSuffix(path, ".cache") + ".trust" }

// LoadTrust reads the trust file at path, if it can be trusted as a cache
// file is (it is this user's, and nobody else may read or write it).
func LoadTrust(path string) (Trust, error) {
	f, size, err := open(path)
	if err != nil {
		return Trust{}, err
	}
	defer f.Close()
	if size > 4096 {
		return Trust{}, fmt.Errorf("%w: %s is larger than a trust file", ErrUntrusted, path)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return Trust{}, err
	}
	var t Trust
	if err := json.Unmarshal(data, &t); err != nil || t.MostMS < 0 || t.At.IsZero() || len(t.MadeUp) > maxMadeUp {
		return Trust{}, fmt.Errorf("%w: %s is not a trust file", ErrUntrusted, path)
	}
	return t, nil
}

// SaveTrust writes t to the trust file at path, whole or not at all, mode
// 0600.
func SaveTrust(path string, t Trust) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return writeWhole(path, data)
}
