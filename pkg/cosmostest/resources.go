package cosmostest

import (
	"errors"
	"net/http"
	"strings"
)

// Handlers for the account, database, container and item endpoints.

func (h *Handler) accountReply() *reply {
	loc := []map[string]any{{"name": "Local", "databaseAccountEndpoint": h.endpoint}}
	return jsonReply(http.StatusOK, chargeMetadata, map[string]any{
		"_self":                        "",
		"id":                           h.cfg.accountName,
		"_rid":                         h.cfg.accountName + ".localhost",
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

func (h *Handler) databaseReply(dbID string) *reply {
	h.acct.mu.Lock()
	defer h.acct.mu.Unlock()
	db, rep := h.databaseLocked(dbID)
	if rep != nil {
		return rep
	}
	return jsonReply(http.StatusOK, chargeMetadata, databaseProperties(db))
}

func databaseProperties(db *Database) map[string]any {
	return map[string]any{
		"id":     db.id,
		"_rid":   db.rid,
		"_self":  "dbs/" + db.rid + "/",
		"_etag":  "\"" + db.rid + "\"",
		"_colls": "colls/",
		"_users": "users/",
		"_ts":    db.ts,
	}
}

func (h *Handler) containerReply(dbID, collID string) *reply {
	return h.inContainer(dbID, collID, containerProperties)
}

func containerProperties(c *Container) *reply {
	return jsonReply(http.StatusOK, chargeMetadata, containerBody(c))
}

func containerBody(c *Container) map[string]any {
	return map[string]any{
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
	}
}

func (h *Handler) createReply(r *http.Request, dbID, collID string) *reply {
	mode := writeCreate
	if strings.EqualFold(headerValue(r.Header, hdrIsUpsert), "true") {
		mode = writeUpsert
	}
	return h.write(r, dbID, collID, "", mode)
}

func (h *Handler) replaceReply(r *http.Request, dbID, collID, itemID string) *reply {
	return h.write(r, dbID, collID, itemID, writeReplace)
}

// write performs a create, upsert or replace sent over REST.
func (h *Handler) write(r *http.Request, dbID, collID, pathID string, mode writeMode) *reply {
	doc, rep := readDocument(r)
	if rep != nil {
		return rep
	}
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
	return h.inContainer(dbID, collID, func(c *Container) *reply {
		return h.writeLocked(r, c, headerEPK, doc, mode)
	})
}

func (h *Handler) writeLocked(r *http.Request, c *Container, headerEPK string, doc map[string]any, mode writeMode) *reply {
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
	case errors.Is(err, errConflict):
		return errorReply(http.StatusConflict, 0, "Conflict", "Entity with the specified id already exists in the system.")
	case errors.Is(err, errNotFound):
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
	out.set(hdrSessionToken, h.acct.sessionTokenLocked(c.rangeForEPKLocked(headerEPK)))
	setContentPaths(out, c)
	return out
}

var systemProperties = []string{"_rid", "_self", "_etag", "_ts", "_attachments", "_lsn"}

// inItem is the preamble of the item handlers: the partition key header,
// the container, and the item, 404 unless it is in that logical partition.
func (h *Handler) inItem(r *http.Request, dbID, collID, itemID string, serve func(c *Container, it *item, epk string) *reply) *reply {
	epk, rep := requirePartitionKey(r)
	if rep != nil {
		return rep
	}
	return h.inContainer(dbID, collID, func(c *Container) *reply {
		it, ok := c.items[itemID]
		if !ok || it.epk != epk {
			return notFound("Entity with the specified id does not exist in the system.")
		}
		return serve(c, it, epk)
	})
}

func (h *Handler) readItemReply(r *http.Request, dbID, collID, itemID string) *reply {
	return h.inItem(r, dbID, collID, itemID, func(c *Container, it *item, epk string) *reply {
		etag := it.doc["_etag"].(string)
		if inm := headerValue(r.Header, "If-None-Match"); inm != "" && inm == etag {
			out := newReply(http.StatusNotModified, chargePointRead)
			out.set(hdrETag, etag)
			setContentPaths(out, c)
			return out
		}
		out := jsonReply(http.StatusOK, chargePointRead, withoutLSN(it.doc))
		out.set(hdrETag, etag)
		out.set(hdrSessionToken, h.acct.sessionTokenLocked(c.rangeForEPKLocked(epk)))
		setContentPaths(out, c)
		return out
	})
}

func (h *Handler) deleteReply(r *http.Request, dbID, collID, itemID string) *reply {
	return h.inItem(r, dbID, collID, itemID, func(c *Container, it *item, epk string) *reply {
		if ifMatch := headerValue(r.Header, "If-Match"); ifMatch != "" && it.doc["_etag"] != ifMatch {
			return errorReply(http.StatusPreconditionFailed, 0, "PreconditionFailed",
				"the operation specified an etag that is different from the version available at the server")
		}
		c.deleteLocked(itemID)
		out := newReply(http.StatusNoContent, chargeWrite)
		out.set(hdrSessionToken, h.acct.sessionTokenLocked(c.rangeForEPKLocked(epk)))
		setContentPaths(out, c)
		return out
	})
}

// setContentPaths names the container that owns a document response, by
// _rid (x-ms-content-path) and by name (x-ms-alt-content-path): the SDKs
// key their session tokens by them, and without them send none back.
func setContentPaths(out *reply, c *Container) {
	out.set(hdrContentPath, c.rid)
	out.set(hdrAltContentPath, c.altPath)
}
