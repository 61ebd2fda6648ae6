"""Conformance cases for `cosmoslag serve`, driven through Debian's
python3-azure-cosmos (the 3.x SDK, run with /usr/bin/python3) the way
applications use it. tests/sdk/sdk_test.go runs this file with
  COSMOS_ENDPOINT, COSMOS_KEY, COSMOS_CONTROL (the control API's URL),
  COSMOS_MERGE_ENDPOINT (a second account, served with
  --enable-partition-merge), COSMOS_CA_FILE (the endpoints' certificates),
  SDK_CASES (optional regular expression selecting cases by name)
and reads one JSON line per case from stdout:
  {"case": name, "ok": bool, "detail": "...", "limit": "..."}
A case returns a string to say it asserted the SDK's own behaviour rather
than the service's ("limit"); it raises to fail. To add a case, write a
function and list it in CASES.
"""

import json
import os
import re
import sys
import traceback
import urllib.request

import azure.cosmos.cosmos_client as cosmos_client
import azure.cosmos.documents as documents
import azure.cosmos.errors as errors
import azure.cosmos.http_constants as http_constants

ENDPOINT = os.environ["COSMOS_ENDPOINT"]
KEY = os.environ["COSMOS_KEY"]
CONTROL = os.environ["COSMOS_CONTROL"]
MERGE_ENDPOINT = os.environ["COSMOS_MERGE_ENDPOINT"]
ONLY = re.compile(os.environ["SDK_CASES"]) if os.environ.get("SDK_CASES") else None


def connection_policy():
    policy = documents.ConnectionPolicy()
    policy.RequestTimeout = 10000
    # The SDK turns certificate checks off for 127.0.0.1 and localhost
    # unless an SSL configuration names the CA, so name it.
    ssl = documents.SSLConfiguration()
    ssl.SSLCaCerts = os.environ["COSMOS_CA_FILE"]
    policy.SSLConfiguration = ssl
    return policy


def new_client(key=KEY, endpoint=ENDPOINT):
    return recording(cosmos_client.CosmosClient(endpoint, {"masterKey": key}, connection_policy()))


# Every request the clients send (method, URL, headers), recorded below the
# SDK at its requests.Session, so that cases can assert what went on the wire.
SENT = []


def recording(c):
    send = c._requests_session.request

    def _recording_request(method, url, **kwargs):
        SENT.append({"method": method, "url": url, "headers": dict(kwargs.get("headers") or {})})
        return send(method, url, **kwargs)

    c._requests_session.request = _recording_request
    return c


client = new_client()

_seq = [0]


def unique(prefix):
    _seq[0] += 1
    return "%s-%d-%d" % (prefix, os.getpid(), _seq[0])


def control(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(CONTROL + path, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req) as res:
        return json.loads(res.read())


class Container:
    """A container made through the control API, with its links."""

    def __init__(self, ranges=1, pk_path="/pk"):
        self.db = unique("pydb")
        self.id = unique("coll")
        self.info = control("POST", "/control/containers",
                            {"database": self.db, "id": self.id, "partitionKeyPath": pk_path, "ranges": ranges})
        self.link = "dbs/%s/colls/%s" % (self.db, self.id)

    def doc(self, item_id):
        return "%s/docs/%s" % (self.link, item_id)

    def pk_in_range(self, range_id):
        q = urllib.parse.urlencode({"database": self.db, "container": self.id, "range": range_id})
        return control("GET", "/control/partition-key?" + q)["partitionKey"]

    def pk_per_range(self):
        return [self.pk_in_range(r["id"]) for r in self.info["ranges"]]


def expect_status(fn, status, what):
    try:
        fn()
    except errors.HTTPFailure as e:
        if e.status_code != status:
            raise AssertionError("%s: expected %d, got %d: %s" % (what, status, e.status_code, e))
        return e
    raise AssertionError("%s: expected %d, the call succeeded" % (what, status))


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def check_equal(got, want, what):
    if got != want:
        raise AssertionError("%s: got %r, want %r" % (what, got, want))


def ids(docs):
    return sorted(d["id"] for d in docs)


def header(name):
    """A header of the last response, looked up as the SDK itself does:
    in a plain dict, by its lower-case name."""
    return (client.last_response_headers or {}).get(name)


def read_change_feed(link, range_id=None, continuation=None, start_from_beginning=True, page=100, **options):
    """One change feed read the way 3.x applications do it: iterate the
    QueryIterable, then keep the etag of the last response as the
    continuation. Returns (items, etag)."""
    opts = dict(options)
    opts["startFromBeginning"] = start_from_beginning
    opts["maxItemCount"] = page
    if range_id is not None:
        opts["partitionKeyRangeId"] = range_id
    if continuation is not None:
        opts["continuation"] = continuation
    items = list(client.QueryItemsChangeFeed(link, opts))
    return items, header("etag")


# ---- query fixture -------------------------------------------------------

_fixture = []


def query_fixture():
    if _fixture:
        return _fixture[0]
    c = Container(3)
    pks = c.pk_per_range()
    docs = []
    for i in range(12):
        d = {
            "id": "q%02d" % i,
            "pk": pks[i % len(pks)],
            "n": i,
            "status": "open" if i % 3 == 0 else "closed",
            "name": ("alpha-%d" if i % 2 == 0 else "beta-%d") % i,
            "tags": ["red", "blue"] if i % 4 == 0 else ["green"],
            "nested": {"level": i % 5},
        }
        if i % 6 == 0:
            d["optional"] = True
        docs.append(d)
        client.CreateItem(c.link, d)
    c.docs, c.pks = docs, pks
    _fixture.append(c)
    return c


def query(c, q, parameters=None, **options):
    opts = {"enableCrossPartitionQuery": True}
    opts.update(options)
    spec = {"query": q, "parameters": parameters or []}
    return list(client.QueryItems(c.link, spec, opts))


def query_case(name, q, expect, parameters=None, order=None):
    def run():
        c = query_fixture()
        got = query(c, q, parameters)
        want = [d for d in c.docs if expect(d)]
        if order:
            want = order(want)
            check_equal([d["id"] for d in got], [d["id"] for d in want], q)
        else:
            check_equal(ids(got), ids(want), q)
    run.__name__ = name
    return ("query/" + name, run)


# ---- cases ---------------------------------------------------------------

def account_discovery():
    account = client.GetDatabaseAccount()
    check(len(account.WritableLocations) >= 1, "no writable location")
    check_equal(client.WriteEndpoint.rstrip("/"), ENDPOINT.rstrip("/"), "write endpoint")
    check(account.ConsistencyPolicy, "no consistency policy")


def create_read_database_and_container():
    db_id = unique("pycreate")
    db = client.CreateDatabase({"id": db_id})
    check_equal(db["id"], db_id, "created database id")
    check_equal(client.ReadDatabase("dbs/" + db_id)["id"], db_id, "read database id")
    coll = client.CreateContainer("dbs/" + db_id, {"id": "orders", "partitionKey": {"paths": ["/tenant"], "kind": "Hash"}},
                                  {"offerThroughput": 40000})
    check_equal(coll["id"], "orders", "created container id")
    read = client.ReadContainer("dbs/%s/colls/orders" % db_id)
    check_equal(read["partitionKey"]["paths"], ["/tenant"], "partition key paths")
    ranges = list(client._ReadPartitionKeyRanges("dbs/%s/colls/orders" % db_id))
    check_equal(len(ranges), 4, "physical partitions of a 40,000 RU/s container")
    expect_status(lambda: client.CreateDatabase({"id": db_id}), 409, "creating the database twice")
    check(any(d["id"] == db_id for d in client.ReadDatabases()), "ReadDatabases does not list the new database")
    check_equal([c["id"] for c in client.ReadContainers("dbs/" + db_id)], ["orders"], "ReadContainers")


def read_missing_is_404():
    expect_status(lambda: client.ReadDatabase("dbs/" + unique("nodb")), 404, "reading a missing database")
    c = Container()
    expect_status(lambda: client.ReadContainer("dbs/%s/colls/missing" % c.db), 404, "reading a missing container")


def pkranges():
    c = Container(3)
    ranges = list(client._ReadPartitionKeyRanges(c.link))
    check_equal([(r["id"], r["minInclusive"], r["maxExclusive"]) for r in ranges],
                [(r["id"], r["minInclusive"], r["maxExclusive"]) for r in c.info["ranges"]], "pkranges")


def crud_with_etags():
    c = Container()
    created = client.CreateItem(c.link, {"id": "a", "pk": "p1", "v": 1})
    etag1 = created["_etag"]
    check_equal(header("etag"), etag1, "etag header of the create")
    read = client.ReadItem(c.doc("a"), {"partitionKey": "p1"})
    check_equal(read["_etag"], etag1, "etag of the read")
    check_equal(header("etag"), etag1, "etag header of the read")
    replaced = client.ReplaceItem(c.doc("a"), {"id": "a", "pk": "p1", "v": 2},
                                  {"partitionKey": "p1", "accessCondition": {"type": "IfMatch", "condition": etag1}})
    check(replaced["_etag"] != etag1, "replace kept the etag")
    expect_status(lambda: client.ReplaceItem(c.doc("a"), {"id": "a", "pk": "p1", "v": 3},
                                             {"partitionKey": "p1", "accessCondition": {"type": "IfMatch", "condition": etag1}}),
                  412, "replace with a stale etag")
    expect_status(lambda: client.CreateItem(c.link, {"id": "a", "pk": "p1"}), 409, "creating an existing id")
    client.UpsertItem(c.link, {"id": "b", "pk": "p1"})
    check_equal(client.UpsertItem(c.link, {"id": "b", "pk": "p1", "v": 1})["v"], 1, "upserted value")
    expect_status(lambda: client.ReadItem(c.doc("nope"), {"partitionKey": "p1"}), 404, "reading a missing item")
    client.DeleteItem(c.doc("a"), {"partitionKey": "p1"})
    expect_status(lambda: client.DeleteItem(c.doc("a"), {"partitionKey": "p1"}), 404, "deleting a deleted item")


def order_by_single_partition():
    c = query_fixture()
    pk = c.pks[0]
    got = list(client.QueryItems(c.link, "SELECT * FROM c ORDER BY c.name DESC", {"partitionKey": pk}))
    want = sorted((d for d in c.docs if d["pk"] == pk), key=lambda d: d["name"], reverse=True)
    check_equal([d["id"] for d in got], [d["id"] for d in want], "ORDER BY c.name DESC in one partition")


def top():
    c = query_fixture()
    got = query(c, "SELECT TOP 3 * FROM c ORDER BY c.n")
    check_equal([d["n"] for d in got], [0, 1, 2], "TOP 3 ORDER BY c.n")


def value_count():
    c = query_fixture()
    got = query(c, "SELECT VALUE COUNT(1) FROM c WHERE c.status = 'closed'")
    check_equal(got, [len([d for d in c.docs if d["status"] == "closed"])], "COUNT(1)")


def cross_partition_paging():
    c = query_fixture()
    it = client.QueryItems(c.link, "SELECT * FROM c", {"enableCrossPartitionQuery": True, "maxItemCount": 2})
    seen, pages = [], 0
    while True:
        block = it.fetch_next_block()
        if not block:
            break
        check(len(block) <= 2, "a page of %d items with maxItemCount 2" % len(block))
        seen.extend(block)
        pages += 1
        check(pages <= 50, "paging does not end")
    check(pages >= 6, "12 items in pages of 2 came in %d pages" % pages)
    check_equal(ids(seen), ids(c.docs), "items over all pages")


def continuation_resume():
    c = query_fixture()
    pk = c.pks[0]
    want = ids([d for d in c.docs if d["pk"] == pk])
    it = client.QueryItems(c.link, "SELECT * FROM c", {"partitionKey": pk, "maxItemCount": 2})
    first = it.fetch_next_block()
    token = header("x-ms-continuation")
    check(token, "the first page has no x-ms-continuation")
    rest = []
    while True:
        block = it.fetch_next_block()
        if not block:
            break
        rest.extend(block)
    check_equal(ids(first + rest), want, "items over the pages of one query")
    # A new query given the saved token starts over: 3.1.1 honours the
    # 'continuation' option only for change feed reads.
    again = list(client.QueryItems(c.link, "SELECT * FROM c", {"partitionKey": pk, "maxItemCount": 100, "continuation": token}))
    check_equal(ids(again), want, "a new query with continuation (the SDK starts over)")
    return ("3.1.1 ignores a saved 'continuation' option for queries (base_execution_context resets it "
            "unless the query is a change feed); asserted that paging within one query follows "
            "x-ms-continuation and that a new query starts over")


def unsupported_construct():
    c = query_fixture()
    e = expect_status(lambda: query(c, "SELECT c.status, COUNT(1) FROM c GROUP BY c.status"), 400, "a GROUP BY query")
    check("GROUP BY" in str(e).upper(), "the 400 does not name GROUP BY: %s" % e)


def changefeed_whole_container():
    c = Container(3)
    pks = c.pk_per_range()
    for i in range(9):
        client.CreateItem(c.link, {"id": "w%d" % i, "pk": pks[i % 3]})
    items = []
    for r in client._ReadPartitionKeyRanges(c.link):
        got, _ = read_change_feed(c.link, range_id=r["id"], page=2)
        items.extend(got)
    check_equal(ids(items), ["w%d" % i for i in range(9)], "change feed of every range")
    check(all(isinstance(d.get("_lsn"), int) for d in items), "change feed items carry _lsn")
    return ("3.1.1 has no whole-container change feed: the application reads each partition key range "
            "(x-ms-documentdb-partitionkeyrangeid), as its samples do")


def changefeed_per_range():
    c = Container(3)
    pks = c.pk_per_range()
    for i in range(9):
        client.CreateItem(c.link, {"id": "r%d" % i, "pk": pks[i % 3]})
    for n, r in enumerate(c.info["ranges"]):
        got, etag = read_change_feed(c.link, range_id=r["id"], page=2)
        check_equal(sorted({d["pk"] for d in got}), [pks[n]], "partitions in range %s" % r["id"])
        check_equal(len(got), 3, "items in range %s (paging over 2 pages)" % r["id"])
        check(etag, "no etag after reading range %s" % r["id"])


def changefeed_per_partition_key():
    c = Container(2)
    for i in range(6):
        client.CreateItem(c.link, {"id": "k%d" % i, "pk": "odd" if i % 2 else "even"})
    got, _ = read_change_feed(c.link, partitionKey="odd")
    check_equal(ids(got), ["k1", "k3", "k5"], "change feed of partition key 'odd'")


def changefeed_from_now():
    c = Container(1)
    rid = c.info["ranges"][0]["id"]
    client.CreateItem(c.link, {"id": "old", "pk": "p"})
    mark = len(SENT)
    got, _ = read_change_feed(c.link, range_id=rid, start_from_beginning=False)
    sent = [r for r in SENT[mark:] if r["method"] == "GET"]
    check("If-None-Match" not in sent[0]["headers"], "3.1.1 now sends If-None-Match for startFromBeginning=False")
    check_equal(ids(got), ["old"], "startFromBeginning=False (the SDK reads from the beginning)")
    # What an application does instead: the continuation "*" is sent as
    # If-None-Match: *, the service's "from now".
    got, etag = read_change_feed(c.link, range_id=rid, continuation="*")
    check_equal(got, [], "a read with continuation '*' returns nothing written before")
    check(etag, "no etag on the 304 of a read from now")
    client.CreateItem(c.link, {"id": "new", "pk": "p"})
    got, _ = read_change_feed(c.link, range_id=rid, continuation=etag)
    check_equal(ids(got), ["new"], "items after the 'from now' etag")
    return ("3.1.1 never sends If-None-Match: * for startFromBeginning=False (base.GetHeaders tests "
            "options.get('isStartFromBeginning') and ... == False); asserted that it reads from the beginning, "
            "and that continuation '*' gives 'from now'")


def changefeed_resume():
    c = Container(1)
    rid = c.info["ranges"][0]["id"]
    for i in range(4):
        client.CreateItem(c.link, {"id": "a%d" % i, "pk": "p%d" % i})
    got, etag = read_change_feed(c.link, range_id=rid)
    check_equal(len(got), 4, "first read")
    check(etag, "no etag to resume from")
    for i in range(3):
        client.CreateItem(c.link, {"id": "b%d" % i, "pk": "p%d" % i})
    got, _ = read_change_feed(c.link, range_id=rid, continuation=etag)
    check_equal(ids(got), ["b0", "b1", "b2"], "items after the saved etag")


def changefeed_split():
    c = Container(1)
    parent = c.info["ranges"][0]["id"]
    for i in range(6):
        client.CreateItem(c.link, {"id": "s%d" % i, "pk": "p%d" % i})
    _, etag = read_change_feed(c.link, range_id=parent)
    check(etag, "no etag to resume from")
    control("POST", "/control/split", {"database": c.db, "container": c.id, "range": parent})
    for i in range(6):
        client.CreateItem(c.link, {"id": "t%d" % i, "pk": "p%d" % i})
    e = expect_status(lambda: read_change_feed(c.link, range_id=parent, continuation=etag), 410,
                      "reading the split range")
    check_equal(e.sub_status, http_constants.SubStatusCodes.PARTITION_KEY_RANGE_GONE, "substatus of the 410")
    children = [r for r in client._ReadPartitionKeyRanges(c.link) if parent in (r.get("parents") or [])]
    check_equal(len(children), 2, "children of the split range")
    items = []
    for r in children:
        got, _ = read_change_feed(c.link, range_id=r["id"], continuation=etag)
        items.extend(got)
    check_equal(ids(items), ["t%d" % i for i in range(6)], "items after the saved etag, over the children")
    return ("3.1.1 leaves splits to the application: the read of the split range raises 410/1002; "
            "asserted that, then resumed each child range from the saved etag")


def session_round_trip():
    c = Container()
    client.CreateItem(c.link, {"id": "s", "pk": "p"})
    token = header("x-ms-session-token")
    check(token, "the write returned no x-ms-session-token")
    mark = len(SENT)
    client.ReadItem(c.doc("s"), {"partitionKey": "p"})
    sent = [r for r in SENT[mark:] if r["method"] == "GET" and r["url"].rstrip("/").endswith("/docs/s")]
    check(sent, "the read was not seen")
    check_equal(sent[-1]["headers"].get("x-ms-session-token"), token, "session token sent with the read")


def wrong_key_is_401():
    wrong = "bm90IHRoZSBhY2NvdW50IGtleSwgYnV0IGxvbmcgZW5vdWdoIHRvIGJlIG9uZQ=="
    # The constructor's account read does not raise (3.1.1 falls back to
    # the configured endpoint); the first operation does.
    bad = new_client(wrong)
    e = expect_status(lambda: bad.ReadDatabase("dbs/any"), 401, "a request signed with a wrong key")
    text = str(e) + json.dumps(e.headers)
    check(wrong not in text and KEY not in text, "the error echoes a key")


def refused_on_merge_enabled_account():
    # The constructor's account read is refused too; 3.1.1 swallows that
    # (it falls back to the configured endpoint) and the first operation raises.
    merge_client = new_client(endpoint=MERGE_ENDPOINT)
    mark = len(SENT)
    e = expect_status(lambda: list(merge_client.ReadDatabases()), 400, "listing databases on a merge-enabled account")
    check("x-ms-cosmos-sdk-supportedcapabilities" in str(e), "the 400 does not name the capability header: %s" % e)
    expect_status(lambda: merge_client.CreateDatabase({"id": unique("pymerge")}), 400,
                  "creating a database on a merge-enabled account")
    sent = SENT[mark:]
    check(sent, "no request was seen")
    for r in sent:
        check("x-ms-cosmos-sdk-supportedcapabilities" not in {k.lower() for k in r["headers"]},
              "3.1.1 now declares capabilities: %s" % r["headers"])
    return ("3.1.1 declares no capabilities (it sends no x-ms-cosmos-sdk-supportedcapabilities), so an account "
            "with partition merge enabled refuses it, as Microsoft's 'Merge partitions' page says of SDKs "
            "without merge support; asserted the 400 naming the header for its operations and that none of its "
            "requests carried the header")


CASES = [
    ("account/discovery", account_discovery),
    ("resources/create-read-database-and-container", create_read_database_and_container),
    ("resources/read-missing-is-404", read_missing_is_404),
    ("ranges/pkranges", pkranges),
    ("items/crud-with-etags", crud_with_etags),
    query_case("select-all", "SELECT * FROM c", lambda d: True),
    query_case("equals-parameter", "SELECT * FROM c WHERE c.status = @s", lambda d: d["status"] == "open",
               [{"name": "@s", "value": "open"}]),
    query_case("not-equals", "SELECT * FROM c WHERE c.status != 'open'", lambda d: d["status"] != "open"),
    query_case("less-than-number", "SELECT * FROM c WHERE c.n < 4", lambda d: d["n"] < 4),
    query_case("greater-or-equal-parameter", "SELECT * FROM c WHERE c.n >= @min", lambda d: d["n"] >= 9,
               [{"name": "@min", "value": 9}]),
    query_case("nested-path", "SELECT * FROM c WHERE c.nested.level = 2", lambda d: d["nested"]["level"] == 2),
    query_case("and-or-not", "SELECT * FROM c WHERE (c.n > 8 OR c.n < 2) AND NOT (c.status = 'open')",
               lambda d: (d["n"] > 8 or d["n"] < 2) and d["status"] != "open"),
    query_case("startswith", "SELECT * FROM c WHERE STARTSWITH(c.name, @p)", lambda d: d["name"].startswith("alpha"),
               [{"name": "@p", "value": "alpha"}]),
    query_case("endswith", "SELECT * FROM c WHERE ENDSWITH(c.name, '-1')", lambda d: d["name"].endswith("-1")),
    query_case("contains", "SELECT * FROM c WHERE CONTAINS(c.name, 'ta-1')", lambda d: "ta-1" in d["name"]),
    query_case("is-defined", "SELECT * FROM c WHERE IS_DEFINED(c.optional)", lambda d: "optional" in d),
    query_case("array-contains", "SELECT * FROM c WHERE ARRAY_CONTAINS(c.tags, 'red')", lambda d: "red" in d["tags"]),
    query_case("order-by-cross-partition", "SELECT * FROM c ORDER BY c.n", lambda d: True,
               order=lambda ds: sorted(ds, key=lambda d: d["n"])),
    query_case("order-by-desc-cross-partition", "SELECT * FROM c WHERE c.n > 2 ORDER BY c.n DESC", lambda d: d["n"] > 2,
               order=lambda ds: sorted(ds, key=lambda d: d["n"], reverse=True)),
    ("query/order-by-single-partition", order_by_single_partition),
    ("query/top", top),
    ("query/value-count", value_count),
    ("query/cross-partition-paging", cross_partition_paging),
    ("query/continuation-resume", continuation_resume),
    ("query/unsupported-construct-is-400-naming-it", unsupported_construct),
    ("changefeed/whole-container", changefeed_whole_container),
    ("changefeed/per-range", changefeed_per_range),
    ("changefeed/per-partition-key", changefeed_per_partition_key),
    ("changefeed/from-now", changefeed_from_now),
    ("changefeed/resume-from-continuation", changefeed_resume),
    ("changefeed/split-with-saved-continuation", changefeed_split),
    ("merge/refused-on-a-merge-enabled-account", refused_on_merge_enabled_account),
    ("session/token-round-trip", session_round_trip),
    ("auth/wrong-key-is-401-without-the-key", wrong_key_is_401),
]


def main():
    print(json.dumps({"sdk": "azure-cosmos (python3-azure-cosmos)", "version": http_constants.Versions.SDKVersion,
                      "python": sys.version.split()[0]}), flush=True)
    for name, run in CASES:
        if ONLY and not ONLY.search(name):
            continue
        mark = len(SENT)
        try:
            limit = run()
            print(json.dumps({"case": name, "ok": True, "limit": limit or ""}), flush=True)
        except Exception as e:  # every failure is reported, the next case still runs
            trace = ["%s %s" % (r["method"], r["url"].split("/", 3)[-1]) for r in SENT[mark:]][-6:]
            detail = "%s: %s\n  at %s\n  last requests: %s" % (
                type(e).__name__, e, traceback.format_exc().strip().splitlines()[-3].strip(), " | ".join(trace))
            print(json.dumps({"case": name, "ok": False, "detail": detail}), flush=True)
    print(json.dumps({"done": True}), flush=True)


if __name__ == "__main__":
    main()
