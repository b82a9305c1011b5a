package membership

import (
	"reflect"
	"testing"

	"github.com/ray-go/ray/internal/base/fuzzing"
)

func memberSeeds() [][]any {
	good := MemberInfo{ID: "sys-1#2", NodeID: "n1", Address: "127.0.0.1:4000", Host: "127.0.0.1", Port: 4000, Kinds: []string{"worker", "store"}}
	return [][]any{
		{good.marshal()},
		{MemberInfo{ID: "x", Address: "h:1", Port: 1}.marshal()},
		{[]byte(`{"id":"x","address":"h:1","port":4294971296}`)}, // a port past int32
		{[]byte(`{"id":"x","address":"h:1","port":-1}`)},
		{[]byte(`{"id":"","address":"h:1","port":1}`)},
		{[]byte(`{"id":"x","address":"h:1","port":1,"kinds":null}`)},
		{[]byte(`[]`)},
		{[]byte{}},
	}
}

func TestFuzzMemberRecordCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzMemberRecord", memberSeeds()) }

// FuzzMemberRecord feeds arbitrary member records (read from etcd by every member's
// provider) to their decoder. It must fail or return a member with an ID, an address and
// a port protoactor can hold; never panic; allocate in proportion to the record; and what
// it accepts must encode to a record that decodes the same.
func FuzzMemberRecord(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		var (
			m   MemberInfo
			err error
		)
		fuzzing.CheckAlloc(t, 64*uint64(len(b))+64<<10, "unmarshalMember", func() { m, err = unmarshalMember(b, 7) })
		if err != nil {
			return
		}
		if m.ID == "" || m.Address == "" || int(int32(m.Port)) != m.Port || m.Rev != 7 {
			t.Fatalf("accepted %+v", m)
		}
		_ = m.member()
		again, err := unmarshalMember(m.marshal(), 7)
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("re-encoded member %+v decodes to %+v, %v", m, again, err)
		}
	})
}
