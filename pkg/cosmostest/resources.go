package cosmostest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Handlers for the account, database, container and item endpoints.

func (s *Server) accountReply() *reply {
	loc := []map[string]any{{"name": "Local", "databaseAccountEndpoint": s.url}}
	return jsonReply(http.StatusOK, chargeMetadata, map[string]any{
		"_self":                        "",
		"id":                           s.cfg.accountName,
		"_rid":                         s.cfg.accountName + ".localhost",
		"media":                        "//media/",
		"addresses":                    "//addresses/",
		"_dbs":                         "//dbs/",
		"writableLocations":            loc,
		"readableLocations":            loc,
		"enableMultipleWriteLocations": false,
		"userReplicationPolicy":        map[string]any{"asyncReplication": false, "minReplicaSetSize": 1, "maxReplicasetSize": 4},
		"userConsistencyPolicy":        map[string]any{"defaultConsistencyLevel": "Session"},
		"systemReplicationPolicy":      map[string]any{"minReplicaSetSize": 1, "maxReplicasetSize": 4},
		"readPolicy":                   map[string]any{"primaryReadCoefficient": 1, "secondaryReadCoefficient": 1},
		"queryEngineConfiguration":     `{"maxSqlQueryInputLength":262144,"maxJoinsPerSqlQuery":5}`,
	})
}

func (s *Server) databaseReply(dbID string) *reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	db := s.databaseLocked(dbID)
	if db == nil {
		return notFound("database " + dbID + " does not exist")
	}
	return jsonReply(http.StatusOK, chargeMetadata, map[string]any{
		"id":     db.id,
		"_rid":   db.rid,
		"_self":  "dbs/" + db.rid + "/",
		"_etag":  "\"" + db.rid + "\"",
		"_colls": "colls/",
		"_users": "users/",
		"_ts":    db.ts,
	})
}

func (s *Server) containerReply(dbID, collID string) *reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, rep := s.lookupLocked(dbID, collID)
	if rep != nil {
		return rep
	}
	return jsonReply(http.StatusOK, chargeMetadata, map[string]any{
		"id": c.id,
		"indexingPolicy": map[string]any{
			"indexingMode":  "consistent",
			"automatic":     true,
			"includedPaths": []any{map[string]any{"path": "/*"}},
			"excludedPaths": []any{map[string]any{"path": "/\"_etag\"/?"}},
		},
		"partitionKey": map[string]any{
			"paths":   []string{c.pkRaw},
			"kind":    "Hash",
			"version": 2,
		},
		"conflictResolutionPolicy": map[string]any{
			"mode":                        "LastWriterWins",
			"conflictResolutionPath":      "/_ts",
			"conflictResolutionProcedure": "",
		},
		"geospatialConfig": map[string]any{"type": "Geography"},
		"_rid":             c.rid,
		"_ts":              c.ts,
		"_self":            "dbs/" + c.db.rid + "/colls/" + c.rid + "/",
		"_etag":            "\"" + c.rid + "\"",
		"_docs":            "docs/",
		"_sprocs":          "sprocs/",
		"_triggers":        "triggers/",
		"_udfs":            "udfs/",
		"_conflicts":       "conflicts/",
	})
}

// partitionKeyHeader parses x-ms-documentdb-partitionkey, a JSON array with
// one value; [{}] stands for an undefined (missing) value. ok is false when
// the header is absent.
func partitionKeyHeader(r *http.Request) (value any, ok bool, rep *reply) {
	raw := headerValue(r.Header, keyPartitionKey)
	if raw == "" {
		return nil, false, nil
	}
	var vals []any
	if err := json.Unmarshal([]byte(raw), &vals); err != nil {
		return nil, false, badRequest("the partition key header %q is not a JSON array", raw)
	}
	if len(vals) != 1 {
		return nil, false, badRequest("the partition key header must hold exactly one value for a single-path partition key, got %d", len(vals))
	}
	if m, isMap := vals[0].(map[string]any); isMap && len(m) == 0 {
		return nil, true, nil
	}
	return vals[0], true, nil
}

func requirePartitionKey(r *http.Request) (string, *reply) {
	v, ok, rep := partitionKeyHeader(r)
	if rep != nil {
		return "", rep
	}
	if !ok {
		return "", badRequest("the partition key must be supplied in the %s header for this operation", hdrPartitionKey)
	}
	return epkOf(v), nil
}

func readBody(r *http.Request) ([]byte, *reply) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 2<<20+1))
	if err != nil {
		return nil, badRequest("read request body: %v", err)
	}
	if len(b) > 2<<20 {
		return nil, errorReply(http.StatusRequestEntityTooLarge, 0, "RequestEntityTooLarge", "the request exceeds the 2 MB item size limit")
	}
	return b, nil
}

func decodeDoc(b []byte) (map[string]any, *reply) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return nil, badRequest("the request body is not a JSON object")
	}
	return doc, nil
}

func (s *Server) createReply(r *http.Request, dbID, collID string) *reply {
	body, rep := readBody(r)
	if rep != nil {
		return rep
	}
	doc, rep := decodeDoc(body)
	if rep != nil {
		return rep
	}
	mode := writeCreate
	if strings.EqualFold(headerValue(r.Header, hdrIsUpsert), "true") {
		mode = writeUpsert
	}
	return s.write(r, dbID, collID, "", doc, mode)
}

func (s *Server) replaceReply(r *http.Request, dbID, collID, itemID string) *reply {
	body, rep := readBody(r)
	if rep != nil {
		return rep
	}
	doc, rep := decodeDoc(body)
	if rep != nil {
		return rep
	}
	return s.write(r, dbID, collID, itemID, doc, writeReplace)
}

// write performs a create, upsert or replace sent over REST.
func (s *Server) write(r *http.Request, dbID, collID, pathID string, doc map[string]any, mode writeMode) *reply {
	headerEPK, rep := requirePartitionKey(r)
	if rep != nil {
		return rep
	}
	if pathID != "" && doc["id"] != pathID {
		return badRequest("the id in the body (%v) does not match the id in the path (%s)", doc["id"], pathID)
	}
	for _, k := range systemProperties {
		delete(doc, k) // the server sets these; clients echo them back on replace
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, rep := s.lookupLocked(dbID, collID)
	if rep != nil {
		return rep
	}
	if epkOf(getPath(doc, c.pkPath)) != headerEPK {
		return badRequest("%v", errPKMismatch)
	}
	id, _ := doc["id"].(string)
	old, existed := c.items[id]
	if ifMatch := headerValue(r.Header, "If-Match"); ifMatch != "" && mode != writeCreate {
		if !existed || old.doc["_etag"] != ifMatch {
			if mode == writeReplace && !existed {
				return notFound("item " + id + " does not exist")
			}
			return errorReply(http.StatusPreconditionFailed, 0, "PreconditionFailed",
				"the operation specified an etag that is different from the version available at the server")
		}
	}
	stored, err := c.writeLocked(doc, mode)
	switch {
	case errors.Is(err, ErrConflict):
		return errorReply(http.StatusConflict, 0, "Conflict", "Entity with the specified id already exists in the system.")
	case errors.Is(err, ErrNotFound):
		return notFound("item " + id + " does not exist")
	case err != nil:
		return badRequest("%v", err)
	}
	status := http.StatusOK
	if !existed {
		status = http.StatusCreated
	}
	var out *reply
	if strings.EqualFold(headerValue(r.Header, hdrPrefer), "return=minimal") {
		out = newReply(status, chargeWrite)
	} else {
		out = jsonReply(status, chargeWrite, withoutLSN(stored))
	}
	out.set(hdrETag, stored["_etag"].(string))
	out.set(hdrSessionToken, s.sessionTokenLocked(c.rangeForEPKLocked(headerEPK)))
	return out
}

var systemProperties = []string{"_rid", "_self", "_etag", "_ts", "_attachments", "_lsn"}

func (s *Server) readItemReply(r *http.Request, dbID, collID, itemID string) *reply {
	epk, rep := requirePartitionKey(r)
	if rep != nil {
		return rep
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, rep := s.lookupLocked(dbID, collID)
	if rep != nil {
		return rep
	}
	it, ok := c.items[itemID]
	if !ok || it.epk != epk {
		return notFound("Entity with the specified id does not exist in the system.")
	}
	etag := it.doc["_etag"].(string)
	if inm := headerValue(r.Header, "If-None-Match"); inm != "" && inm == etag {
		out := newReply(http.StatusNotModified, chargePointRead)
		out.set(hdrETag, etag)
		return out
	}
	out := jsonReply(http.StatusOK, chargePointRead, withoutLSN(it.doc))
	out.set(hdrETag, etag)
	out.set(hdrSessionToken, s.sessionTokenLocked(c.rangeForEPKLocked(epk)))
	return out
}

func (s *Server) deleteReply(r *http.Request, dbID, collID, itemID string) *reply {
	epk, rep := requirePartitionKey(r)
	if rep != nil {
		return rep
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, rep := s.lookupLocked(dbID, collID)
	if rep != nil {
		return rep
	}
	it, ok := c.items[itemID]
	if !ok || it.epk != epk {
		return notFound("Entity with the specified id does not exist in the system.")
	}
	if ifMatch := headerValue(r.Header, "If-Match"); ifMatch != "" && it.doc["_etag"] != ifMatch {
		return errorReply(http.StatusPreconditionFailed, 0, "PreconditionFailed",
			"the operation specified an etag that is different from the version available at the server")
	}
	c.deleteLocked(itemID)
	out := newReply(http.StatusNoContent, chargeWrite)
	out.set(hdrSessionToken, s.sessionTokenLocked(c.rangeForEPKLocked(epk)))
	return out
}

// maxItemCount reads x-ms-max-item-count: absent or -1 means the default page
// size of 100; explicit values are honoured up to 1000.
func maxItemCount(r *http.Request) (int, *reply) {
	raw := headerValue(r.Header, keyMaxItemCount)
	if raw == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(raw)
	switch {
	case err != nil:
		return 0, badRequest("invalid value %q for %s", raw, hdrMaxItemCount)
	case n == -1:
		return 100, nil
	case n < 1:
		return 0, badRequest("invalid value %d for %s: it must be positive or -1", n, hdrMaxItemCount)
	case n > 1000:
		return 1000, nil
	}
	return n, nil
}
