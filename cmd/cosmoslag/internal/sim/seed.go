package sim

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/control"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

// Seed is what an embedded account holds before its first client:
// containers, and change feed processors' leases with a backlog after their
// checkpoints. cosmoslag serve --seed reads one from a YAML file
// (examples/seed.yaml); check --emulator's sample account is one. Each
// container and processor is a control API request (POST
// /control/containers, POST /control/processors: the same fields, the same
// checks), made in-process before the server listens.
type Seed struct {
	Containers []SeedContainer `json:"containers"`
	Processors []SeedProcessor `json:"processors"`
}

// SeedContainer is a container as the control API creates it, and History
// items written to each of its ranges before any processor's leases (their
// changes are not lag).
type SeedContainer struct {
	control.CreateContainerRequest
	History int `json:"history,omitempty"`
}

// SeedProcessor is a processor's leases as the control API writes them
// (with startFromNow, checkpointed at the ranges' current LSNs), then its
// Backlog.
type SeedProcessor struct {
	control.CreateLeasesRequest
	Backlog []SeedBacklog `json:"backlog,omitempty"`
}

// SeedBacklog is what one physical range (its id, "0" to ranges-1) holds
// after the leases are written: Items new items, which are lag when the
// lease was checkpointed, and the lease's Owner ("": none).
type SeedBacklog struct {
	Range string `json:"range"`
	Items int    `json:"items"`
	Owner string `json:"owner,omitempty"`
}

// maxSeedItems bounds the items a seed writes, history and backlogs.
const maxSeedItems = 100_000

// ReadSeed reads a seed file (YAML or JSON); an unknown field is an error.
func ReadSeed(path string) (*Seed, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Seed
	if err := yaml.UnmarshalStrict(raw, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// Apply creates the seed's containers and processors in the server's account.
func (s *Seed) Apply(srv *cosmostest.Server) error {
	items := 0
	for _, c := range s.Containers {
		if c.History < 0 {
			return fmt.Errorf("container %s/%s: history must be 0 or more, got %d", c.Database, c.ID, c.History)
		}
		items += c.History * max(derefOr(c.Ranges, 1), 1)
	}
	for _, p := range s.Processors {
		for _, b := range p.Backlog {
			if b.Items < 0 {
				return fmt.Errorf("processor %q: backlog of range %q: items must be 0 or more, got %d", p.Name, b.Range, b.Items)
			}
			items += b.Items
		}
	}
	if items > maxSeedItems {
		return fmt.Errorf("the seed writes %d items (history and backlogs); at most %d", items, maxSeedItems)
	}
	api := control.NewHandler(srv, io.Discard)
	for _, c := range s.Containers {
		var created control.Container
		if err := call(api, "/control/containers", c.CreateContainerRequest, &created); err != nil {
			return fmt.Errorf("container %s/%s: %w", c.Database, c.ID, err)
		}
		container, _ := srv.Account.Container(c.Database, c.ID)
		for _, r := range created.Ranges {
			if err := container.WriteItemsToRange(r.ID, c.History); err != nil {
				return err
			}
		}
	}
	for _, p := range s.Processors {
		if err := p.apply(api, srv.Account); err != nil {
			return fmt.Errorf("processor %q: %w", p.Name, err)
		}
	}
	return nil
}

// apply writes the processor's leases, then its backlog.
func (p SeedProcessor) apply(api http.Handler, account *cosmostest.Account) error {
	var written control.Leases
	if err := call(api, control.RouteProcessors, p.CreateLeasesRequest, &written); err != nil {
		return err
	}
	monitored, _ := account.Container(p.Database, p.Monitored)
	leases, _ := account.Container(cmp.Or(p.LeaseDatabase, p.Database), p.Leases)
	w := leasetest.NewWriter(p.Name, monitored, leases, cosmostest.LeaseFormat(written.Format))
	if p.AccountHost != "" {
		w.AccountHost = p.AccountHost
	}
	ranges := monitored.Ranges() // the leases' order: a token is its range's id, or its EPK range
	for _, b := range p.Backlog {
		i := slices.IndexFunc(ranges, func(r cosmostest.PartitionKeyRange) bool { return r.ID == b.Range })
		if i < 0 || i >= len(written.Leases) {
			return fmt.Errorf("backlog: range %q is not a physical range of %s/%s (\"0\" to \"%d\")", b.Range, p.Database, p.Monitored, len(ranges)-1)
		}
		if err := monitored.WriteItemsToRange(b.Range, b.Items); err != nil {
			return err
		}
		if b.Owner != "" {
			if err := w.SetOwner(written.Leases[i].Token, b.Owner); err != nil {
				return err
			}
		}
	}
	return nil
}

// call makes one control API request in-process and decodes its answer;
// an error answer is returned as its message.
func call(api http.Handler, route string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, route, bytes.NewReader(body)))
	if rec.Code >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error == "" {
			return fmt.Errorf("HTTP %d", rec.Code)
		}
		return errors.New(e.Error)
	}
	return json.Unmarshal(rec.Body.Bytes(), out)
}

func derefOr(p *int, fallback int) int {
	if p == nil {
		return fallback
	}
	return *p
}
