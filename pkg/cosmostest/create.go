package cosmostest

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// Creating and listing databases and containers over REST (POST and GET of
// /dbs and /dbs/{db}/colls), as the SDKs' create, createIfNotExists and
// readAll do.

const (
	// throughputPerPartition is about what one physical partition of the
	// service serves; a container created with more throughput starts with
	// ceil(throughput / throughputPerPartition) partitions.
	throughputPerPartition = 10000
	// maxCreatedRanges bounds the partitions of a container created over
	// REST (the control API of cosmoslag serve allows as many).
	maxCreatedRanges = 1024
)

func (h *Handler) createDatabaseReply(r *http.Request) *reply {
	var body struct {
		ID string `json:"id"`
	}
	if rep := decodeResource(r, &body); rep != nil {
		return rep
	}
	if rep := checkResourceID(body.ID); rep != nil {
		return rep
	}
	h.acct.mu.Lock()
	defer h.acct.mu.Unlock()
	if _, exists := h.acct.dbs[body.ID]; exists {
		return conflict("Resource with specified id or name already exists.")
	}
	return jsonReply(http.StatusCreated, chargeMetadata, databaseProperties(h.acct.createDatabaseLocked(body.ID)))
}

func (h *Handler) createContainerReply(r *http.Request, dbID string) *reply {
	var body struct {
		ID           string `json:"id"`
		PartitionKey *struct {
			Paths []string `json:"paths"`
			Kind  string   `json:"kind"`
		} `json:"partitionKey"`
	}
	if rep := decodeResource(r, &body); rep != nil {
		return rep
	}
	if rep := checkResourceID(body.ID); rep != nil {
		return rep
	}
	switch {
	case body.PartitionKey == nil || len(body.PartitionKey.Paths) == 0:
		return badRequest("the container needs a partitionKey with one path (this server models partitioned containers only)")
	case len(body.PartitionKey.Paths) > 1 || strings.EqualFold(body.PartitionKey.Kind, "MultiHash"):
		return badRequest("hierarchical partition keys are not supported by this server: give one path")
	case body.PartitionKey.Kind != "" && !strings.EqualFold(body.PartitionKey.Kind, "Hash"):
		return badRequest("partition key kind %q is not supported: use Hash", body.PartitionKey.Kind)
	}
	path := body.PartitionKey.Paths[0]
	if !strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") || strings.Contains(path, "//") {
		return badRequest("the partition key path must look like /pk or /a/b, got %q", path)
	}
	ranges, rep := rangesForThroughput(r)
	if rep != nil {
		return rep
	}
	h.acct.mu.Lock()
	defer h.acct.mu.Unlock()
	db, rep := h.databaseLocked(dbID)
	if rep != nil {
		return rep
	}
	if _, exists := byIDOrRID(db.containers, db.order, body.ID); exists {
		return conflict("Resource with specified id or name already exists.")
	}
	return jsonReply(http.StatusCreated, chargeMetadata, containerBody(db.createContainerLocked(body.ID, path, ranges)))
}

// rangesForThroughput is the number of physical partitions the service
// gives a container of the requested throughput: x-ms-offer-throughput
// (manual) or the autoscale maximum, about 10,000 RU/s each, at least one.
func rangesForThroughput(r *http.Request) (int, *reply) {
	throughput := 0
	if v := headerValue(r.Header, hdrOfferThroughput); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 400 {
			return 0, badRequest("x-ms-offer-throughput must be a whole number of RU/s, at least 400, got %q", v)
		}
		throughput = n
	}
	if v := headerValue(r.Header, hdrAutopilotSettings); v != "" {
		var autoscale struct {
			MaxThroughput int `json:"maxThroughput"`
		}
		if err := json.Unmarshal([]byte(v), &autoscale); err != nil || autoscale.MaxThroughput < 1000 {
			return 0, badRequest("x-ms-cosmos-offer-autopilot-settings must be {\"maxThroughput\": N} with N at least 1000, got %q", v)
		}
		throughput = autoscale.MaxThroughput
	}
	ranges := int(math.Ceil(float64(throughput) / throughputPerPartition))
	return min(max(ranges, 1), maxCreatedRanges), nil
}

func decodeResource(r *http.Request, v any) *reply {
	body, rep := readBody(r)
	if rep != nil {
		return rep
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("the request body is not a valid resource: %v", err)
	}
	return nil
}

// checkResourceID applies the service's rules for ids: required, at most
// 255 characters, none of / \ ? #.
func checkResourceID(id string) *reply {
	switch {
	case id == "":
		return badRequest("the resource needs an id")
	case len(id) > 255:
		return badRequest("the id is longer than 255 characters")
	case strings.ContainsAny(id, `/\?#`):
		return badRequest("the id %q contains one of the characters / \\ ? #", id)
	case strings.TrimSpace(id) != id:
		return badRequest("the id %q ends or starts with a space", id)
	}
	return nil
}

func conflict(message string) *reply {
	return errorReply(http.StatusConflict, 0, "Conflict", message)
}

func (h *Handler) listDatabasesReply() *reply {
	h.acct.mu.Lock()
	defer h.acct.mu.Unlock()
	list := make([]map[string]any, len(h.acct.dbOrder))
	for i, db := range h.acct.dbOrder {
		list[i] = databaseProperties(db)
	}
	out := jsonReply(http.StatusOK, chargeMetadata, map[string]any{"_rid": "", "Databases": list, "_count": len(list)})
	out.set(hdrItemCount, strconv.Itoa(len(list)))
	return out
}

func (h *Handler) listContainersReply(dbID string) *reply {
	h.acct.mu.Lock()
	defer h.acct.mu.Unlock()
	db, rep := h.databaseLocked(dbID)
	if rep != nil {
		return rep
	}
	list := make([]map[string]any, len(db.order))
	for i, c := range db.order {
		list[i] = containerBody(c)
	}
	out := jsonReply(http.StatusOK, chargeMetadata, map[string]any{"_rid": db.rid, "DocumentCollections": list, "_count": len(list)})
	out.set(hdrItemCount, strconv.Itoa(len(list)))
	return out
}
