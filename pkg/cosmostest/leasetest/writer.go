// Package leasetest writes lease documents as the change feed processors
// do, into containers of a cosmostest server: the client side of a lease
// container, kept out of the server. It reaches the server only through its
// exported API (Container, Database, Account, PartitionKeyRange).
package leasetest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
)

// Writer writes the lease documents a change feed processor of one library
// (Format, a cosmostest.LeaseFormat) keeps in its lease container for a
// monitored container: DotNetV0 and DotNetV1 as the .NET v3 SDK and the
// Azure Functions trigger write them, JavaV0 and JavaV1 as the Java v4 SDK does, DotNetV2Library as
// the .NET change feed processor library (v2) does, each with its id layout
// and .info / .lock documents.
//
// The documents follow the libraries' sources (field names, which fields
// each writes, the continuation's encoding, the timestamp's form):
//   - .NET v3: Microsoft.Azure.Cosmos/src/ChangeFeedProcessor/LeaseManagement/
//     DocumentServiceLeaseCore.cs (v0), DocumentServiceLeaseCoreEpk.cs (v1),
//     DocumentServiceLeaseVersion.cs (version 0 and 1),
//     DocumentServiceLeaseManagerCosmos.cs (LeaseToken, FeedRange and Mode,
//     the A-IM value, on creation; "partitionKey" the lease id, as
//     Util/ConfigurationManager.cs has it by default) and
//     Serializer/FeedRange/FeedRangeInternalConverter.cs (FeedRange as
//     {"Range": {"min", "max"}}) in Azure/azure-cosmos-dotnet-v3;
//   - Java v4: sdk/cosmos/azure-cosmos/src/main/java/com/azure/cosmos/
//     implementation/changefeed/pkversion/ServiceItemLease.java (v0; in
//     changefeed/ServiceItemLease.java in older releases) and
//     epkversion/ServiceItemLeaseV1.java (v1), whose serializers write
//     exactly the fields below; common/ChangeFeedState.java and
//     ChangeFeedStateV1.java (the continuation), feedranges/
//     FeedRangeCompositeContinuationImpl.java, query/
//     CompositeContinuationToken.java and routing/Range.java (its ranges,
//     with isMinInclusive and isMaxInclusive), Constants.java (the state's
//     property names) in Azure/azure-sdk-for-java;
//   - .NET v2 library: src/DocumentDB.ChangeFeedProcessor/LeaseManagement/
//     DocumentServiceLease.cs in Azure/azure-documentdb-changefeedprocessor-dotnet
//     (PartitionId, and gremlincompatid, a copy of the id).
//
// Lease documents start unowned (Owner null). CreateLeases(false) writes the
// state of a processor that has created its leases but not checkpointed yet:
// ContinuationToken is JSON null, which real processors treat as "read from
// the beginning" (no If-None-Match), so the lag is every item of the range.
// CreateLeases(true) checkpoints each lease at the range's current LSN.
type Writer struct {
	// Name is the processor name the lease ids start with; "" is a
	// processor without a prefix, as an Azure Functions Cosmos DB trigger
	// without LeaseContainerPrefix writes them (Functions v4 with the .NET
	// v3 SDK: DotNetV0/DotNetV1; Functions v3 with the .NET v2 library:
	// DotNetV2Library): ids "{AccountHost}_{dbRid}_{collRid}..{token}" and
	// the same ".info" / ".lock" documents.
	Name        string
	AccountHost string                // host written into lease ids; defaults to the monitored server's Host()
	Monitored   *cosmostest.Container // the data container
	Leases      *cosmostest.Container // the lease container, partitioned by /id or /partitionKey
	format      cosmostest.LeaseFormat
	// Mode is the processor's change feed mode, recorded as its library
	// records it: .NET "Mode" ("Incremental Feed" / "Full-Fidelity Feed"),
	// Java EPK state ("INCREMENTAL" / "FULL_FIDELITY", starting from NOW).
	// Formats without LeaseFormat.HasAllVersionsAndDeletes refuse
	// AllVersionsAndDeletes.
	Mode cosmostest.ChangeFeedMode
}

// NewWriter describes the leases of a processor of the given format;
// name may be empty (see Writer.Name).
func NewWriter(name string, monitored, leases *cosmostest.Container, format cosmostest.LeaseFormat) *Writer {
	return &Writer{Name: name, AccountHost: monitored.Database().Account().Host(), Monitored: monitored, Leases: leases, format: format}
}

// Prefix is "{Name}{AccountHost}_{dbRid}_{collRid}", or with the database
// and container ids instead of RIDs for JavaV0.
func (p *Writer) Prefix() string {
	db, coll := p.Monitored.Database().RID(), p.Monitored.RID()
	if p.format == cosmostest.JavaV0 {
		db, coll = p.Monitored.Database().ID(), p.Monitored.ID()
	}
	return p.Name + p.AccountHost + "_" + db + "_" + coll
}

// LeaseID is "{Prefix}..{token}".
func (p *Writer) LeaseID(token string) string { return p.Prefix() + ".." + token }

// ErrLeaseNotFound: the writer has no lease with that token.
var ErrLeaseNotFound = errors.New("leasetest: lease not found")

// CreateLeases writes one lease per live physical range of the monitored
// container plus the "{prefix}.info" and "{prefix}.lock" bookkeeping
// documents, and returns the lease tokens: range ids for DotNetV0, JavaV0
// and DotNetV2Library, "{min}-{max}" for the EPK formats. See Writer for
// what the continuation holds.
func (p *Writer) CreateLeases(startFromNow bool) ([]string, error) {
	ranges := p.Monitored.Ranges()
	tokens := make([]string, 0, len(ranges))
	for _, r := range ranges {
		var cont *int64
		if startFromNow {
			lsn := p.Monitored.LSN(r.ID)
			cont = &lsn
		}
		token := r.ID
		if p.format.EPK() {
			token = r.MinInclusive + "-" + r.MaxExclusive
		}
		if err := p.writeLease(token, r.MinInclusive, r.MaxExclusive, cont, ""); err != nil {
			return nil, err
		}
		tokens = append(tokens, token)
	}
	if err := p.upsert(map[string]any{"id": p.Prefix() + ".info"}); err != nil {
		return nil, err
	}
	if err := p.upsert(map[string]any{"id": p.Prefix() + ".lock", "ttl": 60}); err != nil {
		return nil, err
	}
	return tokens, nil
}

// Lease returns the stored lease document.
func (p *Writer) Lease(token string) (map[string]any, bool) {
	return p.Leases.Get(p.LeaseID(token))
}

// Checkpoint sets the lease's continuation to lsn in the format's encoding.
func (p *Writer) Checkpoint(token string, lsn int64) error {
	return p.update(token, func(doc map[string]any) error {
		if p.format == cosmostest.JavaV1 {
			lower, upper := p.leaseRange(doc)
			doc["ContinuationToken"] = javaContinuationToken(p.Monitored.RID(), lower, upper, lsn, p.Mode)
		} else {
			doc["ContinuationToken"] = quotedLSN(lsn)
		}
		return nil
	})
}

// CatchUp checkpoints the lease at the current LSN of its range, so its lag
// is zero. For EPK leases that is the live range containing the lease's EPK
// range; a lease spanning several ranges (stale after a split) is an error.
func (p *Writer) CatchUp(token string) error {
	lsn, err := p.currentLSN(token)
	if err != nil {
		return err
	}
	return p.Checkpoint(token, lsn)
}

// SetOwner sets the lease owner ("" = unowned, written as null).
func (p *Writer) SetOwner(token, owner string) error {
	return p.update(token, func(doc map[string]any) error {
		if owner == "" {
			doc["Owner"] = nil
		} else {
			doc["Owner"] = owner
		}
		return nil
	})
}

// ReplaceAfterSplit does what a processor does when its lease's range is
// gone: it deletes the lease and creates unowned child leases that carry the
// parent's continuation. For range-id formats the children are the live
// ranges covering the parent's span (their ids become the tokens); for EPK
// formats they are the parent's EPK range cut at the live range bounds.
// Range-id leases whose range was merged are refused: real processors then
// switch to EPK leases, which this helper does not model.
func (p *Writer) ReplaceAfterSplit(parentToken string) ([]string, error) {
	doc, ok := p.Lease(parentToken)
	if !ok {
		return nil, fmt.Errorf("replace lease %q after split: %w", parentToken, ErrLeaseNotFound)
	}
	cont, err := p.continuationLSN(doc)
	if err != nil {
		return nil, fmt.Errorf("replace lease %q after split: %w", parentToken, err)
	}
	var lower, upper string
	if p.format.EPK() {
		lower, upper = p.leaseRange(doc)
	} else {
		r, gone, ok := p.Monitored.Range(parentToken)
		if !ok {
			return nil, fmt.Errorf("replace lease %q after split: range %w", parentToken, cosmostest.ErrRangeNotFound)
		}
		if !gone {
			return nil, fmt.Errorf("replace lease %q after split: range %s is still live", parentToken, parentToken)
		}
		lower, upper = r.MinInclusive, r.MaxExclusive
	}
	type child struct{ token, min, max string }
	var children []child
	for _, r := range p.Monitored.Ranges() {
		if r.MaxExclusive <= lower || r.MinInclusive >= upper {
			continue // no overlap
		}
		if p.format.EPK() {
			lo, hi := max(lower, r.MinInclusive), min(upper, r.MaxExclusive)
			children = append(children, child{lo + "-" + hi, lo, hi})
			continue
		}
		if r.MinInclusive < lower || r.MaxExclusive > upper {
			return nil, fmt.Errorf("replace lease %q after split: range %s was merged into %s, which a range-id lease cannot follow", parentToken, parentToken, r.ID)
		}
		children = append(children, child{r.ID, r.MinInclusive, r.MaxExclusive})
	}
	if len(children) == 1 && children[0].token == parentToken {
		return nil, fmt.Errorf("replace lease %q after split: its range did not split", parentToken)
	}
	tokens := make([]string, 0, len(children))
	for _, c := range children {
		if err := p.writeLease(c.token, c.min, c.max, cont, ""); err != nil {
			return nil, err
		}
		tokens = append(tokens, c.token)
	}
	p.Leases.Delete(p.LeaseID(parentToken))
	return tokens, nil
}

func (p *Writer) currentLSN(token string) (int64, error) {
	if !p.format.EPK() {
		lsn := p.Monitored.LSN(token)
		if lsn < 0 {
			return 0, fmt.Errorf("lease %q: range %w", token, cosmostest.ErrRangeNotFound)
		}
		return lsn, nil
	}
	min, max, ok := strings.Cut(token, "-")
	if !ok {
		return 0, fmt.Errorf("lease %q: not an EPK lease token", token)
	}
	for _, r := range p.Monitored.Ranges() {
		if r.MinInclusive <= min && max <= r.MaxExclusive {
			return p.Monitored.LSN(r.ID), nil
		}
	}
	return 0, fmt.Errorf("lease %q spans more than one physical range", token)
}

func (p *Writer) update(token string, change func(map[string]any) error) error {
	doc, ok := p.Lease(token)
	if !ok {
		return fmt.Errorf("lease %q of processor %q: %w", token, p.Name, ErrLeaseNotFound)
	}
	if err := change(doc); err != nil {
		return err
	}
	doc["timestamp"] = p.timestamp(time.Now(), true)
	return p.upsert(doc)
}

// writeLease writes a fresh lease document in the processor's format;
// cont nil means "no checkpoint yet".
func (p *Writer) writeLease(token, min, max string, cont *int64, owner string) error {
	var ownerVal any
	if owner != "" {
		ownerVal = owner
	}
	if p.Mode == cosmostest.AllVersionsAndDeletes && !p.format.HasAllVersionsAndDeletes() {
		return fmt.Errorf("%v leases have no all-versions-and-deletes mode", p.format)
	}
	var contVal any
	if cont != nil {
		if p.format == cosmostest.JavaV1 {
			contVal = javaContinuationToken(p.Monitored.RID(), min, max, *cont, p.Mode)
		} else {
			contVal = quotedLSN(*cont)
		}
	}
	doc := map[string]any{
		"id":                p.LeaseID(token),
		"Owner":             ownerVal,
		"ContinuationToken": contVal,
		"timestamp":         p.timestamp(time.Now(), false),
	}
	dotNetRange := map[string]any{"Range": map[string]any{"min": min, "max": max}}
	switch p.format {
	case cosmostest.DotNetV0, cosmostest.DotNetV1:
		version := 0
		if p.format == cosmostest.DotNetV1 {
			version = 1
		}
		doc["version"] = version
		doc["LeaseToken"] = token
		doc["FeedRange"] = dotNetRange
		doc["properties"] = map[string]any{}
		doc["Mode"] = dotNetIncremental
		if p.Mode == cosmostest.AllVersionsAndDeletes {
			doc["Mode"] = dotNetFullFidelity
		}
	case cosmostest.JavaV0:
		doc["LeaseToken"] = token
	case cosmostest.JavaV1:
		doc["LeaseToken"] = token
		doc["version"] = 1
		doc["feedRange"] = map[string]any{"Range": map[string]any{
			"min": min, "max": max, "isMinInclusive": true, "isMaxInclusive": false,
		}}
	case cosmostest.DotNetV2Library:
		doc["PartitionId"] = token
		doc["gremlincompatid"] = doc["id"]
		doc["properties"] = map[string]any{}
	default:
		return fmt.Errorf("unknown lease format %v", p.format)
	}
	return p.upsert(doc)
}

// upsert writes a document to the lease container, adding the partitionKey
// field when the container is partitioned by /partitionKey (real processors
// then set it to the id).
func (p *Writer) upsert(doc map[string]any) error {
	switch p.Leases.PartitionKeyPath() {
	case "/id":
	case "/partitionKey":
		doc["partitionKey"] = doc["id"]
	default:
		return fmt.Errorf("lease container %s is partitioned by %s; processors need /id or /partitionKey", p.Leases.ID(), p.Leases.PartitionKeyPath())
	}
	if _, err := p.Leases.Upsert(doc); err != nil {
		return fmt.Errorf("write lease document %v: %w", doc["id"], err)
	}
	return nil
}

// leaseRange reads the EPK range of a lease document.
func (p *Writer) leaseRange(doc map[string]any) (lower, upper string) {
	key := "FeedRange"
	if p.format == cosmostest.JavaV1 {
		key = "feedRange"
	}
	fr, _ := doc[key].(map[string]any)
	r, _ := fr["Range"].(map[string]any)
	lower, _ = r["min"].(string)
	upper, _ = r["max"].(string)
	return lower, upper
}

// continuationLSN decodes the checkpoint of a lease document (nil = none).
func (p *Writer) continuationLSN(doc map[string]any) (*int64, error) {
	raw, _ := doc["ContinuationToken"].(string)
	if raw == "" {
		return nil, nil
	}
	if p.format == cosmostest.JavaV1 {
		b, err := javaStateEncoding.DecodeString(raw)
		if err != nil {
			return nil, fmt.Errorf("decode Java continuation: %w", err)
		}
		var st javaState
		if err := json.Unmarshal(b, &st); err != nil || len(st.Continuation.Continuation) == 0 {
			return nil, fmt.Errorf("decode Java continuation state: %v", err)
		}
		raw = st.Continuation.Continuation[0].Token
	}
	n, err := strconv.ParseInt(strings.Trim(raw, `"`), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("continuation %q is not a quoted LSN", raw)
	}
	return &n, nil
}

// The Java v4 processor stores its change feed state as Base64 of this JSON.
type javaState struct {
	V            int              `json:"V"`
	Rid          string           `json:"Rid"`
	Mode         string           `json:"Mode"`
	StartFrom    javaStartFrom    `json:"StartFrom"`
	Continuation javaContinuation `json:"Continuation"`
}

type javaStartFrom struct {
	Type string `json:"Type"`
}

type javaContinuation struct {
	V            int                 `json:"V"`
	Rid          string              `json:"Rid"`
	Continuation []javaCompositeItem `json:"Continuation"`
	Range        javaRange           `json:"Range"`
}

type javaCompositeItem struct {
	Token string    `json:"token"`
	Range javaRange `json:"range"`
}

// javaRange is routing/Range.java as the state holds it: min inclusive,
// max exclusive, both flags written.
type javaRange struct {
	Min            string `json:"min"`
	Max            string `json:"max"`
	IsMinInclusive bool   `json:"isMinInclusive"`
	IsMaxInclusive bool   `json:"isMaxInclusive"`
}

func javaContinuationToken(collRID, min, max string, lsn int64, mode cosmostest.ChangeFeedMode) string {
	r := javaRange{Min: min, Max: max, IsMinInclusive: true}
	javaMode, startFrom := "INCREMENTAL", "BEGINNING"
	if mode == cosmostest.AllVersionsAndDeletes {
		// Java's all-versions-and-deletes processor can only start from now.
		javaMode, startFrom = "FULL_FIDELITY", "NOW"
	}
	b, _ := json.Marshal(javaState{
		V: 1, Rid: collRID, Mode: javaMode, StartFrom: javaStartFrom{Type: startFrom},
		Continuation: javaContinuation{V: 1, Rid: collRID, Range: r,
			Continuation: []javaCompositeItem{{Token: quotedLSN(lsn), Range: r}}},
	})
	return javaStateEncoding.EncodeToString(b)
}

// javaStateEncoding is the alphabet of the Java v4 change feed state:
// ChangeFeedState.toString encodes with Base64.getUrlEncoder() (URL-safe,
// with padding) and fromString decodes with getUrlDecoder()
// (sdk/cosmos/azure-cosmos/src/main/java/com/azure/cosmos/implementation/
// changefeed/common/ChangeFeedState.java); the EPK processor checkpoints
// that string as the lease's ContinuationToken
// (epkversion/PartitionCheckpointerImpl.java).
var javaStateEncoding = base64.URLEncoding

// timestamp is the lease's "timestamp" at t as its library writes it.
//   - .NET (v3 and the v2 library) serializes a UTC DateTime with
//     Newtonsoft.Json's default ISO format, "yyyy-MM-ddTHH:mm:ss.FFFFFFFK":
//     up to seven fraction digits, trailing zeros dropped.
//   - Java v4 creates a lease with ZonedDateTime.now(ZoneId.of("UTC")).toString()
//     ("2026-06-28T14:42:40.403196Z[UTC]", ServiceItemLease and
//     ServiceItemLeaseV1 constructors) and, on every update, sets
//     Instant.toString() ("2026-06-28T14:42:40.403196Z", setTimestamp(Instant)).
func (p *Writer) timestamp(t time.Time, updated bool) string {
	t = t.UTC()
	switch {
	case p.format != cosmostest.JavaV0 && p.format != cosmostest.JavaV1:
		return t.Format("2006-01-02T15:04:05.9999999Z")
	case updated:
		// DateTimeFormatter.ISO_INSTANT: seconds always, then 0, 3, 6 or 9
		// fraction digits.
		return t.Format("2006-01-02T15:04:05") + javaFraction(t.Nanosecond()) + "Z"
	}
	// LocalDateTime.toString: the seconds only when the seconds or the
	// nanoseconds are not zero.
	s := t.Format("2006-01-02T15:04")
	if t.Second() != 0 || t.Nanosecond() != 0 {
		s += t.Format(":05") + javaFraction(t.Nanosecond())
	}
	return s + "Z[UTC]"
}

// javaFraction is java.time's rendering of nanoseconds: nothing for zero,
// otherwise three, six or nine digits, the fewest that hold the value.
func javaFraction(nanos int) string {
	switch {
	case nanos == 0:
		return ""
	case nanos%1_000_000 == 0:
		return fmt.Sprintf(".%03d", nanos/1_000_000)
	case nanos%1_000 == 0:
		return fmt.Sprintf(".%06d", nanos/1_000)
	}
	return fmt.Sprintf(".%09d", nanos)
}

// The .NET v3 SDK records a processor's mode as the A-IM value of its reads
// (DocumentServiceLeaseManagerCosmos.GetChangeFeedMode).
const (
	dotNetIncremental  = "Incremental Feed"
	dotNetFullFidelity = "Full-Fidelity Feed"
)

// quotedLSN is the LSN in quotes: the etag of a change feed position, which
// processors checkpoint as the continuation.
func quotedLSN(lsn int64) string { return `"` + strconv.FormatInt(lsn, 10) + `"` }
