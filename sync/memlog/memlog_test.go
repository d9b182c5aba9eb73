package memlog_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	statesync "github.com/sharedconfig/sharedconfig/sync"
	"github.com/sharedconfig/sharedconfig/sync/memlog"
)

// The ID an append returns is its entry's, even when the log is created
// again at that moment: no two appends are told the same ID (an ID names
// one entry of one incarnation).
func TestAppendIDsUniqueAcrossRecreate(t *testing.T) {
	l := memlog.New("ids")
	const writers, appends = 4, 2000
	ids := make([][]string, writers)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var recreating sync.WaitGroup
	recreating.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				l.Recreate()
			}
		}
	})
	for w := range writers {
		wg.Go(func() {
			for i := range appends {
				at, err := l.AppendAfter(context.Background(), statesync.Position{Revision: statesync.AnyRevision}, fmt.Appendf(nil, "%d.%d", w, i))
				if err != nil {
					t.Error(err)
					return
				}
				ids[w] = append(ids[w], at.ID)
			}
		})
	}
	wg.Wait()
	close(stop)
	recreating.Wait()
	seen := map[string]bool{}
	for _, list := range ids {
		for _, id := range list {
			if seen[id] {
				t.Fatalf("two appends were told ID %s", id)
			}
			seen[id] = true
		}
	}
}
