// Package cosmostest runs an in-process Azure Cosmos DB account that speaks
// enough of the REST protocol, faithfully, to test change feed lag
// estimation: LSNs, the incremental change feed, session tokens, physical
// partition key ranges with splits and merges, lease documents of the real
// change feed processors, and master-key / Entra ID authorization.
//
// It follows net/http/httptest: NewServer starts a server on loopback (or
// on the address given with WithAddress; cosmoslag serve runs one as a
// standalone process for clusters to reach), the
// test configures it through Go calls — the account's state (databases,
// containers, items) on its Account field, the HTTP side (faults, latency,
// the request log) on its Handler field, as httptest.Server holds its Config —
// hands its URL and key (or ConnectionString) to the code under test,
// and calls Close, which leaves no goroutine behind. Nothing is global; two
// servers are two accounts.
//
//	srv := cosmostest.NewServer()
//	defer srv.Close()
//	data := srv.Account.CreateDatabase("db").CreateContainer("data", "/pk", 2)
//	leases := srv.Account.CreateDatabase("db").CreateContainer("leases", "/id", 1)
//	_ = data.WriteItems("tenant-1", 10)
//	proc := leasetest.NewWriter("orders", data, leases, cosmostest.DotNetV0)
//	tokens, _ := proc.CreateLeases(false) // lag = every item
//	// … point the scaler at srv.ConnectionString() …
//
// # What is modelled
//   - Endpoints: GET / (account, listing its own URL as the only readable and
//     writable location "Local"), POST and GET of /dbs and /dbs/{db}/colls
//     (creation, 409 if the id exists, and listing; a container gets one physical range
//     per started 10,000 RU/s of x-ms-offer-throughput or of the autoscale
//     maximum in x-ms-cosmos-offer-autopilot-settings, at least one, as the
//     service gives them), GET /dbs/{db}, GET /dbs/{db}/colls/{coll},
//     GET …/pkranges (etag, 304 on If-None-Match, A-IM accepted), POST …/docs
//     as query (application/query+json), create and upsert
//     (x-ms-documentdb-is-upsert), PUT/GET/DELETE …/docs/{id} (If-Match and
//     Prefer: return=minimal honoured), and the incremental change feed
//     (GET …/docs with A-IM: Incremental feed). Paths are by id
//     (name-based routing); _rid paths also resolve, signed as sent.
//   - Responses: header names in lower case, as the service sends them
//     (etag, x-ms-session-token, x-ms-continuation, x-ms-request-charge,
//     x-ms-item-count, x-ms-substatus, lsn): clients that keep headers in a
//     plain dictionary (the Python SDK) look them up that way. Document
//     responses (item writes and reads, query and change feed pages) name
//     their container in x-ms-content-path (its _rid) and
//     x-ms-alt-content-path (dbs/{db}/colls/{coll}), which the SDKs need to
//     keep session tokens and send them back. Errors are {"code","message"}
//     with the service's status codes.
//   - Authorization: master-key HMAC signatures over verb, resource type,
//     resource link and x-ms-date, checked exactly, with a clock-skew window;
//     "type=aad" tokens through a pluggable verifier. Failures answer 401 with
//     a Cosmos-style body. Keys and tokens are never logged or echoed.
//   - Data: items with id, _rid, _self, _etag, _ts and _lsn. Each physical
//     range has its own LSN, advanced by every write and delete in it. The
//     change feed is latest-version: an item appears once, at its latest LSN,
//     ordered by _lsn; deletes do not appear. _lsn is only returned by the
//     change feed, as by the service.
//   - Change feed: If-None-Match absent (from the beginning), "*" (from now,
//     304 with the current LSN as etag) or a quoted LSN; x-ms-max-item-count;
//     x-ms-documentdb-partitionkeyrangeid (404 if the id never existed, 410 with
//     substatus 1002 after a split or merge); EPK sub-range reads
//     (x-ms-read-key-type: EffectivePartitionKeyRange, x-ms-start-epk,
//     x-ms-end-epk; 400 unless within the range). 200 carries etag = the last
//     document's _lsn and x-ms-session-token = "{range}:{form of the range's
//     LSN}" in the simple, versioned ("-1#") or vector form
//     (SetSessionTokenForm); 304 echoes the request's etag.
//   - All versions and deletes (A-IM: Full-Fidelity Feed, with
//     x-ms-cosmos-changefeed-wire-format-version: 2021-09-15, else 400): every
//     create, replace, delete and TTL expiry (Container.ExpireItem; no TTL
//     clock) since the continuation, in LSN order, each as {"current",
//     "metadata": {lsn, crts, operationType, previousImageLSN,
//     timeToLiveExpired, and id and partitionKey on deletes}}; no "previous"
//     images. "*" starts now; no If-None-Match (the beginning) or
//     If-Modified-Since (a point in time) is 400, as by the service. Ranges,
//     EPK sub-ranges, paging, 304 and 410 as for latest version. A container
//     keeps its last 100,000 changes (its retention).
//   - Queries: the SQL subset of package internal/cosmossql, "SELECT
//     [TOP n] {* | VALUE <expr> | <expr> [AS name], …} FROM <container>
//     [[AS] alias] [WHERE <expr>] [ORDER BY <path> [ASC|DESC]]" with
//     property paths, literals, @parameters, = != <> < <= > >=, IN, AND,
//     OR, NOT, STARTSWITH, ENDSWITH, CONTAINS (optionally ignoring case),
//     IS_DEFINED, IS_NULL, ARRAY_CONTAINS (optionally partial) and
//     COUNT (SELECT VALUE COUNT(1)). Values of different types compare as
//     undefined and ORDER BY sorts by type first, as in the service.
//     Anything else — JOIN, GROUP BY, DISTINCT, OFFSET LIMIT, other
//     functions and aggregates, arithmetic, subqueries — is 400 naming the
//     construct. A query scoped to a partition key or a range runs here in
//     full. Across partitions, a query with ORDER BY, TOP or COUNT is
//     answered as by the service: 400 with substatus 1004 and the query
//     plan in additionalErrorInfo, and a query-plan request
//     (x-ms-cosmos-is-query-plan-request) with the plan; the SDKs then run
//     the plan's rewritten query on each range and merge. Cross-partition
//     queries need x-ms-documentdb-query-enablecrosspartition when the
//     container has more than one range. Results are paged by
//     x-ms-max-item-count (absent or -1: 100, at most 1000, or fewer with
//     WithQueryPageLimit) with an opaque x-ms-continuation. The JavaScript SDK (@azure/cosmos 4.10.1) and
//     Debian's Python SDK (3.1.1) are run against this server in tests/sdk.
//   - Topology: Split divides a range at the midpoint of its EPK span into two
//     children with new ids whose LSNs start at the parent's; Merge joins two
//     adjacent ranges into one child (parents: both) whose LSN continues
//     from the larger parent LSN. Items keep their _lsn; the old ids answer
//     410/1002; EPK reads of a child return only their sub-range, which is
//     how processors resume an old range's continuation.
//   - Partition merge as an account feature: with WithPartitionMerge every
//     request that does not declare the PartitionMerge capability (bit 0 of
//     the decimal bit set in x-ms-cosmos-sdk-supportedcapabilities) is
//     refused with 400 naming the header, after authorization; the
//     service's exact refusal status is not documented.
//   - Faults and observation, on the Handler: InjectFault (status +
//     substatus, 429 with x-ms-retry-after-ms, malformed body, dropped
//     connection, a verbatim body and headers, and a Hook that runs at an
//     exact point of a client's request sequence, e.g. to split a range) by
//     request kind and range, for N requests or always; SetLatency; a request
//     log (Requests, Count) that records every request, including faulted and
//     unauthorized ones.
//   - Leases: package leasetest (leasetest.Writer) writes lease documents
//     exactly as the .NET v3 (v0 and EPK v1), Java v4 (v0 and EPK v1) and
//     .NET v2 library processors do (LeaseFormat; read in the libraries'
//     sources, not taken from the scaler: neither package imports anything
//     of it), with their id layouts, .info / .lock documents, timestamps and
//     recorded change feed mode, and moves checkpoints, owners and split
//     leases. It is a client of the server: it uses only this package's
//     exported API.
//   - Entra ID: package entraidtest is an HTTPS OAuth2 authority whose
//     Verifier plugs into WithTokenVerifier; its connectproxy serves it
//     under any host name.
//   - MasterKeyAuthorization signs requests for tests that use plain
//     net/http clients.
//
// # What is not modelled
//   - Effective partition keys are not the service's MurmurHash3 values:
//     epk = the first 16 bytes of SHA-256 over the value's JSON, as 32
//     uppercase hex digits. Only their ordering and containment in range
//     bounds matter, and those follow the real rules (ordinal comparison,
//     "" = minimum, "FF" = maximum). Only single-path partition keys.
//   - Item ids are unique per container, not per logical partition.
//   - No multi-region replication (the vector session token is synthetic),
//     no consistency levels, no throughput or real request-charge accounting
//     (charges are plausible constants), no TTL clock, no indexing, no
//     stored procedures, triggers, users, permissions, offers, batches or
//     patch. Databases and containers can be created and listed over REST
//     (and created through Go calls), not replaced or deleted. Request session
//     tokens and consistency levels are accepted and ignored: every read sees
//     the latest write. A query plan always covers the whole key space (its
//     queryRanges are not narrowed by a partition key filter). The
//     latest-version change feed has no start-time (If-Modified-Since)
//     reads; A-IM reads of pkranges return
//     the full set, not a delta.
//   - Every loopback server's Host is "127.0.0.1", so processors of two servers write
//     the same host into lease ids (the port is not part of them, as with
//     real endpoints); set leasetest.Writer.AccountHost to tell accounts apart.
//   - One lock guards each server; reads scan cached id / LSN orders. That is
//     ample for tens of thousands of items (see the benchmarks), not more.
//   - Splits and merges are instantaneous (no 410/1007 "completing split"
//     window unless injected as a fault).
//
// # Layout
//
// The model holds the account's state and imports no net/http: account.go
// (the account, its databases and lookups), topology.go (databases,
// containers, partition key ranges, splits and merges), items.go (items and
// their LSNs), changelog.go (the all-versions-and-deletes log), session.go
// (session tokens), epk.go, leaseformat.go (the lease formats' names). The
// handlers translate requests into calls on the model and its answers into
// replies: serve.go (ServeHTTP, routing, shared lookups, pkranges),
// parse.go (headers and bodies), reply.go, auth.go, resources.go and
// create.go (databases, containers, items), query.go, changefeed.go,
// allversions.go, merge.go (the capability check), faults.go, requests.go
// (the request log), on handler.go's Handler, which calls the Account;
// server.go serves a Handler over HTTP(S) and holds the two as its fields
// Account and Handler. The model refers to neither the Handler nor the
// Server.
package cosmostest
