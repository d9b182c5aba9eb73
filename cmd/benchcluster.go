package cmd

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/localserver"
)

// benchClusterSize is how many nodes "bench --cluster" starts: the fewest
// that keep an R3 stream writable with one node down.
const benchClusterSize = 3

// startBenchCluster starts a JetStream cluster of n embedded servers on
// loopback ports, each with its store under dir, and waits until it has a
// meta leader. It returns the client URLs and a function that stops them.
func startBenchCluster(dir string, n int) (urls string, stop func(), err error) {
	clientPorts, err := localserver.FreePorts(n)
	if err != nil {
		return "", nil, err
	}
	clusterPorts, err := localserver.FreePorts(n)
	if err != nil {
		return "", nil, err
	}
	var routes, clientURLs []string
	for _, p := range clusterPorts {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	var servers []*localserver.Server
	stop = func() {
		for _, s := range servers {
			s.Shutdown()
		}
	}
	for i := range n {
		s, err := localserver.StartServer(localserver.ServerOptions{
			Listen:        fmt.Sprintf("127.0.0.1:%d", clientPorts[i]),
			DataDir:       filepath.Join(dir, fmt.Sprintf("node%d", i+1)),
			ServerName:    fmt.Sprintf("bench%d", i+1),
			ClusterName:   "sharedconfig-bench",
			ClusterListen: fmt.Sprintf("127.0.0.1:%d", clusterPorts[i]),
			Routes:        routes,
		})
		if err != nil {
			stop()
			return "", nil, fmt.Errorf("starting cluster node %d: %w", i+1, err)
		}
		servers = append(servers, s)
		clientURLs = append(clientURLs, s.ClientURL())
	}
	for _, s := range servers {
		if err := s.WaitJetStreamReady(30 * time.Second); err != nil {
			stop()
			return "", nil, err
		}
	}
	return strings.Join(clientURLs, ","), stop, nil
}
