// Conformance cases for `cosmoslag serve`, driven through the official
// JavaScript SDK (@azure/cosmos, pinned in package-lock.json) the way
// applications use it. tests/sdk/sdk_test.go runs this file with
//   COSMOS_ENDPOINT, COSMOS_KEY, COSMOS_CONTROL (the control API's URL),
//   COSMOS_MERGE_ENDPOINT, COSMOS_MERGE_CONTROL (a second account, served
//   with --enable-partition-merge), NODE_EXTRA_CA_CERTS (the endpoints'
//   certificates), SDK_CASES (optional regular expression selecting cases
//   by name)
// and reads one JSON line per case from stdout:
//   {"case": name, "ok": bool, "detail": "...", "limit": "..."}
// "limit" names a behaviour of the SDK itself that the case asserts instead
// of the service's (none for this SDK so far). To add a case, add an entry
// to `cases`; a case throws to fail.

import { CosmosClient, ChangeFeedMode, ChangeFeedStartFrom, PluginOn, StatusCodes } from "@azure/cosmos";
import { createRequire } from "node:module";
import assert from "node:assert/strict";

const endpoint = process.env.COSMOS_ENDPOINT;
const key = process.env.COSMOS_KEY;
const controlURL = process.env.COSMOS_CONTROL;
const mergeEndpoint = process.env.COSMOS_MERGE_ENDPOINT;
const mergeControlURL = process.env.COSMOS_MERGE_CONTROL;
const only = process.env.SDK_CASES ? new RegExp(process.env.SDK_CASES) : null;

// Every request the SDK sends, as the "request" plugin sees it (method,
// path, headers), so that cases can assert what went on the wire.
const sent = [];
const newClient = (options = {}) =>
  new CosmosClient({
    endpoint,
    key,
    connectionPolicy: { requestTimeout: 10000, enableEndpointDiscovery: true },
    plugins: [
      {
        on: PluginOn.request,
        plugin: async (context, diagnosticNode, next) => {
          sent.push({ method: context.method, path: context.path, headers: { ...context.headers } });
          return next(context);
        },
      },
    ],
    ...options,
  });
const client = newClient();
// The account with partition merge enabled: it admits only clients that
// declare the PartitionMerge capability, which this SDK does (>= 4.3).
const mergeClient = newClient({ endpoint: mergeEndpoint });

// An account: its SDK client and its control API.
const plain = { client, control: controlURL };
const merging = { client: mergeClient, control: mergeControlURL };

let seq = 0;
const unique = (prefix) => `${prefix}-${process.pid}-${++seq}`;

async function control(method, path, body, acct = plain) {
  const res = await fetch(acct.control + path, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`control ${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

// A container with `ranges` physical partitions, made through the control
// API (which the creation cases do not rely on), in the account `acct`.
async function newContainer(ranges = 1, pkPath = "/pk", acct = plain) {
  const dbID = unique("jsdb");
  const id = unique("coll");
  const info = await control("POST", "/control/containers", { database: dbID, id, partitionKeyPath: pkPath, ranges }, acct);
  return { container: acct.client.database(dbID).container(id), dbID, id, info, acct };
}

// A partition key value whose items land in the given live range.
async function pkInRange(dbID, id, rangeID, acct = plain) {
  const q = new URLSearchParams({ database: dbID, container: id, range: rangeID });
  return (await control("GET", `/control/partition-key?${q}`, undefined, acct)).partitionKey;
}

// One partition key value per physical range, so that cross-partition
// cases really span ranges.
async function pkPerRange(c) {
  const out = [];
  for (const r of c.info.ranges) out.push(await pkInRange(c.dbID, c.id, r.id, c.acct));
  return out;
}

// Merges the container's two ranges through the control API; returns the
// new range.
const mergeRanges = (c) =>
  control("POST", "/control/merge", { database: c.dbID, container: c.id, ranges: c.info.ranges.map((r) => r.id) }, c.acct);

// Writes n items into each range's part of the key space; returns their ids.
async function writePerRange(c, pks, prefix, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    for (const [r, pk] of pks.entries()) {
      const id = `${prefix}-${r}-${i}`;
      await c.container.items.create({ id, pk });
      out.push(id);
    }
  }
  return out;
}

async function expectStatus(promise, code, what) {
  try {
    await promise;
  } catch (e) {
    assert.equal(e.code, code, `${what}: expected ${code}, got ${e.code}: ${e.message}`);
    return e;
  }
  assert.fail(`${what}: expected ${code}, the call succeeded`);
}

// Reads a change feed iterator until the SDK reports 304 (every range
// checked without news), returning the items.
async function drain(iterator, limit = 50) {
  const items = [];
  let continuationToken;
  for (let i = 0; i < limit; i++) {
    const res = await iterator.readNext();
    continuationToken = res.continuationToken;
    if (res.statusCode === StatusCodes.NotModified) return { items, continuationToken };
    items.push(...res.result);
  }
  throw new Error(`the change feed did not report 304 after ${limit} pages`);
}

const ids = (docs) => docs.map((d) => d.id).sort();

// Items for the query cases: fields of every type the subset compares.
async function queryFixture(ranges = 1) {
  const c = await newContainer(ranges);
  const pks = await pkPerRange(c);
  const docs = [];
  for (let i = 0; i < 12; i++) {
    docs.push({
      id: `q${String(i).padStart(2, "0")}`,
      pk: pks[i % pks.length],
      n: i,
      status: i % 3 === 0 ? "open" : "closed",
      name: i % 2 === 0 ? `alpha-${i}` : `beta-${i}`,
      tags: i % 4 === 0 ? ["red", "blue"] : ["green"],
      nested: { level: i % 5 },
      ...(i % 6 === 0 ? { optional: true } : {}),
    });
  }
  for (const d of docs) await c.container.items.create(d);
  return { ...c, docs, pks };
}

let fixture;
const sharedFixture = async () => (fixture ??= queryFixture(3));

// Runs a query across partitions and compares the ids with those of the
// documents `expect` selects (in order when `ordered`).
function queryCase(name, query, expect, { ordered = false, parameters = [] } = {}) {
  return [
    `query/${name}`,
    async () => {
      const f = await sharedFixture();
      const { resources } = await f.container.items.query({ query, parameters }).fetchAll();
      const want = f.docs.filter(expect);
      if (ordered) {
        const sorted = [...want];
        ordered(sorted);
        assert.deepEqual(resources.map((d) => d.id ?? d), sorted.map((d) => d.id));
      } else {
        assert.deepEqual(ids(resources), ids(want));
      }
    },
  ];
}

const cases = [
  [
    "account/discovery",
    async () => {
      const { resource } = await client.getDatabaseAccount();
      assert.ok(resource.writableLocations.length >= 1, "no writable location");
      assert.equal(new URL(resource.writableLocations[0].databaseAccountEndpoint).host, new URL(endpoint).host);
      assert.ok(resource.consistencyPolicy, "no consistency policy");
    },
  ],
  [
    "resources/create-read-database-and-container",
    async () => {
      const dbID = unique("jscreate");
      const { database, statusCode } = await client.databases.create({ id: dbID });
      assert.equal(statusCode, 201);
      const { resource: dbRead } = await database.read();
      assert.equal(dbRead.id, dbID);
      const { container, statusCode: cStatus } = await database.containers.create(
        { id: "orders", partitionKey: { paths: ["/tenant"] } },
        { offerThroughput: 40000 },
      );
      assert.equal(cStatus, 201);
      const { resource } = await container.read();
      assert.deepEqual(resource.partitionKey.paths, ["/tenant"]);
      await expectStatus(client.databases.create({ id: dbID }), 409, "creating the database twice");
      const { resources: ranges } = await container.readPartitionKeyRanges().fetchAll();
      assert.equal(ranges.length, 4, "40,000 RU/s should give 4 physical partitions");
      const again = await client.databases.createIfNotExists({ id: dbID });
      assert.equal(again.statusCode, 200);
      const { resources: dbs } = await client.databases.readAll().fetchAll();
      assert.ok(dbs.some((d) => d.id === dbID), "readAll does not list the new database");
      const { resources: colls } = await database.containers.readAll().fetchAll();
      assert.deepEqual(colls.map((c) => c.id), ["orders"]);
    },
  ],
  [
    "resources/read-missing-is-404",
    async () => {
      await expectStatus(client.database(unique("nodb")).read(), 404, "reading a missing database");
      const c = await newContainer();
      await expectStatus(client.database(c.dbID).container("missing").read(), 404, "reading a missing container");
    },
  ],
  [
    "ranges/feed-ranges-and-pkranges",
    async () => {
      const c = await newContainer(3);
      const { resources: ranges } = await c.container.readPartitionKeyRanges().fetchAll();
      assert.deepEqual(
        ranges.map((r) => [r.id, r.minInclusive, r.maxExclusive]),
        c.info.ranges.map((r) => [r.id, r.minInclusive, r.maxExclusive]),
      );
      const feedRanges = await c.container.getFeedRanges();
      assert.deepEqual(
        feedRanges.map((r) => [r.minInclusive, r.maxExclusive]),
        c.info.ranges.map((r) => [r.minInclusive, r.maxExclusive]),
      );
    },
  ],
  [
    "items/crud-with-etags",
    async () => {
      const { container } = await newContainer();
      const created = await container.items.create({ id: "a", pk: "p1", v: 1 });
      assert.equal(created.statusCode, 201);
      const etag1 = created.etag;
      assert.ok(etag1, "create returned no etag");
      assert.equal(created.headers.etag, etag1);
      const read = await container.item("a", "p1").read();
      assert.equal(read.statusCode, 200);
      assert.equal(read.etag, etag1);
      assert.equal(read.resource.v, 1);
      const replaced = await container
        .item("a", "p1")
        .replace({ id: "a", pk: "p1", v: 2 }, { accessCondition: { type: "IfMatch", condition: etag1 } });
      assert.equal(replaced.statusCode, 200);
      assert.notEqual(replaced.etag, etag1);
      await expectStatus(
        container.item("a", "p1").replace({ id: "a", pk: "p1", v: 3 }, { accessCondition: { type: "IfMatch", condition: etag1 } }),
        412,
        "replace with a stale etag",
      );
      await expectStatus(container.items.create({ id: "a", pk: "p1" }), 409, "creating an existing id");
      const upserted = await container.items.upsert({ id: "b", pk: "p1" });
      assert.equal(upserted.statusCode, 201);
      assert.equal((await container.items.upsert({ id: "b", pk: "p1", v: 1 })).statusCode, 200);
      const notModified = await container.item("a", "p1").read({ accessCondition: { type: "IfNoneMatch", condition: replaced.etag } });
      assert.equal(notModified.statusCode, 304);
      const missing = await container.item("nope", "p1").read();
      assert.equal(missing.statusCode, 404, "reading a missing item");
      const deleted = await container.item("a", "p1").delete();
      assert.equal(deleted.statusCode, 204);
      await expectStatus(container.item("a", "p1").delete(), 404, "deleting a deleted item");
    },
  ],
  queryCase("select-all", "SELECT * FROM c", () => true),
  queryCase("equals-parameter", "SELECT * FROM c WHERE c.status = @s", (d) => d.status === "open", {
    parameters: [{ name: "@s", value: "open" }],
  }),
  queryCase("not-equals", "SELECT * FROM c WHERE c.status != 'open'", (d) => d.status !== "open"),
  queryCase("less-than-number", "SELECT * FROM c WHERE c.n < 4", (d) => d.n < 4),
  queryCase("greater-or-equal-parameter", "SELECT * FROM c WHERE c.n >= @min", (d) => d.n >= 9, {
    parameters: [{ name: "@min", value: 9 }],
  }),
  queryCase("nested-path", "SELECT * FROM c WHERE c.nested.level = 2", (d) => d.nested.level === 2),
  queryCase("and-or-not", "SELECT * FROM c WHERE (c.n > 8 OR c.n < 2) AND NOT (c.status = 'open')", (d) =>
    (d.n > 8 || d.n < 2) && d.status !== "open"),
  queryCase("startswith", "SELECT * FROM c WHERE STARTSWITH(c.name, @p)", (d) => d.name.startsWith("alpha"), {
    parameters: [{ name: "@p", value: "alpha" }],
  }),
  queryCase("endswith", "SELECT * FROM c WHERE ENDSWITH(c.name, '-1')", (d) => d.name.endsWith("-1")),
  queryCase("contains", "SELECT * FROM c WHERE CONTAINS(c.name, 'ta-1')", (d) => d.name.includes("ta-1")),
  queryCase("is-defined", "SELECT * FROM c WHERE IS_DEFINED(c.optional)", (d) => d.optional !== undefined),
  queryCase("array-contains", "SELECT * FROM c WHERE ARRAY_CONTAINS(c.tags, 'red')", (d) => d.tags.includes("red")),
  queryCase("order-by-cross-partition", "SELECT * FROM c ORDER BY c.n", () => true, {
    ordered: (a) => a.sort((x, y) => x.n - y.n),
  }),
  queryCase("order-by-desc-cross-partition", "SELECT * FROM c WHERE c.n > 2 ORDER BY c.n DESC", (d) => d.n > 2, {
    ordered: (a) => a.sort((x, y) => y.n - x.n),
  }),
  [
    "query/order-by-single-partition",
    async () => {
      const f = await sharedFixture();
      const pk = f.pks[0];
      const { resources } = await f.container.items
        .query("SELECT * FROM c ORDER BY c.name DESC", { partitionKey: pk })
        .fetchAll();
      const want = f.docs.filter((d) => d.pk === pk).sort((x, y) => (x.name < y.name ? 1 : -1));
      assert.deepEqual(resources.map((d) => d.id), want.map((d) => d.id));
    },
  ],
  [
    "query/top",
    async () => {
      const f = await sharedFixture();
      const { resources } = await f.container.items.query("SELECT TOP 3 * FROM c ORDER BY c.n").fetchAll();
      assert.deepEqual(resources.map((d) => d.n), [0, 1, 2]);
    },
  ],
  [
    "query/value-count",
    async () => {
      const f = await sharedFixture();
      const { resources } = await f.container.items.query("SELECT VALUE COUNT(1) FROM c WHERE c.status = 'closed'").fetchAll();
      assert.deepEqual(resources, [f.docs.filter((d) => d.status === "closed").length]);
    },
  ],
  [
    "query/cross-partition-paging",
    async () => {
      const f = await sharedFixture();
      const it = f.container.items.query("SELECT * FROM c", { maxItemCount: 2 });
      const seen = [];
      let pages = 0;
      while (it.hasMoreResults()) {
        const page = await it.fetchNext();
        assert.ok(page.resources.length <= 2, `a page of ${page.resources.length} items with maxItemCount 2`);
        seen.push(...page.resources);
        if (++pages > 50) assert.fail("paging does not end");
      }
      assert.ok(pages >= 6, `12 items in pages of 2 came in ${pages} pages`);
      assert.deepEqual(ids(seen), ids(f.docs));
    },
  ],
  [
    "query/continuation-resume",
    async () => {
      const f = await sharedFixture();
      const pk = f.pks[0];
      const first = await f.container.items.query("SELECT * FROM c", { partitionKey: pk, maxItemCount: 2 }).fetchNext();
      assert.ok(first.continuationToken, "the first page has no continuation token");
      const rest = await f.container.items
        .query("SELECT * FROM c", { partitionKey: pk, maxItemCount: 100, continuationToken: first.continuationToken })
        .fetchAll();
      assert.deepEqual(ids([...first.resources, ...rest.resources]), ids(f.docs.filter((d) => d.pk === pk)));
    },
  ],
  [
    "query/query-plan",
    async () => {
      const f = await sharedFixture();
      const { resources } = await f.container.items
        .query("SELECT * FROM c WHERE c.n < 3", { forceQueryPlan: true })
        .fetchAll();
      assert.deepEqual(ids(resources), ids(f.docs.filter((d) => d.n < 3)));
    },
  ],
  [
    "query/unsupported-construct-is-400-naming-it",
    async () => {
      const f = await sharedFixture();
      const e = await expectStatus(
        f.container.items.query("SELECT c.status, COUNT(1) FROM c GROUP BY c.status").fetchAll(),
        400,
        "a GROUP BY query",
      );
      assert.match(e.message, /GROUP BY/i);
    },
  ],
  [
    "changefeed/whole-container",
    async () => {
      const c = await newContainer(3);
      const pks = await pkPerRange(c);
      for (let i = 0; i < 9; i++) await c.container.items.create({ id: `w${i}`, pk: pks[i % 3] });
      const { items } = await drain(c.container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }));
      assert.deepEqual(ids(items), ids(Array.from({ length: 9 }, (_, i) => ({ id: `w${i}` }))));
      assert.ok(items.every((d) => typeof d._lsn === "number"), "change feed items carry _lsn");
    },
  ],
  [
    "changefeed/per-feed-range",
    async () => {
      const c = await newContainer(3);
      const pks = await pkPerRange(c);
      for (let i = 0; i < 9; i++) await c.container.items.create({ id: `r${i}`, pk: pks[i % 3] });
      const feedRanges = await c.container.getFeedRanges();
      const all = [];
      for (const [n, fr] of feedRanges.entries()) {
        const { items } = await drain(c.container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(fr) }));
        assert.deepEqual(new Set(items.map((d) => d.pk)), new Set([pks[n]]), `feed range ${n} holds only its own partition's items`);
        all.push(...items);
      }
      assert.equal(all.length, 9);
    },
  ],
  [
    "changefeed/per-partition-key",
    async () => {
      const c = await newContainer(2);
      for (let i = 0; i < 6; i++) await c.container.items.create({ id: `k${i}`, pk: i % 2 ? "odd" : "even" });
      const { items } = await drain(c.container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning("odd") }));
      assert.deepEqual(ids(items), ["k1", "k3", "k5"]);
    },
  ],
  [
    "changefeed/from-now",
    async () => {
      const c = await newContainer(2);
      await c.container.items.create({ id: "old", pk: "p" });
      const it = c.container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Now() });
      const before = await drain(it);
      assert.deepEqual(before.items, [], "a feed started now returns nothing written before");
      await c.container.items.create({ id: "new", pk: "p" });
      const after = await drain(it);
      assert.deepEqual(ids(after.items), ["new"]);
    },
  ],
  [
    "changefeed/resume-from-continuation",
    async () => {
      const c = await newContainer(2);
      for (let i = 0; i < 4; i++) await c.container.items.create({ id: `a${i}`, pk: `p${i}` });
      const first = await drain(c.container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }));
      assert.equal(first.items.length, 4);
      for (let i = 0; i < 3; i++) await c.container.items.create({ id: `b${i}`, pk: `p${i}` });
      const resumed = await drain(
        c.container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(first.continuationToken) }),
      );
      assert.deepEqual(ids(resumed.items), ["b0", "b1", "b2"]);
    },
  ],
  [
    "changefeed/split-with-saved-continuation",
    async () => {
      const c = await newContainer(1);
      for (let i = 0; i < 6; i++) await c.container.items.create({ id: `s${i}`, pk: `p${i}` });
      const first = await drain(c.container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }));
      assert.equal(first.items.length, 6);
      await control("POST", "/control/split", { database: c.dbID, container: c.id, range: c.info.ranges[0].id });
      for (let i = 0; i < 6; i++) await c.container.items.create({ id: `t${i}`, pk: `p${i}` });
      const resumed = await drain(
        c.container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(first.continuationToken) }),
      );
      assert.deepEqual(ids(resumed.items), ["t0", "t1", "t2", "t3", "t4", "t5"]);
    },
  ],
  [
    "changefeed/all-versions-and-deletes",
    async () => {
      const c = await newContainer(1);
      const it = c.container.items.getChangeFeedIterator({
        changeFeedStartFrom: ChangeFeedStartFrom.Now(),
        changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
      });
      assert.deepEqual((await drain(it)).items, [], "a feed started now returns nothing written before");
      await c.container.items.create({ id: "a", pk: "p", v: 1 });
      await c.container.item("a", "p").replace({ id: "a", pk: "p", v: 2 });
      await c.container.item("a", "p").delete();
      await c.container.items.create({ id: "b", pk: "p", v: 1 });
      const { items } = await drain(it);
      assert.deepEqual(
        items.map((ch) => ch.metadata.operationType),
        ["create", "replace", "delete", "create"],
        "every version and the delete, in order",
      );
      const lsns = items.map((ch) => ch.metadata.lsn);
      assert.ok(lsns.every((n, i) => Number.isInteger(n) && (i === 0 || n > lsns[i - 1])), `LSNs ascend: ${lsns}`);
      assert.ok(items.every((ch) => typeof ch.metadata.crts === "number" && ch.metadata.crts > 0), "crts on every change");
      assert.equal(items[1].current.v, 2);
      assert.equal(items[1].metadata.previousImageLSN, lsns[0]);
      assert.deepEqual(items[2].current, {}, "a delete has no current item");
      assert.equal(items[2].metadata.id, "a");
      assert.deepEqual(items[2].metadata.partitionKey, { pk: "p" });
      assert.equal(items[2].metadata.timeToLiveExpired, false);
      const req = sent.filter((r) => r.method === "GET" && r.path.endsWith("/docs")).at(-1);
      assert.equal(req.headers["A-IM"] ?? req.headers["a-im"], "Full-Fidelity Feed");
      assert.equal(req.headers["x-ms-cosmos-changefeed-wire-format-version"], "2021-09-15");
    },
  ],
  [
    "changefeed/all-versions-resume-from-continuation",
    async () => {
      const c = await newContainer(2);
      const pks = await pkPerRange(c);
      const opts = (from) => ({ changeFeedStartFrom: from, changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes });
      const first = await drain(c.container.items.getChangeFeedIterator(opts(ChangeFeedStartFrom.Now())));
      for (const [i, pk] of pks.entries()) await c.container.items.create({ id: `d${i}`, pk });
      for (const [i, pk] of pks.entries()) await c.container.item(`d${i}`, pk).delete();
      const resumed = await drain(c.container.items.getChangeFeedIterator(opts(ChangeFeedStartFrom.Continuation(first.continuationToken))));
      const ops = resumed.items.map((ch) => `${ch.metadata.operationType}:${ch.current.id ?? ch.metadata.id}`).sort();
      assert.deepEqual(ops, ["create:d0", "create:d1", "delete:d0", "delete:d1"]);
    },
  ],
  [
    "changefeed/all-versions-from-beginning-is-400",
    async () => {
      const c = await newContainer(1);
      await c.container.items.create({ id: "x", pk: "p" });
      const it = c.container.items.getChangeFeedIterator({
        changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
        changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
      });
      await expectStatus(it.readNext(), 400, "all versions and deletes from the beginning");
    },
  ],
  [
    "changefeed/all-versions-from-point-in-time-is-400",
    async () => {
      const c = await newContainer(1);
      const it = c.container.items.getChangeFeedIterator({
        changeFeedStartFrom: ChangeFeedStartFrom.Time(new Date(Date.now() - 60000)),
        changeFeedMode: ChangeFeedMode.AllVersionsAndDeletes,
      });
      await expectStatus(it.readNext(), 400, "all versions and deletes from a point in time");
    },
  ],
  [
    "merge/changefeed-to-the-end-across-a-merge",
    async () => {
      const c = await newContainer(2, "/pk", merging);
      const pks = await pkPerRange(c);
      const wrote = await writePerRange(c, pks, "before", 3);
      const it = c.container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning(), maxItemCount: 2 });
      // Two pages: part of each range, so the iterator holds a position in both.
      const seen = [];
      for (let i = 0; i < 2; i++) {
        const res = await it.readNext();
        assert.equal(res.statusCode, StatusCodes.Ok, `page ${i} before the merge`);
        seen.push(...res.result);
      }
      assert.ok(seen.length < wrote.length, "the first pages read everything; nothing is left to read across the merge");
      const merged = await mergeRanges(c);
      assert.deepEqual(merged.parents, c.info.ranges.map((r) => r.id));
      wrote.push(...(await writePerRange(c, pks, "after", 2)));
      const mark = sent.length;
      const { items } = await drain(it);
      seen.push(...items);
      assert.deepEqual(ids(seen), [...wrote].sort(), "every item once, across the merge");
      // The SDK resumed each old range's position on the merged range with
      // an EPK-restricted read over the old range's bounds.
      const epkReads = sent
        .slice(mark)
        .filter((r) => r.method === "GET" && r.path.endsWith("/docs") && r.headers["x-ms-documentdb-partitionkeyrangeid"] === merged.id)
        .map((r) => `${r.headers["x-ms-read-key-type"]} [${r.headers["x-ms-start-epk"]}, ${r.headers["x-ms-end-epk"]})`);
      for (const r of c.info.ranges) {
        const want = `EffectivePartitionKeyRange [${r.minInclusive}, ${r.maxExclusive})`;
        assert.ok(epkReads.includes(want), `no read of ${want} on range ${merged.id}: ${epkReads.join("; ")}`);
      }
    },
  ],
  [
    "merge/changefeed-resume-continuation-across-a-merge",
    async () => {
      const c = await newContainer(2, "/pk", merging);
      const pks = await pkPerRange(c);
      await writePerRange(c, pks, "old", 2);
      const first = await drain(c.container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Beginning() }));
      assert.equal(first.items.length, 4);
      await mergeRanges(c);
      const after = await writePerRange(c, pks, "new", 2);
      const resumed = await drain(
        c.container.items.getChangeFeedIterator({ changeFeedStartFrom: ChangeFeedStartFrom.Continuation(first.continuationToken) }),
      );
      assert.deepEqual(ids(resumed.items), [...after].sort(), "only the items written after the saved continuation");
    },
  ],
  [
    "merge/items-on-a-merge-enabled-account",
    async () => {
      const mark = sent.length;
      const dbID = unique("jsmerge");
      const { database } = await mergeClient.databases.create({ id: dbID });
      const { container } = await database.containers.create({ id: "orders", partitionKey: { paths: ["/tenant"] } });
      const created = await container.items.create({ id: "o1", tenant: "t1", total: 3 });
      assert.equal(created.statusCode, 201);
      const { resource } = await container.item("o1", "t1").read();
      assert.equal(resource.total, 3);
      const { resources } = await container.items.query("SELECT * FROM c WHERE c.total > 1").fetchAll();
      assert.deepEqual(ids(resources), ["o1"]);
      const requests = sent.slice(mark);
      assert.ok(requests.length >= 5, `only ${requests.length} requests seen`);
      for (const r of requests) {
        assert.equal(String(r.headers["x-ms-cosmos-sdk-supportedcapabilities"]), "1", `${r.method} ${r.path} did not declare PartitionMerge`);
      }
    },
  ],
  [
    "session/token-round-trip",
    async () => {
      // The SDK sends session tokens back when the application asks for
      // session consistency (it sets x-ms-consistency-level: Session).
      const sessionClient = newClient({ consistencyLevel: "Session" });
      const { dbID, id } = await newContainer();
      const container = sessionClient.database(dbID).container(id);
      const w = await container.items.create({ id: "s", pk: "p" });
      const token = w.headers["x-ms-session-token"];
      assert.ok(token, "the write returned no x-ms-session-token");
      const mark = sent.length;
      await container.item("s", "p").read();
      const readReq = sent.slice(mark).find((r) => r.method === "GET" && r.path.endsWith("/docs/s"));
      assert.ok(readReq, "the read was not seen");
      assert.equal(readReq.headers["x-ms-session-token"], token, "the read did not send the write's session token back");
      sessionClient.dispose();
    },
  ],
  [
    "auth/wrong-key-is-401-without-the-key",
    async () => {
      const wrongKey = Buffer.from("not the account key, but long enough to be one").toString("base64");
      const bad = new CosmosClient({ endpoint, key: wrongKey, connectionPolicy: { enableEndpointDiscovery: false } });
      const e = await expectStatus(bad.databases.readAll().fetchAll(), 401, "a request signed with a wrong key");
      assert.ok(!JSON.stringify({ m: e.message, b: e.body }).includes(wrongKey), "the error echoes the key");
      assert.ok(!JSON.stringify({ m: e.message, b: e.body }).includes(key), "the error echoes the account key");
      bad.dispose();
    },
  ],
];

const version = createRequire(import.meta.url)("@azure/cosmos/package.json").version;
console.log(JSON.stringify({ sdk: "@azure/cosmos", version, node: process.version }));
for (const [name, run] of cases) {
  if (only && !only.test(name)) continue;
  const mark = sent.length;
  try {
    const limit = await run();
    console.log(JSON.stringify({ case: name, ok: true, limit: limit ?? "" }));
  } catch (e) {
    const trace = sent.slice(mark).map((r) => `${r.method} ${r.path}`).slice(-6);
    console.log(JSON.stringify({ case: name, ok: false, detail: `${e.message}\n  last requests: ${trace.join(" | ")}` }));
  }
}
console.log(JSON.stringify({ done: true }));
client.dispose();
mergeClient.dispose();
