package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/base/identity"
)

// The client certificate a join token gets rayctl (identity.RoleClient, valid
// identity.ClientCertValidity) is kept in the user's cache directory,
// $XDG_CACHE_HOME/ray-go/client/<cluster>/ (directories 0700, files 0600, like the
// agents' credentials), and used again by the next command with the token of that cluster
// until an hour before it expires (the head is still asked whether the token is current, a
// request that issues and records nothing): so rayctl run in a loop, or by CI, does not make the head
// issue, record and give a GCS user to a certificate per command. <cluster> is a hash of
// the token (its secret too: after `rayctl token rotate` the old token finds no certificate
// and is refused, as without a cache) and of the join address. A cached certificate is used only when
// its directory and files are private to the user, it chains to that CA and is a client's;
// a cached certificate the cluster refuses (revoked) is dropped and the token asked again.

// clientCertMargin is how long before its expiry a cached certificate is no longer used.
const clientCertMargin = time.Hour

// clientCacheDir is the cache directory of the certificates of the cluster whose CA tok
// pins, joined at joinAddr; "" when the user has no cache directory.
func clientCacheDir(tok identity.Token, joinAddr string) string {
	base, err := os.UserCacheDir()
	if err != nil || base == "" {
		return ""
	}
	h := sha256.New()
	h.Write(tok.Secret[:]) // a rotated token does not find the old one's certificate
	h.Write(tok.CAHash[:])
	h.Write([]byte(joinAddr))
	return filepath.Join(base, "ray-go", "client", hex.EncodeToString(h.Sum(nil))[:32])
}

// cachedClientCert returns the cached client certificate of the cluster, if there is a
// usable one.
func cachedClientCert(tok identity.Token, joinAddr string) *identity.Credentials {
	dir := clientCacheDir(tok, joinAddr)
	if dir == "" || !privateToMe(dir) {
		return nil
	}
	creds, err := identity.Load(identity.FilesIn(dir))
	if err != nil || creds.CAFingerprint() != tok.CAHash || creds.Role() != identity.RoleClient ||
		time.Until(creds.Leaf().NotAfter) < clientCertMargin {
		return nil
	}
	return creds
}

// cacheClientCert keeps creds for the next commands (best effort: a cache that cannot be
// written is no error), and removes the other clusters' expired ones.
func cacheClientCert(tok identity.Token, joinAddr string, creds *identity.Credentials) {
	dir := clientCacheDir(tok, joinAddr)
	if dir == "" {
		return
	}
	root := filepath.Dir(dir)
	for _, d := range []string{filepath.Dir(root), root} {
		if err := identity.MkdirPrivate(d); err != nil {
			return
		}
	}
	if _, err := creds.Save(dir); err != nil {
		_ = os.RemoveAll(dir)
		return
	}
	entries, _ := os.ReadDir(root)
	if len(entries) > 64 {
		entries = entries[:64] // bounded work per command
	}
	for _, e := range entries {
		other := filepath.Join(root, e.Name())
		if other == dir || !e.IsDir() {
			continue
		}
		if c, err := identity.Load(identity.FilesIn(other)); err != nil || time.Now().After(c.Leaf().NotAfter) {
			_ = os.RemoveAll(other)
		}
	}
}

// dropClientCert forgets the cached certificate of the cluster; it reports whether there
// was one.
func dropClientCert(tok identity.Token, joinAddr string) bool {
	dir := clientCacheDir(tok, joinAddr)
	if dir == "" {
		return false
	}
	if _, err := os.Stat(dir); err != nil {
		return false
	}
	return os.RemoveAll(dir) == nil
}

// privateToMe reports whether dir and everything in it are this user's and private
// (directories 0700, files 0600).
func privateToMe(dir string) bool {
	for _, p := range []string{dir, filepath.Dir(dir)} {
		info, err := os.Lstat(p)
		if err != nil || !info.IsDir() {
			return false
		}
		if st, ok := info.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			return false
		}
	}
	bad, _, err := identity.NotPrivate(dir)
	return err == nil && len(bad) == 0
}

// dropCachedCert forgets the cached client certificate connect used for the cluster at
// addr, if it used one (a token, and no credentials that take precedence over it).
func dropCachedCert(c *ucli.Context, addr []string) bool {
	tok, ok, err := tokenOf(c)
	if !ok || err != nil || c.Bool("insecure") || c.String("gcs-ca") != "" {
		return false
	}
	joinAddr := c.String("join-address")
	if joinAddr == "" {
		if joinAddr, err = identity.JoinAddress(addr[0]); err != nil {
			return false
		}
	}
	return dropClientCert(tok, joinAddr)
}
