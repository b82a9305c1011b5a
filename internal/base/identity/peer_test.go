package identity

import (
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"
)

// peerServer serves PeerServerTLS of creds on loopback (see tlsServer).
func peerServer(t *testing.T, creds *Credentials) (string, <-chan error) {
	t.Helper()
	return tlsServer(t, creds.PeerServerTLS())
}

// tlsServer serves cfg on loopback until the test ends; each connection that completes
// the handshake gets "ok", and the handshake errors go to errs (dropped when it is full).
func tlsServer(t *testing.T, cfg *tls.Config) (string, <-chan error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	errs := make(chan error, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := tls.Server(c, cfg)
				_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
				if err := tc.Handshake(); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
				tc.Write([]byte("ok"))
			}()
		}
	}()
	return l.Addr().String(), errs
}

func peerDial(addr string, cfg *tls.Config) error {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2)
	if _, err := c.Read(buf); err != nil {
		return err
	}
	if string(buf) != "ok" {
		return errors.New("unexpected answer " + string(buf))
	}
	return nil
}

func issue(t *testing.T, ca *CA, name, role string, hosts ...string) *Credentials {
	t.Helper()
	c, err := ca.Issue(Request{Name: name, Role: role, Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPeerTLSAcceptsMembersOfTheCluster(t *testing.T) {
	ca := newCA(t)
	for _, role := range []string{RoleHead, RoleNode, RoleDriver, RoleLocal} {
		// The server's certificate names another host than the one dialed: members are
		// known by the CA, not by address.
		srv := issue(t, ca, "srv-"+role, role, "10.1.2.3")
		addr, _ := peerServer(t, srv)
		for _, client := range []string{RoleNode, RoleDriver, RoleHead, RoleLocal} {
			if err := peerDial(addr, issue(t, ca, "c-"+client, client).PeerClientTLS()); err != nil {
				t.Errorf("%s server, %s client: %v", role, client, err)
			}
		}
	}
}

func TestPeerTLSRefusesStrangers(t *testing.T) {
	ca, other := newCA(t), newCA(t)
	srv := issue(t, ca, "srv", RoleNode)
	addr, errs := peerServer(t, srv)
	noCert := issue(t, ca, "nocert", RoleNode).PeerClientTLS()
	noCert.GetClientCertificate = nil
	for name, cfg := range map[string]*tls.Config{
		"a peer of another CA":      issue(t, other, "foreign", RoleNode).PeerClientTLS(),
		"a client-role certificate": issue(t, ca, "rayctl", RoleClient).PeerClientTLS(),
		"no certificate":            noCert,
		"a plain TLS client":        {InsecureSkipVerify: true},
		"another CA's GCS client":   issue(t, other, "etcd", RoleHead).ClientTLS(),
	} {
		if err := peerDial(addr, cfg); err == nil {
			t.Errorf("%s was accepted", name)
		}
		select {
		case err := <-errs:
			t.Logf("%s: server says %v", name, err)
		case <-time.After(5 * time.Second):
			t.Errorf("%s: the server reported no failed handshake", name)
		}
	}

	// The other direction: a member does not talk to a server of another CA, nor to a
	// server holding a client-role certificate of its own CA.
	me := issue(t, ca, "me", RoleNode).PeerClientTLS()
	for name, creds := range map[string]*Credentials{
		"a server of another CA":      issue(t, other, "foreign-srv", RoleNode),
		"a server with a client role": issue(t, ca, "client-srv", RoleClient),
	} {
		addr, _ := peerServer(t, creds)
		err := peerDial(addr, me)
		if !errors.Is(err, ErrNotAPeer) {
			t.Errorf("%s: dial error %v, want ErrNotAPeer", name, err)
		}
	}
}
