package bustest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Cluster is a NATS cluster of real servers (the NATS server as a library)
// on 127.0.0.1, joined by routes, with clustered JetStream.
type Cluster struct {
	Servers []*server.Server
}

// URL is the comma list of every server's client URL (what -nats.url takes).
func (c *Cluster) URL() string {
	urls := make([]string, 0, len(c.Servers))
	for _, s := range c.Servers {
		urls = append(urls, s.ClientURL())
	}
	return strings.Join(urls, ",")
}

// Index is the index of the server whose client URL is url, or -1.
func (c *Cluster) Index(url string) int {
	for i, s := range c.Servers {
		if s.ClientURL() == url {
			return i
		}
	}
	return -1
}

// Kill stops server i at once (its routes and clients drop).
func (c *Cluster) Kill(i int) {
	c.Servers[i].Shutdown()
	c.Servers[i].WaitForShutdown()
}

// StartCluster starts n servers forming one cluster with JetStream (store
// in t.TempDir()), waits until JetStream answers through every server, and
// shuts them down in t.Cleanup.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	ports := make([]int, n)
	routes := make([]string, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", ports[i])
	}
	c := &Cluster{}
	for i := range n {
		opts := &server.Options{
			ServerName: fmt.Sprintf("rcamesh-test-%d", i),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			NoSigs:     true,
			MaxPayload: 8 << 20,
			Cluster: server.ClusterOpts{
				Name: "rcamesh-test",
				Host: "127.0.0.1",
				Port: ports[i],
			},
			Routes: server.RoutesFromStr(strings.Join(routes, ",")),
		}
		srv, err := server.NewServer(opts)
		if err != nil {
			t.Fatalf("bustest: cluster server %d: %v", i, err)
		}
		go srv.Start()
		c.Servers = append(c.Servers, srv)
		t.Cleanup(func() {
			srv.Shutdown()
			srv.WaitForShutdown()
		})
	}
	for i, srv := range c.Servers {
		if !srv.ReadyForConnections(30 * time.Second) {
			t.Fatalf("bustest: cluster server %d not ready", i)
		}
	}
	// JetStream answers once the meta group has a leader.
	deadline := time.Now().Add(60 * time.Second)
	for _, srv := range c.Servers {
		for {
			err := jsReady(srv.ClientURL())
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("bustest: clustered JetStream not ready via %s: %v", srv.ClientURL(), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return c
}

func jsReady(url string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}
