package lease

import (
	"context"
	"net/http"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/account"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/rest"
)

// ReadScope reads the monitored database's and container's resource ids
// from the data account: leases name the container by RID, so they are what
// a lease id is matched against.
func ReadScope(ctx context.Context, data *rest.Client, processor, database, container string) (Scope, error) {
	s := Scope{Processor: processor, Account: data.Account().Name(), DatabaseID: database, ContainerID: container}
	var err error
	if s.DatabaseRID, err = readRID(ctx, data, "read database "+account.Excerpt(database), "dbs", database); err != nil {
		return Scope{}, err
	}
	if s.ContainerRID, err = readRID(ctx, data, "read container "+account.Excerpt(database)+"/"+account.Excerpt(container), "dbs", database, "colls", container); err != nil {
		return Scope{}, err
	}
	return s, nil
}

func readRID(ctx context.Context, c *rest.Client, operation string, segments ...string) (string, error) {
	req, err := c.NewRequest(ctx, http.MethodGet, c.Resource(segments...))
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req, operation, http.StatusOK)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close() // DecodeJSON closes it too; closing twice is harmless
	var props struct {
		RID string `json:"_rid"`
	}
	if err := rest.DecodeJSON(resp, operation, &props); err != nil {
		return "", err
	}
	if props.RID == "" {
		return "", &rest.ResponseError{Operation: operation, StatusCode: resp.StatusCode, Message: "response has no _rid"}
	}
	return props.RID, nil
}
