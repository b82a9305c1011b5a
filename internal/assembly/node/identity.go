package node

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/ray-go/ray/internal/base/identity"
)

// localCreds are a local-mode node's credentials: a CA that lives only in this process's
// memory, and one certificate of it (the embedded etcd's, and the probe's).
type localCreds struct {
	*identity.Credentials
	files identity.Files
}

// localCredentials makes a CA and a certificate for 127.0.0.1, and writes the certificate
// and its key to dir/tls (0700; files 0600) for etcd. The CA key is never written: nothing
// else can ever be signed, and the credentials die with the node's directory.
func localCredentials(dir, name string) (localCreds, error) {
	ca, err := identity.NewCA("ray-go local "+name, time.Now())
	if err != nil {
		return localCreds{}, fmt.Errorf("node: local credentials: %w", err)
	}
	c, err := ca.Issue(identity.Request{Name: name, Role: identity.RoleLocal})
	if err != nil {
		return localCreds{}, fmt.Errorf("node: local credentials: %w", err)
	}
	files, err := c.Save(filepath.Join(dir, "tls"))
	if err != nil {
		return localCreds{}, fmt.Errorf("node: local credentials: %w", err)
	}
	return localCreds{Credentials: c, files: files}, nil
}
