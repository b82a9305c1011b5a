package codec_test

import (
	"errors"
	"math/big"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ray-go/ray/objects/codec"
)

type lossOK struct {
	N     int
	Names []string
	ByKey map[string]*lossInner
	At    time.Time
	Big   *big.Int
	Grid  [3][2]float64
	lossEmbedded
	Next *lossOK // a type that holds itself
}

type lossInner struct{ A, B int64 }

type lossEmbedded struct{ E string } // unexported type, exported field: promoted and encoded

type lossMutex struct {
	N int
	//lint:ignore U1000 an unexported field is what the test is about
	mu sync.Mutex
}

type lossSkipped struct {
	N     int
	Cache []byte `cbor:"-"`
}

type lossIface struct{ V any }

type lossDeep struct{ Items []map[string]lossMutex }

type selfMarshaler struct{ v int }

func (s selfMarshaler) MarshalBinary() ([]byte, error) { return []byte{byte(s.v)}, nil }

type selfCodec struct{ v int }

func (s selfCodec) MarshalBinary() ([]byte, error) { return []byte{byte(s.v)}, nil }
func (s *selfCodec) UnmarshalBinary(b []byte) error {
	s.v = int(b[0])
	return nil
}

func TestLossless(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string // "" for lossless, else a part of the error
	}{
		{lossOK{}, ""},
		{struct{}{}, ""},
		{int64(0), ""},
		{[]byte(nil), ""},
		{struct{ S selfCodec }{}, ""},
		{lossMutex{}, ".mu (sync.Mutex): unexported fields are not encoded"},
		{lossSkipped{}, `.Cache ([]uint8): a field tagged "-" is not encoded`},
		{lossIface{}, ".V (interface {}): an interface decodes as a generic value"},
		{lossDeep{}, ".Items[][].mu (sync.Mutex)"},
		{struct{ S selfMarshaler }{}, "BinaryMarshaler but not encoding.BinaryUnmarshaler"},
		{struct{ C chan int }{}, "channels cannot be sent"},
	} {
		typ := reflect.TypeOf(tc.v)
		err := codec.Lossless(typ)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v; want lossless", typ, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v; want an error containing %q", typ, err, tc.want)
		}
	}
	var le *codec.LossError
	if err := codec.Lossless(reflect.TypeFor[lossMutex]()); !errors.As(err, &le) || le.Path != ".mu" {
		t.Errorf("lossMutex: %#v; want a *LossError at .mu", err)
	}
}

// TestLosslessRoundTrips: a value of a type Lossless accepts comes back equal.
func TestLosslessRoundTrips(t *testing.T) {
	v := lossOK{N: 7, Names: []string{"a", ""}, ByKey: map[string]*lossInner{"x": {1, 2}, "y": nil},
		At: time.Date(2026, 11, 26, 9, 0, 0, 5, time.UTC), Big: big.NewInt(-3), Grid: [3][2]float64{{1, 2}, {3, 4}},
		lossEmbedded: lossEmbedded{E: "e"}, Next: &lossOK{N: 8}}
	if err := codec.Lossless(reflect.TypeOf(v)); err != nil {
		t.Fatal(err)
	}
	b, err := codec.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := codec.Unmarshal[lossOK](b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, v) {
		t.Fatalf("round trip: %+v; want %+v", got, v)
	}
}
