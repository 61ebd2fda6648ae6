package cosmostest

import (
	"fmt"
	"net/http"
	"testing"
)

// The scaler's scale target: 10,000 leases next to 10,000 other documents.
func BenchmarkLeaseQueryPaging(b *testing.B) {
	s := NewServer()
	defer s.Close()
	c := s.Account.CreateDatabase("db").CreateContainer("leases", "/id", 4)
	for i := 0; i < 10000; i++ {
		if _, err := c.Upsert(map[string]any{"id": fmt.Sprintf("proc..%05d", i)}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Upsert(map[string]any{"id": fmt.Sprintf("other-%05d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cont, n := "", 0
		for {
			resp, raw := query(b, s, "SELECT * FROM c WHERE STARTSWITH(c.id, 'proc..')", nil,
				map[string]string{"x-ms-max-item-count": "1000", "x-ms-continuation": cont})
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
			n += len(docsOf(b, raw))
			if cont = resp.Header.Get("x-ms-continuation"); cont == "" {
				break
			}
		}
		if n != 10000 {
			b.Fatalf("%d leases", n)
		}
	}
}

func BenchmarkChangeFeedReadOneItem(b *testing.B) {
	s := NewServer()
	defer s.Close()
	c := s.Account.CreateDatabase("db").CreateContainer("data", "/pk", 4)
	for r := 0; r < 4; r++ {
		if err := c.WriteItemsToRange(fmt.Sprint(r), 25000); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, _ := changeFeed(b, s, c, fmt.Sprint(i%4), `"20000"`, map[string]string{"x-ms-max-item-count": "1"})
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
