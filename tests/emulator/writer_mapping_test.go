package emulator

import (
	"strconv"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
)

// isEPKFormat is the mapping between the lease formats the embedded server
// writes (read in the processors' sources) and what the scaler's decoder
// makes of them: a lease of a partition key range, or of an EPK range. The
// two sides have their own vocabularies; this table is where they meet.
var isEPKFormat = map[leaseFormat]bool{
	dotNetV0:        false,
	dotNetV1:        true,
	javaV0:          false,
	javaV1:          true,
	dotNetV2Library: false,
}

// Every lease the server's writer writes, in every format and mode its
// processor has, decodes to what the writer meant: the same id and token,
// the EPK range of EPK leases, the checkpoint, the owner and the mode.
func TestWriterAndDecoderAgreeOnEachFormat(t *testing.T) {
	if len(isEPKFormat) != len(leaseFormats) {
		t.Fatalf("the mapping names %d formats, the writer writes %d", len(isEPKFormat), len(leaseFormats))
	}
	for _, format := range leaseFormats {
		modes := []changeFeedMode{latestVersion}
		if format.HasAllVersionsAndDeletes() {
			modes = append(modes, allVersionsAndDeletes)
		}
		for _, mode := range modes {
			t.Run(string(format)+"/"+mode.String(), func(t *testing.T) {
				env := newCosmosEnvInMode(t, 2, format, mode)
				env.writeToRange(t, "0", 7)
				checkpoint := env.monitored.LSN("0") - 3
				if err := env.processor.Checkpoint(env.tokens[0], checkpoint); err != nil {
					t.Fatal(err)
				}
				if err := env.processor.SetOwner(env.tokens[1], "host-b"); err != nil {
					t.Fatal(err)
				}
				s, seen := newObservedScaler(t, scalerConfig(env.metadata(), keyAuth(env.server)))
				poll(t, s)
				estimates := seen()
				if len(estimates) != 1 || estimates[0].Err != nil {
					t.Fatalf("estimates %+v", estimates)
				}
				got := map[string]decodedLease{}
				for _, l := range estimates[0].Leases {
					got[l.Token] = decodedLease{l.CosmosDBLease, l.ID, l.Owner}
				}
				ranges := env.monitored.Ranges()
				if len(got) != len(env.tokens) || len(ranges) != len(env.tokens) {
					t.Fatalf("decoded %d leases %+v, the writer wrote %v", len(got), got, env.tokens)
				}
				for i, token := range env.tokens {
					want := decodedLease{ID: env.processor.LeaseID(token), CosmosDBLease: azure.CosmosDBLease{
						Token:                 token,
						Continuation:          `"` + strconv.FormatInt(env.monitored.LSN(ranges[i].ID), 10) + `"`, // CreateLeases(true)
						AllVersionsAndDeletes: mode == allVersionsAndDeletes,
					}}
					if i == 0 {
						want.Continuation = `"` + strconv.FormatInt(checkpoint, 10) + `"`
					} else {
						want.Owner = "host-b"
					}
					if isEPKFormat[format] != format.EPK() {
						t.Fatalf("the writer says EPK %v for %s, the mapping %v", format.EPK(), format, isEPKFormat[format])
					}
					if isEPKFormat[format] {
						want.EPK, want.Min, want.Max = true, ranges[i].MinInclusive, ranges[i].MaxExclusive
					}
					if got[token] != want {
						t.Errorf("lease %s decoded as\n%+v\nthe writer wrote\n%+v", token, got[token], want)
					}
				}
			})
		}
	}
}
