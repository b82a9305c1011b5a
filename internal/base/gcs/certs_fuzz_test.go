package gcs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/fuzzing"
)

func certSeeds() [][]any {
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	c, _ := json.Marshal(CertRecord{Serial: "6bbaa9086e094b3a", Name: "agent-fef1f941a44bc4b6", Role: "node", AgentID: "fef1f941a44bc4b6", NotAfter: at.AddDate(1, 0, 0), IssuedAt: at})
	r, _ := json.Marshal(RevokedRecord{Serial: "6bbaa9086e094b3a", RevokedAt: at})
	return [][]any{{c}, {r}, {[]byte("{}")}, {[]byte(`{"serial":` + strings.Repeat("[", 100) + `}`)}, {[]byte{}}}
}

func TestFuzzDecodeCertRecordCorpus(t *testing.T) {
	fuzzing.Corpus(t, "FuzzDecodeCertRecord", certSeeds())
}

// FuzzDecodeCertRecord feeds arbitrary values to the readers of certs/ and revoked/
// records: they fail or decode, never panic, and allocate within a bound of the input's
// size (they refuse what is over maxCertRecord before decoding).
func FuzzDecodeCertRecord(f *testing.F) {
	f.Fuzz(func(t *testing.T, value []byte) {
		fuzzing.CheckAlloc(t, 64*uint64(min(len(value), maxCertRecord+1))+64<<10, "DecodeCertRecord", func() {
			_, _ = DecodeCertRecord(value)
			_, _ = DecodeRevokedRecord(value)
		})
		if len(value) > maxCertRecord {
			if _, err := DecodeCertRecord(value); err == nil {
				t.Fatalf("a record of %d bytes was accepted", len(value))
			}
		}
	})
}
