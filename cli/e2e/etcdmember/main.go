// Command etcdmember runs one member of a multi-member etcd cluster (the embedded server of
// internal/base/gcs/etcdstore) until it is killed: the GCS failover test of cli/e2e starts three
// and kills the raft leader with SIGKILL, as a machine failure would. It prints "ready" once
// the member serves, and "leader" or "follower" on each line read from stdin. With -ca,
// -cert and -key its client and peer URLs speak mutual TLS, as a production etcd should.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/identity"
)

func main() {
	name := flag.String("name", "m0", "member name")
	dir := flag.String("dir", "", "data directory")
	client := flag.Int("client-port", 0, "client port on 127.0.0.1")
	peer := flag.Int("peer-port", 0, "peer port on 127.0.0.1")
	cluster := flag.String("initial-cluster", "", "name=https://127.0.0.1:port,... of every member")
	var tls identity.Files
	flag.StringVar(&tls.CA, "ca", "", "the CA certificate clients and peers must be signed by (empty: no TLS)")
	flag.StringVar(&tls.Cert, "cert", "", "this member's certificate (server, and client towards its peers)")
	flag.StringVar(&tls.Key, "key", "", "its key")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	e, err := etcdstore.StartEmbedded(ctx, etcdstore.EmbedConfig{Dir: *dir, Name: *name,
		ClientPort: *client, PeerPort: *peer, InitialCluster: *cluster, TLS: tls})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdmember:", err)
		os.Exit(1)
	}
	defer e.Close()
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if e.IsLeader() {
			fmt.Println("leader")
		} else {
			fmt.Println("follower")
		}
	}
}
