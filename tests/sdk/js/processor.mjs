// An independent change feed processor for `cosmoslag serve`, driven through
// the official JavaScript SDK (@azure/cosmos, pinned in package-lock.json).
// It keeps .NET v3 lease documents and checkpoints them as the .NET change
// feed processor does, so that `cosmoslag check` and `cosmoslag tune` can be
// tested against a processor whose code shares none of our assumptions.
// tests/sdk/processor_test.go runs it; it also runs by hand:
//
//   COSMOS_ENDPOINT=https://127.0.0.1:8081/ COSMOS_KEY=... COSMOS_CONTROL=http://127.0.0.1:8082 \
//   NODE_EXTRA_CA_CERTS=ca.pem node processor.mjs --scenario backlog
//
// What it models, from Azure/azure-cosmos-dotnet-v3 (read at commit
// 8c53d3595093f5201139b80ee2cf57876725efd3), Microsoft.Azure.Cosmos/src/ChangeFeedProcessor/:
//   - FeedProcessing/FeedProcessorCore.cs RunAsync: read a page; while the
//     iterator has more results (every 200 response), hand the page to the
//     observer and read the next page at once; after a 304 (no news), wait
//     FeedPollDelay, then read again.
//   - Observers/AutoCheckpointer.cs: after the observer has processed a
//     page, checkpoint: PartitionCheckpointerCore.cs ->
//     LeaseManagement/DocumentServiceLeaseCheckpointerCore.cs sets the
//     lease's ContinuationToken to the page's continuation (the etag, a
//     quoted LSN) when the lease is still owned by this host, through
//     DocumentServiceLeaseUpdaterCosmos.cs: replace with If-Match on the
//     lease's _etag, and on 412 read the lease again and retry (5 times);
//     the timestamp is set to the time of the update.
//   - ../ChangeFeed/ChangeFeedPartitionKeyResultSetIteratorCore.cs: the
//     continuation of a change feed page is its etag. The SDK here gives
//     the same value: its continuation holds, per range, the etag of the
//     range's last page (ChangeFeedForEpkRange.js fetchNext).
//   - Configuration/ChangeFeedProcessorOptions.cs: FeedPollDelay 5 s by
//     default; Configuration/ChangeFeedLeaseOptions.cs: lease renew
//     interval 17 s, acquire interval 13 s, expiration 60 s.
//   - LeaseManagement/DocumentServiceLeaseCoreEpk.cs (version 1, LeaseToken
//     "{min}-{max}") and DocumentServiceLeaseCore.cs (version 0, LeaseToken
//     the range id), written by DocumentServiceLeaseManagerCosmos.cs
//     CreateLeaseIfNotExistAsync with FeedRange {"Range": {min, max}}, Mode
//     "Incremental Feed", ContinuationToken null, Owner null; ids
//     "{prefix}..{token}" with the prefix of Utils/CosmosContainerExtensions.cs
//     GetLeasePrefix: "{processorName}{endpoint host}_{dbRid}_{collRid}".
//     AcquireAsync, RenewAsync and ReleaseAsync set Owner (null on release;
//     FeedManagement/PartitionControllerCore.cs releases a host's leases
//     when it shuts down).
//   - Bootstrapping/PartitionSynchronizerCore.cs HandlePartitionGoneAsync:
//     after a split, the lease is replaced by one lease per child range,
//     each with the parent's last continuation, and the parent is deleted.
//
// So the cadence is: with a backlog, a checkpoint after every processed
// page (maxItemCount changes, processed at the owner's rate); when caught
// up, a read every poll delay and a checkpoint when that read found
// changes. The poll delay here is 1 s (WithPollInterval), so a processor
// that keeps up checkpoints about once a second: every sample of its lag
// shows what arrived since its last checkpoint.
//
// A fresh .NET processor creates version 0 leases (one per range) and
// version 1 leases after a merge; --lease-version chooses which this one
// writes (1 by default).
//
// The JavaScript SDK has no change feed processor (only the change feed
// iterator, the "pull model"); this file
// is the processor, reading each lease's range with the SDK's change feed
// iterator (ChangeFeedStartFrom.Continuation, built from the lease's
// continuation and range). The SDK follows a split by itself; the .NET
// processor instead sees the 410 and replaces the lease, which this one
// does when the SDK's continuation names more than one range.
//
// Output: one JSON line per event on stdout ("ready", the scenario's
// events, "frozen", "done"); a log on stderr. Commands on stdin, one a
// line: "handle-splits" (replace split leases now), "freeze" (stop
// writing and processing, wait until every lease is checkpointed, print the
// state: per lease its owner, continuation and the changes pending after
// it, counted by reading the change feed with the SDK) and "stop". It stops
// by itself after --duration seconds.

import { CosmosClient, ChangeFeedStartFrom, StatusCodes } from "@azure/cosmos";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";

const endpoint = process.env.COSMOS_ENDPOINT;
const key = process.env.COSMOS_KEY;
const controlURL = process.env.COSMOS_CONTROL;

// Scenarios: the processor's shape and what happens to it, in seconds after
// "ready" (every lease checkpointed once, then `settle` seconds). Owners
// process at `rate` changes per second each, shared by their leases;
// writers add `writeRate` changes per second to every partition, after
// `backlog` changes per partition written before the processor starts.
const scenarios = {
  // No backlog: 10 writes/s per partition, owners able to do 40/s.
  "keeping-up": { backlog: 0 },
  // A backlog that lasts the window: each owner drains 40/s against 20
  // writes/s over its two leases.
  backlog: { backlog: 800 },
  // host-b stops processing once every lease has its first checkpoint
  // (its observer never returns; its pages in flight finish before
  // "ready") and keeps its leases; host-a drains a backlog.
  stuck: { backlog: 600, stuck: ["host-b"] },
  // host-a shuts down at 8 s (releases its leases, as StopAsync does);
  // host-c starts at 10 s and acquires them. Version 0 leases.
  "owner-change": { backlog: 800, leaseVersion: 0, owners: { "host-a": [0, 1], "host-b": [2, 3] },
    handover: { at: 8, from: "host-a", to: "host-c", gap: 2 } },
  // At 10 s the first lease's continuation goes back to its first
  // checkpoint (a processor restarted from an older lease backup) and its
  // owner reprocesses from there.
  "checkpoint-reset": { backlog: 800, reset: { at: 10, lease: 0 } },
  // At 6 s the first lease's range splits (control API); the processor
  // notices at its next read but replaces the lease only after `notice`
  // seconds (or on the command "handle-splits"), so the stale parent stays
  // in the lease container meanwhile, as with a processor that is down or
  // slow during a split.
  split: { backlog: 400, split: { at: 6, lease: 0, notice: 40 } },
  // One owner per lease, each able to do 25/s, while each partition gets
  // 30 writes/s: no replica count keeps up.
  overloaded: { backlog: 200, rate: 25, writeRate: 30, owners: { "host-a": [0], "host-b": [1], "host-c": [2], "host-d": [3] } },
};

const defaults = {
  partitions: 4,
  owners: { "host-a": [0, 1], "host-b": [2, 3] },
  rate: 40, // changes per second per owner
  writeRate: 10, // changes per second per partition
  backlog: 0,
  pollDelay: 1, // seconds: FeedPollDelay (5 s by default in .NET)
  maxItemCount: 20, // a page: at 40/s shared by two busy leases, one checkpoint per lease per second
  renewInterval: 17, // seconds, ChangeFeedLeaseOptions.DefaultRenewInterval
  leaseVersion: 1,
  processorName: "orders-processor",
  duration: 150, // seconds after "ready" at which it stops by itself
  settle: 2, // seconds from the first checkpoint of every lease to "ready"
};

const { values: flags } = parseArgs({
  options: {
    scenario: { type: "string", default: "keeping-up" },
    "lease-version": { type: "string" },
    duration: { type: "string" },
  },
});
if (!(flags.scenario in scenarios)) {
  console.error(`unknown scenario ${flags.scenario}; one of ${Object.keys(scenarios).join(", ")}`);
  process.exit(2);
}
const cfg = { ...defaults, ...scenarios[flags.scenario] };
if (flags["lease-version"] !== undefined) cfg.leaseVersion = Number(flags["lease-version"]);
if (flags.duration !== undefined) cfg.duration = Number(flags.duration);

const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const now = () => performance.now();
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const t0 = Date.now();
const log = (msg) => process.stderr.write(`${((Date.now() - t0) / 1000).toFixed(2)}s ${msg}\n`);

async function control(method, path, body) {
  const res = await fetch(controlURL + path, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`control ${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

const client = new CosmosClient({ endpoint, key, connectionPolicy: { requestTimeout: 10000 } });

// .NET serializes the lease timestamp (a UTC DateTime) with Newtonsoft's
// default ISO format: up to seven fraction digits, trailing zeros dropped.
const dotNetTimestamp = (d = new Date()) => d.toISOString().replace(/\.?0+Z$/, "Z");

// ---- the account: monitored container, lease container, writers ----

const run = `${process.pid}-${Date.now() % 100000}`;
const dbID = `procdb-${run}`;
const monitoredID = "orders";
const leasesID = "leases";
const info = await control("POST", "/control/containers", { database: dbID, id: monitoredID, partitionKeyPath: "/pk", ranges: cfg.partitions });
await control("POST", "/control/containers", { database: dbID, id: leasesID, partitionKeyPath: "/id", ranges: 1 });
const database = client.database(dbID);
const monitored = database.container(monitoredID);
const leaseContainer = database.container(leasesID);
const dbRid = (await database.read()).resource._rid;
const collRid = (await monitored.read()).resource._rid;
const host = new URL(endpoint).hostname; // ClientContext.Client.Endpoint.Host
const prefix = `${cfg.processorName}${host}_${dbRid}_${collRid}`;

// One partition key value per physical range, so that each writer feeds
// one range (and, before any split, one lease).
const pks = [];
for (const r of info.ranges) {
  const q = new URLSearchParams({ database: dbID, container: monitoredID, range: r.id });
  pks.push((await control("GET", `/control/partition-key?${q}`)).partitionKey);
}
const written = pks.map(() => 0);
let seq = 0;
const writeOne = async (i) => {
  await monitored.items.create({ id: `w${i}-${++seq}`, pk: pks[i], at: Date.now() });
  written[i]++;
};

// The backlog: written before the leases exist, 16 requests at a time.
if (cfg.backlog > 0) {
  const jobs = [];
  for (let i = 0; i < pks.length; i++) for (let k = 0; k < cfg.backlog; k++) jobs.push(i);
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < jobs.length) await writeOne(jobs[next++]);
  }));
  log(`backlog written: ${cfg.backlog} per partition`);
}

let writing = true;
const writers = pks.map(async (_, i) => {
  // A steady writeRate per partition, on a schedule (not after each write).
  const start = now();
  for (let k = 0; writing; k++) {
    await sleep(start + (k * 1000) / cfg.writeRate - now());
    if (writing) await writeOne(i);
  }
});

// ---- leases ----

// leases: token -> { doc (as last read or written), owner (the host
// running it, or null), loop (its reader's promise), firstCheckpoint,
// gone (its range split) }
const leases = new Map();

function newLeaseDoc(token, min, max, continuation) {
  // Field order as Newtonsoft writes DocumentServiceLeaseCoreEpk /
  // DocumentServiceLeaseCore; the lease container is partitioned by /id,
  // so no partitionKey field.
  return {
    id: `${prefix}..${token}`,
    version: cfg.leaseVersion,
    LeaseToken: token,
    FeedRange: { Range: { min, max } },
    Owner: null,
    ContinuationToken: continuation,
    properties: {},
    Mode: "Incremental Feed",
    timestamp: dotNetTimestamp(),
  };
}

async function createLease(token, min, max, continuation) {
  const doc = newLeaseDoc(token, min, max, continuation);
  try {
    const { resource } = await leaseContainer.items.create(doc);
    leases.set(token, { doc: resource, owner: null, loop: null, firstCheckpoint: null, gone: false });
    return token;
  } catch (e) {
    if (e.code === StatusCodes.Conflict) return null; // another host created it
    throw e;
  }
}

class LeaseLost extends Error {}

// updateLease is DocumentServiceLeaseUpdaterCosmos.UpdateLeaseAsync:
// change the cached lease, replace it with If-Match on its etag; on 412 read
// it again and retry, 5 times at most.
async function updateLease(token, change) {
  const l = leases.get(token);
  let doc = l.doc;
  for (let retry = 5; retry >= 0; retry--) {
    const next = change({ ...doc });
    next.timestamp = dotNetTimestamp();
    try {
      const { resource } = await leaseContainer.item(doc.id, doc.id).replace(next, {
        accessCondition: { type: "IfMatch", condition: doc._etag },
      });
      l.doc = resource;
      return resource;
    } catch (e) {
      if (e.code === StatusCodes.NotFound) throw new LeaseLost(`lease ${token} is gone`);
      if (e.code !== StatusCodes.PreconditionFailed) throw e;
      const { resource } = await leaseContainer.item(doc.id, doc.id).read();
      if (!resource) throw new LeaseLost(`lease ${token} is gone`);
      doc = resource;
    }
  }
  throw new LeaseLost(`lease ${token}: too many conflicts`);
}

const ownedBy = (owner) => (doc) => {
  if (doc.Owner !== owner) throw new LeaseLost(`lease taken over by ${doc.Owner}`);
  return doc;
};

// ---- owners ----

class Owner {
  constructor(name) {
    this.name = name;
    this.next = 0; // when the owner is free to process again (performance.now)
    this.stuckFromStart = cfg.stuck?.includes(name) ?? false;
    this.stopping = false;
  }
  // process takes n changes at the owner's rate, shared by its leases: the
  // owner is one worker processing cfg.rate changes per second.
  async process(n) {
    if (this.stuck()) {
      log(`${this.name}: stuck`);
      await stopped; // the observer never returns
      return false;
    }
    const start = Math.max(now(), this.next);
    this.next = start + (n * 1000) / cfg.rate;
    await sleep(this.next - now());
    return true;
  }
  stuck() {
    return this.stuckFromStart && checkpointed;
  }
}
const owners = new Map();

let resolveStopped;
const stopped = new Promise((r) => (resolveStopped = r));
let stopping = false;
let checkpointed = false; // every lease has a checkpoint
let readyAt = null; // "ready": settle seconds after that
let paused = false; // frozen: no reads until "stop"

// acquire is DocumentServiceLeaseManagerCosmos.AcquireAsync: Owner set,
// when no one else took the lease meanwhile.
async function acquire(owner, token) {
  const before = leases.get(token).doc.Owner;
  await updateLease(token, (doc) => {
    if (doc.Owner !== before) throw new LeaseLost(`lease ${token} taken over by ${doc.Owner}`);
    return { ...doc, Owner: owner.name };
  });
  const l = leases.get(token);
  l.owner = owner;
  l.loop = runLease(owner, token).catch((e) => {
    if (!(e instanceof LeaseLost)) fail(e);
    else log(`${owner.name}: ${e.message}`);
  });
  log(`${owner.name} acquired ${token}`);
}

// release is ReleaseAsync: Owner null, after the lease's reader stopped.
async function release(owner, token) {
  const l = leases.get(token);
  l.owner = null;
  await l.loop;
  await updateLease(token, (doc) => ({ ...ownedBy(owner.name)(doc), Owner: null }));
  log(`${owner.name} released ${token}`);
}

// The SDK's change feed continuation for one lease: its range and the
// lease's checkpoint (CompositeContinuationToken, as the SDK prints it).
const sdkContinuation = (doc) =>
  JSON.stringify({
    rid: collRid,
    Continuation: [{ minInclusive: doc.FeedRange.Range.min, maxExclusive: doc.FeedRange.Range.max, continuationToken: doc.ContinuationToken }],
  });

function iteratorFor(doc, feedRanges) {
  let startFrom;
  if (doc.ContinuationToken) {
    startFrom = ChangeFeedStartFrom.Continuation(sdkContinuation(doc));
  } else {
    // No checkpoint yet: from the beginning (WithStartFromBeginning) of the
    // lease's range, which is one of the container's feed ranges.
    const fr = feedRanges.find((r) => r.minInclusive === doc.FeedRange.Range.min && r.maxExclusive === doc.FeedRange.Range.max);
    startFrom = ChangeFeedStartFrom.Beginning(fr);
  }
  return monitored.items.getChangeFeedIterator({ changeFeedStartFrom: startFrom, maxItemCount: cfg.maxItemCount });
}

let feedRanges = await monitored.getFeedRanges();

// runLease is FeedProcessorCore.RunAsync with AutoCheckpointer for one lease.
async function runLease(owner, token) {
  const l = leases.get(token);
  const it = iteratorFor(l.doc, feedRanges);
  const running = () => !stopping && !owner.stopping && l.owner === owner && !l.gone && !l.restart;
  while (running()) {
    if (paused) {
      await sleep(50);
      continue;
    }
    l.inFlight = true; // from the read until its page is checkpointed
    try {
      if (!(await readAndProcess(owner, token, l, it, running))) return;
    } finally {
      l.inFlight = false;
    }
  }
}

// readAndProcess reads one page and, when it holds changes, processes and
// checkpoints it; false: the lease's reader stops.
async function readAndProcess(owner, token, l, it, running) {
  {
    const res = await it.readNext();
    if (!running()) return false; // a shutdown while reading: not processed, not checkpointed
    if (res.statusCode === StatusCodes.NotModified) {
      l.inFlight = false;
      await sleep(cfg.pollDelay * 1000); // FeedPollDelay
      return true;
    }
    const ranges = JSON.parse(res.continuationToken).Continuation;
    if (ranges.length > 1) {
      // The SDK met the split (410) and read a child range. The .NET
      // processor gets FeedRangeGoneException here and replaces the lease.
      l.gone = true;
      log(`${token}: range split (${ranges.length} ranges); page not processed`);
      handleSplit(owner, token).catch(fail);
      return false;
    }
    if (res.result.length === 0) return true;
    if (!(await owner.process(res.result.length))) return false; // stuck until stop
    if (stopping) return false;
    const etag = ranges[0].continuationToken;
    await updateLease(token, (doc) => ({ ...ownedBy(owner.name)(doc), ContinuationToken: etag }));
    if (l.firstCheckpoint === null) l.firstCheckpoint = etag;
    checkReady().catch(fail);
    return true;
  }
}

// handleSplit is HandlePartitionGoneAsync: one lease per child range,
// created with the parent's last continuation, then the parent deleted;
// the owner acquires the children. It waits the scenario's notice time,
// or the command "handle-splits".
let handleSplitsNow;
const splitsNow = new Promise((r) => (handleSplitsNow = r));
async function handleSplit(owner, token) {
  const notice = cfg.split?.notice ?? 0;
  await Promise.race([sleep(notice * 1000), stopped, splitsNow]);
  if (stopping) return;
  const parent = leases.get(token).doc;
  feedRanges = await monitored.getFeedRanges();
  const { min, max } = parent.FeedRange.Range;
  const children = (await control("GET", `/control/containers/${dbID}/${monitoredID}/ranges`)).ranges.filter(
    (r) => r.maxExclusive > min && r.minInclusive < max,
  );
  const created = [];
  for (const r of children) {
    const lo = r.minInclusive > min ? r.minInclusive : min;
    const hi = r.maxExclusive < max ? r.maxExclusive : max;
    const childToken = cfg.leaseVersion === 1 ? `${lo}-${hi}` : r.id;
    if (await createLease(childToken, lo, hi, parent.ContinuationToken)) created.push(childToken);
  }
  await leaseContainer.item(parent.id, parent.id).delete();
  leases.delete(token);
  emit({ event: "split-handled", parent: token, children: created });
  for (const c of created) await acquire(owner, c);
}

function fail(e) {
  log(`failed: ${e.stack || e}`);
  emit({ event: "error", error: String(e.message || e) });
  process.exit(1);
}

// checkReady emits "ready" cfg.settle seconds after every lease has its
// first checkpoint, so that pages in flight then (a stuck owner's last
// ones) are checkpointed before; the scenario's times count from "ready".
async function checkReady() {
  if (checkpointed) return;
  for (const l of leases.values()) if (!l.doc.ContinuationToken) return;
  checkpointed = true;
  await sleep(cfg.settle * 1000);
  readyAt = Date.now();
  emit({
    event: "ready",
    scenario: flags.scenario,
    database: dbID,
    container: monitoredID,
    leaseContainer: leasesID,
    processorName: cfg.processorName,
    prefix,
    leaseVersion: cfg.leaseVersion,
    rate: cfg.rate,
    writeRate: cfg.writeRate,
    partitions: cfg.partitions,
    leases: [...leases.entries()].map(([token, l]) => ({ token, owner: l.doc.Owner })),
  });
  startTimeline();
}

// ---- the scenario's events ----

const at = (seconds, what) =>
  Promise.race([sleep(seconds * 1000 - (Date.now() - readyAt)), stopped]).then(() => (stopping ? undefined : what()));

function startTimeline() {
  const tokens = [...leases.keys()];
  if (cfg.handover) {
    const { from, to, gap } = cfg.handover;
    at(cfg.handover.at, async () => {
      // from shuts down: its readers stop, its leases are released.
      const o = owners.get(from);
      o.stopping = true;
      const mine = [...leases.entries()].filter(([, l]) => l.owner === o).map(([t]) => t);
      for (const t of mine) await release(o, t);
      emit({ event: "released", owner: from, leases: mine });
      await sleep(gap * 1000);
      const n = new Owner(to);
      owners.set(to, n);
      for (const t of mine) await acquire(n, t);
      emit({ event: "acquired", owner: to, leases: mine });
    }).catch(fail);
  }
  if (cfg.reset) {
    const token = tokens[cfg.reset.lease];
    at(cfg.reset.at, async () => {
      const l = leases.get(token);
      const owner = l.owner;
      l.restart = true;
      await l.loop;
      const before = l.doc.ContinuationToken;
      await updateLease(token, (doc) => ({ ...ownedBy(owner.name)(doc), ContinuationToken: l.firstCheckpoint }));
      emit({ event: "reset", lease: token, from: before, to: l.firstCheckpoint });
      l.restart = false;
      l.loop = runLease(owner, token).catch((e) => (e instanceof LeaseLost ? log(e.message) : fail(e)));
    }).catch(fail);
  }
  if (cfg.split) {
    const token = tokens[cfg.split.lease];
    at(cfg.split.at, async () => {
      const { min, max } = leases.get(token).doc.FeedRange.Range;
      const r = info.ranges.find((x) => x.minInclusive === min && x.maxExclusive === max);
      const split = await control("POST", "/control/split", { database: dbID, container: monitoredID, range: r.id });
      emit({ event: "split", lease: token, range: r.id, left: split.left.id, right: split.right.id });
    }).catch(fail);
  }
  // Lease renewal (RenewAsync) every renew interval, per owned lease.
  (async () => {
    while (!stopping) {
      await Promise.race([sleep(cfg.renewInterval * 1000), stopped]);
      for (const [token, l] of leases) {
        if (stopping || !l.owner || l.gone) continue;
        const name = l.owner.name;
        await updateLease(token, ownedBy(name)).catch((e) => (e instanceof LeaseLost ? log(e.message) : fail(e)));
      }
    }
  })();
  at(cfg.duration, () => stop("duration"));
}

// ---- freeze and stop ----

async function freeze() {
  writing = false;
  await Promise.all(writers);
  paused = true;
  // Wait until every lease's reader is between pages: its page read,
  // processed and checkpointed (a stuck owner's never is).
  const deadline = Date.now() + 15000;
  const busy = () => [...leases.values()].filter((l) => l.inFlight && !(l.owner && l.owner.stuck()));
  while (busy().length > 0) {
    if (Date.now() > deadline) throw new Error(`freeze: leases still reading after 15 s: ${busy().length}`);
    await sleep(50);
  }
  const state = [];
  for (const [token, l] of leases) {
    const { resource: doc } = await leaseContainer.item(l.doc.id, l.doc.id).read();
    let pending = 0;
    if (!l.gone) {
      // The changes after the checkpoint, read with the SDK.
      const it = monitored.items.getChangeFeedIterator({
        changeFeedStartFrom: ChangeFeedStartFrom.Continuation(sdkContinuation(doc)),
        maxItemCount: 1000,
      });
      for (;;) {
        const res = await it.readNext();
        if (res.statusCode === StatusCodes.NotModified) break;
        pending += res.result.length;
      }
    }
    state.push({ id: doc.id, token, owner: doc.Owner, continuation: doc.ContinuationToken, pending, staleParent: l.gone });
  }
  emit({ event: "frozen", leases: state, written });
}

function stop(why) {
  if (stopping) return;
  stopping = true;
  writing = false;
  resolveStopped();
  emit({ event: "done", why, written });
  // Readers in flight finish their request; nothing is checkpointed after.
  setTimeout(() => process.exit(0), 200);
}

createInterface({ input: process.stdin }).on("line", (line) => {
  const cmd = line.trim();
  if (cmd === "freeze") freeze().catch(fail);
  else if (cmd === "handle-splits") handleSplitsNow();
  else if (cmd === "stop") stop("stop");
});

// ---- start: leases as the .NET bootstrapper creates them, then owners ----

// DocumentServiceLeaseStoreCosmos: the bootstrapper holds "{prefix}.lock"
// (with a ttl) while it creates the leases, then deletes it and marks the
// store initialized with "{prefix}.info".
await leaseContainer.items.create({ id: `${prefix}.lock`, ttl: 30 });
for (const r of info.ranges) {
  const token = cfg.leaseVersion === 1 ? `${r.minInclusive}-${r.maxExclusive}` : r.id;
  await createLease(token, r.minInclusive, r.maxExclusive, null);
}
await leaseContainer.items.create({ id: `${prefix}.info` });
await leaseContainer.item(`${prefix}.lock`, `${prefix}.lock`).delete();
const tokens = [...leases.keys()];
for (const [name, idx] of Object.entries(cfg.owners)) {
  const o = new Owner(name);
  owners.set(name, o);
  for (const i of idx) await acquire(o, tokens[i]);
}
setTimeout(() => {
  if (!checkpointed) fail(new Error("not every lease was checkpointed within 60 s"));
}, 60000).unref();
