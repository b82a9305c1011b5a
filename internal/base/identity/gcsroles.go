package identity

import (
	"crypto/x509"
	"sort"
	"strings"
)

// The etcd roles of the GCS (see the package doc's table). A certificate's role (its OU)
// decides which one the head grants the certificate's etcd user (GCSRoleOf).
const (
	// GCSRoleRoot is etcd's built-in role: every key, and the management of users, roles
	// and auth itself.
	GCSRoleRoot = "root"
	// GCSRoleNode is what agents and their worker processes get.
	GCSRoleNode = "ray-node"
	// GCSRoleDriver is what drivers get: a node's rights and the job table.
	GCSRoleDriver = "ray-driver"
	// GCSRoleClient is what rayctl with the token gets: read, submit jobs, ask the state API.
	GCSRoleClient = "ray-client"
)

// GCSRoles are the roles the head defines in its GCS, other than etcd's root.
var GCSRoles = []string{GCSRoleNode, GCSRoleDriver, GCSRoleClient}

// GCSRoleOf returns the etcd role of a certificate issued for role, "" for none.
func GCSRoleOf(role string) string {
	switch role {
	case RoleHead, RoleLocal:
		return GCSRoleRoot
	case RoleNode:
		return GCSRoleNode
	case RoleDriver:
		return GCSRoleDriver
	case RoleClient:
		return GCSRoleClient
	}
	return ""
}

// Access is what a GCS role may do with a key.
type Access uint8

const (
	NoAccess  Access = iota // neither read nor write
	ReadOnly                // get, list, watch
	ReadWrite               // and put, delete
)

func (a Access) String() string {
	switch a {
	case ReadOnly:
		return "read"
	case ReadWrite:
		return "read, write"
	}
	return "none"
}

// gcsRule is one row of the table: what each role may do with the keys under prefix (""
// is every key of the namespace no other row names).
type gcsRule struct {
	prefix               string
	node, driver, client Access
}

// gcsTable is the package doc's table. Prefixes are internal/base/gcs's key schema (and
// internal/assembly/agent's joblogs/ and logreq/), spelled here because this package ranks below
// them; a test of package gcs checks the spelling. Rows other than "" must not nest.
var gcsTable = []gcsRule{
	{"", ReadWrite, ReadWrite, ReadOnly},
	{"blobs/", ReadWrite, ReadWrite, ReadWrite},
	{"certs/", ReadOnly, ReadOnly, ReadOnly},
	{"joblogs/", ReadOnly, ReadOnly, ReadOnly},
	{"jobs/", ReadOnly, ReadWrite, ReadOnly},
	{"logreq/", ReadWrite, ReadWrite, ReadWrite},
	{"revoked/", ReadOnly, ReadOnly, ReadOnly},
	{"statereq/", ReadWrite, ReadWrite, ReadWrite},
	{"submissions/", ReadOnly, ReadOnly, ReadWrite},
}

// GCSProtectedPrefixes are the prefixes the table names (every row but the default one),
// sorted.
func GCSProtectedPrefixes() []string {
	var out []string
	for _, r := range gcsTable[1:] {
		out = append(out, r.prefix)
	}
	sort.Strings(out)
	return out
}

func (r gcsRule) access(gcsRole string) Access {
	switch gcsRole {
	case GCSRoleRoot:
		return ReadWrite
	case GCSRoleNode:
		return r.node
	case GCSRoleDriver:
		return r.driver
	case GCSRoleClient:
		return r.client
	}
	return NoAccess
}

// GCSAccess returns what gcsRole may do with key (a key of the cluster's namespace, the
// namespace left out): the row of the longest prefix of key.
func GCSAccess(gcsRole, key string) Access {
	best := gcsTable[0]
	for _, r := range gcsTable[1:] {
		if strings.HasPrefix(key, r.prefix) && len(r.prefix) > len(best.prefix) {
			best = r
		}
	}
	return best.access(gcsRole)
}

// KeyRange is one etcd permission: keys from Key up to, not including, End (End "\x00":
// every key from Key on), readable, and writable when Write.
type KeyRange struct {
	Key, End string
	Write    bool
}

// GCSPermissions returns the etcd permissions of gcsRole in a GCS whose keys live under
// namespace: a read range over the whole namespace (when every row lets the role read)
// and a write range for each stretch of the namespace the role may write, so that
// GCSAccess(gcsRole, k) is ReadWrite exactly where a write range covers namespace+k.
// etcd grants nothing by default: what no range covers is refused. Nil for root (etcd
// lets it do everything) and unknown roles.
func GCSPermissions(gcsRole, namespace string) []KeyRange {
	if gcsRole == GCSRoleRoot || gcsRole == "" {
		return nil
	}
	start, end := namespace, prefixEnd(namespace)
	if namespace == "" {
		start, end = "\x00", "\x00" // etcd: every key (keys are never empty)
	}
	// Segments of the namespace in key order: the stretch before a protected prefix (the
	// default row), the prefix itself (its row), and after the last, the default again.
	type segment struct {
		from, to string
		a        Access
	}
	var segs []segment
	at := start
	for _, p := range GCSProtectedPrefixes() {
		from, to := namespace+p, namespace+prefixEnd(p)
		if at < from {
			segs = append(segs, segment{at, from, gcsTable[0].access(gcsRole)})
		}
		segs = append(segs, segment{from, to, GCSAccess(gcsRole, p)})
		at = to
	}
	if end == "\x00" || at < end {
		segs = append(segs, segment{at, end, gcsTable[0].access(gcsRole)})
	}
	var out []KeyRange
	readAll := true
	for _, s := range segs {
		readAll = readAll && s.a >= ReadOnly
	}
	if readAll {
		out = append(out, KeyRange{Key: start, End: end})
	}
	for _, s := range segs {
		switch {
		case s.a == ReadWrite && len(out) > 0 && out[len(out)-1].Write && out[len(out)-1].End == s.from:
			out[len(out)-1].End = s.to // adjacent: one range
		case s.a == ReadWrite:
			out = append(out, KeyRange{Key: s.from, End: s.to, Write: true})
		case s.a == ReadOnly && !readAll:
			out = append(out, KeyRange{Key: s.from, End: s.to})
		}
	}
	return out
}

// prefixEnd is the etcd range end of a prefix (gcs.PrefixEnd; "\x00" for the empty one).
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\x00"
}

// userSep separates a certificate's name from its serial number in its common name.
const userSep = ":"

// GCSUser is the etcd user of a certificate: its common name, which for every certificate
// this package signs is "<name>:<serial>" (unique per certificate, so revoking one deletes
// exactly its user; see CA.Sign). etcd takes the user of a TLS client from its
// certificate's common name.
func GCSUser(cert *x509.Certificate) string { return cert.Subject.CommonName }

// SerialOfUser returns the serial (SerialText form) a GCS user name ends with, if it has
// the form GCSUser gives this package's certificates.
func SerialOfUser(user string) (string, bool) {
	i := strings.LastIndex(user, userSep)
	if i <= 0 {
		return "", false
	}
	n, err := ParseSerial(user[i+1:])
	if err != nil || SerialText(n) != user[i+1:] {
		return "", false
	}
	return user[i+1:], true
}

// NameOf is the name a certificate was issued for (Request.Name): its common name without
// the serial this package appends (its own, or the first one's of a renewed certificate).
func NameOf(cert *x509.Certificate) string {
	cn := cert.Subject.CommonName
	if first, ok := SerialOfUser(cn); ok {
		if name := strings.TrimSuffix(cn, userSep+first); name != "" {
			return name
		}
	}
	return cn
}
