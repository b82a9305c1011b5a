package identity

import (
	"strings"
	"testing"
	"time"
)

// The role table, row by row: what each GCS role may do with a key of each kind.
func TestGCSAccessTable(t *testing.T) {
	const r, rw, none = ReadOnly, ReadWrite, NoAccess
	for _, c := range []struct {
		key                        string
		root, node, driver, client Access
	}{
		{"nodes/n1", rw, rw, rw, r},
		{"objpages/x/0000000000000001", rw, rw, rw, r},
		{"actorlog/a/00000000000000000001", rw, rw, rw, r},
		{"jobworkers/j/a", rw, rw, rw, r},
		{"statereply/q/n/end", rw, rw, rw, r},
		{"statereq/q", rw, rw, rw, rw},
		{"jobs/j", rw, r, rw, r},
		{"jobalive/j", rw, rw, rw, r},
		{"submissions/s", rw, r, r, rw},
		{"joblogs/s/end", rw, r, r, r},
		{"revoked/1f", rw, r, r, r},
		{"certs/1f", rw, r, r, r},
		{"certs", rw, rw, rw, r}, // not under certs/: a key like any other
		{"some-future-table/x", rw, rw, rw, r},
	} {
		for _, g := range []struct {
			role string
			want Access
		}{{GCSRoleRoot, c.root}, {GCSRoleNode, c.node}, {GCSRoleDriver, c.driver}, {GCSRoleClient, c.client}, {"nobody", none}} {
			if got := GCSAccess(g.role, c.key); got != g.want {
				t.Errorf("%s on %q: %v, want %v", g.role, c.key, got, g.want)
			}
		}
	}
}

// Every certificate role maps to the GCS role the table means for it.
func TestGCSRoleOf(t *testing.T) {
	for role, want := range map[string]string{RoleHead: GCSRoleRoot, RoleLocal: GCSRoleRoot, RoleNode: GCSRoleNode,
		RoleDriver: GCSRoleDriver, RoleClient: GCSRoleClient, "": "", "admin": ""} {
		if got := GCSRoleOf(role); got != want {
			t.Errorf("GCSRoleOf(%q) = %q, want %q", role, got, want)
		}
	}
}

// covered reports what the ranges grant on key (a full key, namespace included).
func covered(ranges []KeyRange, key string) Access {
	a := NoAccess
	for _, kr := range ranges {
		if key < kr.Key || (kr.End != "\x00" && key >= kr.End) {
			continue
		}
		if kr.Write {
			a = ReadWrite
		} else if a == NoAccess {
			a = ReadOnly
		}
	}
	return a
}

// The etcd permissions GCSPermissions makes grant exactly what GCSAccess says, for keys
// around every boundary of the table, with and without a namespace, and nothing outside
// the namespace.
func TestGCSPermissionsMatchTable(t *testing.T) {
	var keys []string
	for _, p := range GCSProtectedPrefixes() {
		base := strings.TrimSuffix(p, "/")
		keys = append(keys, p, p+"x", p+"\xff", base, base+".", base+"0", base+"0x", p[:1])
	}
	keys = append(keys, "\x00", "a", "nodes/n", "zzz", "\xff\xff", "0")
	for _, ns := range []string{"", "cluster-a/", "ns"} {
		for _, role := range append([]string{"nobody"}, GCSRoles...) {
			perms := GCSPermissions(role, ns)
			for _, kr := range perms {
				if kr.Key == "" || (kr.End != "\x00" && kr.End <= kr.Key) {
					t.Errorf("%s in %q: an empty or invalid range %+v", role, ns, kr)
				}
			}
			for _, k := range keys {
				if got, want := covered(perms, ns+k), GCSAccess(role, k); got != want {
					t.Errorf("%s in namespace %q, key %q: the permissions grant %v, the table %v (%+v)", role, ns, k, got, want, perms)
				}
			}
			if ns != "" {
				for _, outside := range []string{"other/nodes/n", "cluster-b/jobs/j", "\x00"} {
					if got := covered(perms, outside); got != NoAccess {
						t.Errorf("%s in namespace %q may %v %q, outside it", role, ns, got, outside)
					}
				}
			}
		}
	}
	if GCSPermissions(GCSRoleRoot, "") != nil {
		t.Error("root needs no permissions")
	}
}

// A certificate's common name is "<name>:<serial>": its GCS user, unique per certificate;
// NameOf and SerialOfUser take it apart.
func TestGCSUser(t *testing.T) {
	ca, err := NewCA("t", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := ca.Issue(Request{Name: "agent-1", Role: RoleNode})
	b, _ := ca.Issue(Request{Name: "agent-1", Role: RoleNode})
	if a.User() == b.User() {
		t.Fatalf("two certificates share the GCS user %q", a.User())
	}
	if a.Name() != "agent-1" || NameOf(a.Leaf()) != "agent-1" {
		t.Fatalf("name %q", a.Name())
	}
	serial, ok := SerialOfUser(a.User())
	if !ok || serial != SerialText(a.Leaf().SerialNumber) {
		t.Fatalf("SerialOfUser(%q) = %q %v", a.User(), serial, ok)
	}
	for _, u := range []string{"root", "agent-1", ":1f", "a:", "a:xyz", "a:0f"} {
		if s, ok := SerialOfUser(u); ok {
			t.Errorf("SerialOfUser(%q) = %q: not a certificate's user", u, s)
		}
	}
	if _, err := ca.Issue(Request{Name: "a:b", Role: RoleNode}); err == nil {
		t.Error("a name with ':' was accepted")
	}
}
