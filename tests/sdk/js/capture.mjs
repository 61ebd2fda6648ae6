// Performs, through the JavaScript SDK, the reads the scaler performs, so
// that tests/sdk/protocol_test.go can compare the requests of both in the
// server's request log (docs/protocol.md):
//   1. the change feed of one physical range from a saved continuation, one item;
//   2. the same for an EPK sub-range of that physical range;
//   3. the lease query (STARTSWITH on the id, cross-partition), every page.
// CAPTURE_SPEC is a JSON object:
//   {database, container, rid, leases, prefix, pageSize,
//    full: {min, max, etag}, sub: {min, max, etag}}

import { CosmosClient, ChangeFeedStartFrom } from "@azure/cosmos";

const spec = JSON.parse(process.env.CAPTURE_SPEC);
const client = new CosmosClient({ endpoint: process.env.COSMOS_ENDPOINT, key: process.env.COSMOS_KEY });
const monitored = client.database(spec.database).container(spec.container);

// A continuation as the SDK itself writes it (CompositeContinuationToken):
// the container's RID and, per EPK range, the etag to resume from.
const continuation = (r) =>
  JSON.stringify({ rid: spec.rid, Continuation: [{ minInclusive: r.min, maxExclusive: r.max, continuationToken: r.etag }] });

const out = {};
for (const name of ["full", "sub"]) {
  const it = monitored.items.getChangeFeedIterator({
    changeFeedStartFrom: ChangeFeedStartFrom.Continuation(continuation(spec[name])),
    maxItemCount: 1,
  });
  const res = await it.readNext();
  out[name] = { status: res.statusCode, items: res.result.length };
}

const query = client
  .database(spec.database)
  .container(spec.leases)
  .items.query(
    { query: "SELECT * FROM c WHERE STARTSWITH(c.id, @processor)", parameters: [{ name: "@processor", value: spec.prefix }] },
    { maxItemCount: spec.pageSize },
  );
let documents = 0;
while (query.hasMoreResults()) {
  documents += (await query.fetchNext()).resources.length;
}
out.leaseDocuments = documents;
console.log(JSON.stringify(out));
client.dispose();
